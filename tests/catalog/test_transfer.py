"""Push and pull between a local home and a real S3 server (SeaweedFS): only what is missing moves."""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import stable_explore as se
from stable_explore.catalog import StoreCatalog, copy_version, transfer
from stable_explore.catalog.transfer import COPY_THREADS
from stable_explore.storage.backends.object import ObjectStore
from stable_explore.storage.format.version_files import version_files

if TYPE_CHECKING:
    from tests.s3server import S3Server

pytest.importorskip("obstore")
_prefixes = itertools.count()


@pytest.fixture
def bucket(s3_env: S3Server) -> str:
    return f"s3://team/cache-{next(_prefixes)}"


def _pets(home: Path, jpegs: list[bytes], n: int = 1200) -> se.CachedDataset:
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["cat", "dog"]))
    rows = [(f"pet-{i:05d}", {"image": jpegs[i % len(jpegs)], "label": i % 2}) for i in range(n)]
    return se.build(rows, features, name="pets", shard_size="64KB", batch_size=100, home=home, progress=False)


def _files(ds: se.CachedDataset) -> int:
    """Files a version has: its shards and the small files beside them (batch digests, content runs)."""
    return len(version_files(ds.cache_meta.raw or {}))


def _bytes(ds: se.CachedDataset) -> int:
    return sum(f.size or 0 for f in version_files(ds.cache_meta.raw or {}))


def test_push_then_pull_into_an_empty_home(tmp_path: Path, bucket: str, jpegs: list[bytes]) -> None:
    mine = _pets(tmp_path / "mine", jpegs)
    se.tag(mine, "raw")
    report = se.push(mine, bucket, progress=False)
    assert report.files_sent == _files(mine)
    assert report.bytes_sent == _bytes(mine)
    assert sorted(report.tags) == ["latest", "raw"]
    theirs = se.pull(f"{bucket}/pets@raw", home=tmp_path / "theirs", progress=False)
    assert theirs.version == mine.version
    assert theirs.keys() == mine.keys()
    assert se.load("pets@raw", home=tmp_path / "theirs").version == mine.version
    again = se.push(mine, bucket, progress=False)
    assert again.existed
    assert again.files_sent == 0


def test_pushing_a_relabel_uploads_only_the_changed_shard(tmp_path: Path, bucket: str, jpegs: list[bytes]) -> None:
    raw = _pets(tmp_path / "mine", jpegs)
    se.push(raw, bucket, progress=False)
    clean = raw.relabel({2: "dog"}).save(message="fix 2", progress=False)
    report = se.push(clean, bucket, progress=False)
    assert report.files_reused == _files(clean) - report.files_sent
    assert report.files_sent <= 4  # the rewritten rows' shard and its batch digests (and at most one more pair)
    assert report.bytes_sent < raw.nbytes / 2
    remote = StoreCatalog(ObjectStore(bucket))
    assert remote.read_ref("pets", "latest") == clean.version
    pulled = se.pull(f"{bucket}/pets", home=tmp_path / "theirs", progress=False)
    assert pulled.version == clean.version
    assert pulled.label_counts() == clean.label_counts()


