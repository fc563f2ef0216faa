"""A bucket's version opens without fetching its small files; a read fetches those of the shards it touches.

Format revision 4 keeps each shard's record batch digests in ``shard-NNNNN.batches`` beside
``_metadata.json`` (and the content runs in ``content-runs.json``). On a bucket (a real SeaweedFS on
loopback) ``se.load`` fetches the metadata only; the first read of a shard fetches that shard's file,
checks it against the digest the metadata records, and keeps it in this machine's mirror.
"""

from __future__ import annotations

import pickle
import shutil
import threading
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.backends.object import ObjectStore
from stable_explore.storage.backends.read_cache import CACHE_ENV
from stable_explore.storage.backends.remote_file import FETCHED
from stable_explore.storage.kept import forget

pytest.importorskip("obstore")
ROWS = 1200


def _features() -> se.Features:
    return se.Features(image=se.Image(), label=se.ClassLabel(names=["cat", "dog"]))


def _rows(jpegs: list[bytes]) -> list[tuple[str, dict[str, object]]]:
    return [(f"pet-{i:05d}", {"image": jpegs[i % len(jpegs)], "label": i % 2}) for i in range(ROWS)]


def _build(bucket: str, jpegs: list[bytes]) -> se.CachedDataset:
    ds = se.build(_rows(jpegs), _features(), name="pets", shard_size="16KB", batch_size=50, home=bucket, progress=False)
    assert ds.num_shards >= 8, ds.num_shards
    return ds


def _fresh_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A new read cache and mirror, no checks remembered: a process on a machine that never read this version."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / name))
    forget()
    FETCHED.reset()


def _batches_key(ds: se.CachedDataset, shard: int) -> str:
    name = ds.cache_meta.shard_filenames[shard].removesuffix(".arrow") + ".batches"
    return f"pets/versions/{ds.version}/{name}"


def _shard_and_row(ds: se.CachedDataset, shard: int) -> int:
    """The first row of the version that lives in ``shard``."""
    return sum(ds.cache_meta.shard_row_counts[:shard])