def test_an_interrupted_push_resumes_and_sends_only_the_rest(
    tmp_path: Path, bucket: str, jpegs: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = _pets(tmp_path / "mine", jpegs)
    assert mine.num_shards >= 3
    sent: list[int] = []
    started = itertools.count(1)
    real_send = transfer._send
    cancelled = threading.Event()

    class PoolSayingWhenItCancelled(ThreadPoolExecutor):
        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            super().shutdown(wait=False, cancel_futures=cancel_futures)
            cancelled.set()
            super().shutdown(wait=wait)

    def held_after_two(*args: Any, **kwargs: Any) -> None:
        # Files past the second wait until the interrupt has cancelled the files not started: on a busy
        # machine the workers had otherwise sent all 25 before the main thread heard the second had landed.
        if next(started) > 2:
            cancelled.wait(60)
        real_send(*args, **kwargs)

    def stop_after_two(nbytes: int) -> None:
        sent.append(nbytes)
        if len(sent) == 2:
            raise KeyboardInterrupt

    source = se.catalog.Catalog(tmp_path / "mine")
    target = StoreCatalog(ObjectStore(bucket))
    with monkeypatch.context() as patched:
        patched.setattr(transfer, "ThreadPoolExecutor", PoolSayingWhenItCancelled)
        patched.setattr(transfer, "_send", held_after_two)
        with pytest.raises(KeyboardInterrupt):
            copy_version(source, "pets", mine.version, target, on_file=stop_after_two)
    assert target.version_ids("pets") == [], "no version is visible before its metadata"
    report = se.push(mine, bucket, progress=False)
    # files already uploading when the interrupt came finish (each lands whole) and are kept too;
    # the ones not started were cancelled
    assert 2 <= report.files_kept <= 2 + COPY_THREADS < _files(mine)
    assert report.files_sent == _files(mine) - report.files_kept
    assert se.pull(f"{bucket}/pets", home=tmp_path / "theirs", progress=False).version == mine.version


def test_a_damaged_copy_is_caught_when_pulled(tmp_path: Path, bucket: str, jpegs: list[bytes]) -> None:
    mine = _pets(tmp_path / "mine", jpegs, n=200)
    se.push(mine, bucket, progress=False)
    store = ObjectStore(bucket)
    key = f"pets/versions/{mine.version}/shard-00000.arrow"
    local = tmp_path / "shard.arrow"
    store.get_file(key, local)
    data = bytearray(local.read_bytes())
    data[len(data) // 2] ^= 0xFF
    local.write_bytes(bytes(data))
    store.put_file(key, local)
    with pytest.raises(se.CacheCorruptionError, match="does not match the recorded") as caught:
        se.pull(f"{bucket}/pets", home=tmp_path / "theirs", progress=False)
    assert key in str(caught.value)
    assert not (tmp_path / "theirs" / key).exists(), "a shard that fails its digest is not kept for a resume"
    assert se.catalog.Catalog(tmp_path / "theirs").version_ids("pets") == []


def test_a_pull_downloads_shards_concurrently_checks_each_and_counts_every_byte(
    tmp_path: Path, bucket: str, jpegs: list[bytes]
) -> None:
    mine = _pets(tmp_path / "mine", jpegs)
    assert mine.num_shards > COPY_THREADS
    se.push(mine, bucket, progress=False)
    progressed: list[int] = []
    theirs = se.catalog.Catalog(tmp_path / "theirs")
    report = copy_version(
        StoreCatalog(ObjectStore(bucket)), "pets", mine.version, theirs, on_file=progressed.append, verify=True
    )
    assert report.files_sent == _files(mine)
    assert sum(progressed) == report.bytes_sent == _bytes(mine)
    for path in sorted(mine.cache_dir.glob("shard-*.arrow")):
        pulled = tmp_path / "theirs" / "pets" / "versions" / mine.version / path.name
        assert pulled.read_bytes() == path.read_bytes()
    assert se.load("pets", home=tmp_path / "theirs").verify().num_rows == len(mine)


def test_a_damaged_file_left_by_an_interrupted_pull_is_caught_and_replaced(
    tmp_path: Path, bucket: str, jpegs: list[bytes]
) -> None:
    mine = _pets(tmp_path / "mine", jpegs, n=300)
    se.push(mine, bucket, progress=False)
    first = sorted(mine.cache_dir.glob("shard-*.arrow"))[0]
    left = tmp_path / "theirs" / "pets" / "versions" / mine.version / first.name
    left.parent.mkdir(parents=True)
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: an interrupted copy's file would be kept as it is
    left.write_bytes(bytes(data))
    with pytest.raises(se.CacheCorruptionError, match="does not match the recorded"):
        se.pull(f"{bucket}/pets", home=tmp_path / "theirs", progress=False)
    assert not left.exists()
    pulled = se.pull(f"{bucket}/pets", home=tmp_path / "theirs", progress=False)
    assert pulled.version == mine.version
    assert left.read_bytes() == first.read_bytes()


def test_pull_names_what_exists_when_the_ref_is_wrong(tmp_path: Path, bucket: str, jpegs: list[bytes]) -> None:
    se.push(_pets(tmp_path / "mine", jpegs, n=50), bucket, progress=False)
    with pytest.raises(se.CacheNotFoundError, match=r"pets has no version or tag 'nope'.*tags: \['latest'\]"):
        se.pull(f"{bucket}/pets@nope", home=tmp_path / "theirs", progress=False)
    with pytest.raises(se.InvalidNameError, match="expected HOME/NAME"):
        se.pull("pets@raw", home=tmp_path / "theirs", progress=False)


def test_a_folder_home_is_pulled_from_by_its_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A home is a bucket or a folder (README): pull takes FOLDER/NAME[@VERSION] as push takes a folder."""
    from stable_explore.cli import main

    team = se.build(
        [{"x": 1}, {"x": 2}],
        se.Features(x=se.Value("int64")),
        name="n",
        home=tmp_path / "team",
        progress=False,
        tag="raw",
    )
    pulled = se.pull(f"{tmp_path / 'team'}/n@raw", home=tmp_path / "mine", progress=False)
    assert (pulled.version, pulled.cache_dir.parents[2]) == (team.version, tmp_path / "mine")
    assert main(["--home", str(tmp_path / "cli"), "pull", str(tmp_path / "team" / "n"), "-q"]) == 0
    assert f"pulled CachedDataset(n@{team.version}" in capsys.readouterr().out


def test_the_command_line_pushes_and_pulls(
    tmp_path: Path, bucket: str, jpegs: list[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    from stable_explore.cli import main

    mine = _pets(tmp_path / "mine", jpegs, n=300)
    assert main(["--home", str(tmp_path / "mine"), "push", "pets", bucket, "-q"]) == 0
    assert f"pets@{mine.version} -> {bucket}: sent {_files(mine)} file(s)" in capsys.readouterr().out
    assert main(["--home", str(tmp_path / "theirs"), "pull", f"{bucket}/pets", "-q"]) == 0
    assert f"pulled CachedDataset(pets@{mine.version}" in capsys.readouterr().out
    assert main(["--home", str(tmp_path / "theirs"), "pull", f"{bucket}/nothing", "-q"]) == 1
    assert "stable-explore pull: no dataset named 'nothing'" in capsys.readouterr().err