def test_opening_fetches_no_small_file_and_a_row_fetches_its_shards_only(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(bucket, jpegs)
    shard = ds.num_shards // 2
    row = _shard_and_row(ds, shard) + 1
    _fresh_machine(tmp_path, monkeypatch, "cold")

    loaded = se.load(f"{bucket}/pets")
    assert FETCHED.small_files == [], "opening a bucket's version fetches its metadata only"
    mirror = loaded.cache_meta.cache_dir
    assert sorted(p.name for p in mirror.glob("*.batches")) == []

    assert loaded[row]["label"] == row % 2
    assert FETCHED.small_files == [_batches_key(ds, shard)]
    assert [p.name for p in mirror.glob("*.batches")] == [Path(_batches_key(ds, shard)).name]

    # kept in the mirror: a new handle on this machine fetches it no more
    forget()
    FETCHED.reset()
    assert se.load(f"{bucket}/pets")[row]["label"] == row % 2
    assert FETCHED.small_files == []

    # whole-version reads still see every row, fetching every shard's digests once
    _fresh_machine(tmp_path, monkeypatch, "whole")
    again = se.load(f"{bucket}/pets")
    assert again.to_pandas(images="bytes")["label"].value_counts().to_dict() == {"cat": ROWS // 2, "dog": ROWS // 2}
    assert sorted(FETCHED.small_files) == sorted(_batches_key(ds, s) for s in range(ds.num_shards))


def test_a_damaged_small_file_is_named_by_the_first_read_of_its_shard(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(bucket, jpegs)
    damaged, other = 2, ds.num_shards - 1
    store = ObjectStore(bucket)
    key = _batches_key(ds, damaged)
    text = store.read_text(key)
    assert text is not None
    at = text.index('"digests":["') + len('"digests":["')
    flipped = "0" if text[at] != "0" else "1"
    store.write_text(key, text[:at] + flipped + text[at + 1 :])  # same size, one hex digit of a digest changed
    _fresh_machine(tmp_path, monkeypatch, "cold")

    loaded = se.load(f"{bucket}/pets")  # opens: the damaged file is not read yet
    other_row = _shard_and_row(ds, other)
    assert loaded[other_row]["label"] == other_row % 2, "a read of other shards works"
    with pytest.raises(CacheCorruptionError) as caught:
        loaded[_shard_and_row(ds, damaged) + 3]
    message = str(caught.value)
    assert f"{bucket}/{key}" in message, message
    assert "do not match" in message
    mirror = loaded.cache_meta.cache_dir
    assert not (mirror / Path(key).name).exists(), "damaged bytes are not kept in the mirror"
    with pytest.raises(CacheCorruptionError, match="do not match"):  # every later read says so too
        loaded[_shard_and_row(ds, damaged)]
    assert loaded[other_row + 1]["label"] == (other_row + 1) % 2


def test_a_small_file_missing_from_the_bucket_is_named(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(bucket, jpegs)
    key = _batches_key(ds, 1)
    ObjectStore(bucket).delete(key)
    _fresh_machine(tmp_path, monkeypatch, "cold")
    loaded = se.load(f"{bucket}/pets")
    assert loaded[0]["label"] == 0
    with pytest.raises(CacheCorruptionError, match="missing from the bucket") as caught:
        loaded[_shard_and_row(ds, 1)]
    assert f"{bucket}/{key}" in str(caught.value)


def test_a_damaged_mirror_copy_is_fetched_again_from_the_bucket(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(bucket, jpegs)
    _fresh_machine(tmp_path, monkeypatch, "cold")
    loaded = se.load(f"{bucket}/pets")
    assert loaded[0]["label"] == 0
    copy = loaded.cache_meta.cache_dir / Path(_batches_key(ds, 0)).name
    good = copy.read_bytes()
    copy.write_bytes(good[:-1] + (b"]" if good[-1:] != b"]" else b"}"))  # this machine's copy damaged
    forget()
    FETCHED.reset()
    assert se.load(f"{bucket}/pets")[1]["label"] == 1
    assert FETCHED.small_files == [_batches_key(ds, 0)]
    assert copy.read_bytes() == good


def test_threads_reading_one_shard_at_once_fetch_its_small_file_once(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(bucket, jpegs)
    shards = [1, 3]
    _fresh_machine(tmp_path, monkeypatch, "cold")
    loaded = se.load(f"{bucket}/pets")
    start = threading.Barrier(8)
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def read(worker: int) -> None:
        shard = shards[worker % 2]
        rows = [_shard_and_row(ds, shard) + i for i in range(3)]
        start.wait()
        try:
            results[worker] = [loaded[r]["label"] for r in rows]
        except BaseException as exc:  # reported below, with the worker
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for worker, labels in results.items():
        first = _shard_and_row(ds, shards[worker % 2])
        assert labels == [(first + i) % 2 for i in range(3)]
    assert sorted(FETCHED.small_files) == sorted(_batches_key(ds, s) for s in shards), "one request per file"


def test_a_pickled_digest_list_of_a_bucket_version_fetches_when_read_not_when_pickled(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(bucket, jpegs)
    _fresh_machine(tmp_path, monkeypatch, "cold")
    digests = se.load(f"{bucket}/pets").cache_meta.batch_digests
    assert digests is not None
    first = digests[0]
    payload = pickle.dumps(digests)
    assert FETCHED.small_files == [_batches_key(ds, 0)], "pickling fetches nothing more"
    shutil.rmtree(digests.directory)  # as on a machine without this mirror
    copy = pickle.loads(payload)
    assert copy[0] == first
    assert copy[3] is not None
    assert sum(copy[3].rows) == ds.cache_meta.shard_row_counts[3]
    assert FETCHED.small_files == [_batches_key(ds, 0), _batches_key(ds, 3)]
