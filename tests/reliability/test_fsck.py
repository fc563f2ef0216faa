"""``se.fsck`` and ``stable-explore fsck``: one line per problem naming the file, exit status, MB/s."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import CacheNotFoundError, Features, Value
from tests.reliability.trials import edit_metadata, flip_byte

ROOT = Path(__file__).resolve().parents[2]
F = Features(x=Value("int64"), s=Value("string"))


def rows(n: int, offset: int = 0):
    for i in range(n):
        yield {"x": i + offset, "s": f"r{i}"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    se.build(rows, F, args=(3000,), name="a", home=home, progress=False, batch_size=500)
    se.build(rows, F, args=(2000, 7), name="a", home=home, progress=False, batch_size=500)
    se.build(rows, F, args=(100,), name="b", home=home, progress=False)
    return home


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "stable_explore.cli", "--home", str(home), "fsck", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def test_a_healthy_catalog_passes_and_reports_its_speed(home: Path) -> None:
    report = se.fsck(home=home)
    assert report.ok, str(report)
    assert (report.datasets, report.versions) == (2, 3)
    assert report.batches == 6 + 4 + 1
    assert report.mb_per_s > 0
    assert str(report).startswith("no problems: 2 dataset(s), 3 version(s)")
    rate = re.search(r"checked in [\d.]+ s \(([\d.]+) (B|KiB|MiB|GiB)/s\)", str(report))
    assert rate is not None, str(report)
    assert float(rate.group(1)) > 0  # a small catalog's rate is in KiB/s, never "(0 MB/s)"
    result = _cli(home)
    assert result.returncode == 0, result.stderr
    assert "no problems" in result.stdout


def test_every_problem_is_one_line_naming_its_file(home: Path) -> None:
    latest = se.load("a", home=home)
    shard = latest.cache_meta.shard_paths[0]
    flip_byte(shard, shard.stat().st_size // 2)
    (home / "a" / "refs" / "broken").write_bytes(b"\xff\xfe\x00")
    (home / "a" / "refs" / "nowhere").write_text("0123456789abcdef\n")
    (home / "a" / "sources" / "feedfacefeedface").write_text("fedcba9876543210\n")
    (home / "b" / "versions" / "abcdefabcdefabcd").mkdir()  # a version dir without metadata
    b = se.load("b", home=home)
    edit_metadata(b.cache_dir, lambda raw: raw.update(description="forged"))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leftover = home / "a" / "versions" / f".staging.tmp-{os.uname().nodename}-{dead.stdout.strip()}-0a1b2c3d"
    leftover.mkdir()

    report = se.fsck(home=home)
    lines = str(report).splitlines()
    assert len(lines) == len(report.problems) + 1
    text = "\n".join(lines)
    assert f"{shard}: content digest" in text
    assert f"{shard}: record batch" in text
    assert f"{home / 'a' / 'refs' / 'broken'}: the ref is not UTF-8 text" in text
    assert f"{home / 'a' / 'refs' / 'nowhere'}: the ref points to version 0123456789abcdef" in text
    assert f"{home / 'a' / 'refs' / 'latest'}: the ref points to version {latest.version}" in text
    assert f"{home / 'a' / 'sources' / 'feedfacefeedface'}: the source record names version fedcba9876543210" in text
    assert f"{home / 'b' / 'versions' / 'abcdefabcdefabcd'}: a version directory without _metadata.json" in text
    assert f"{b.cache_dir / '_metadata.json'}: version id" in text
    assert f"{leftover}: left behind by process" in text
    assert lines[-1].startswith(f"{len(report.problems)} problem(s)")

    result = _cli(home)
    assert result.returncode == 1
    assert result.stdout.splitlines()[:-1] == lines[:-1]
    only_b = _cli(home, "b")
    assert only_b.returncode == 1
    assert all("/b/" in line for line in only_b.stdout.splitlines()[:-1])


def test_a_version_directory_named_against_its_content_is_reported(home: Path) -> None:
    b = se.load("b", home=home)
    renamed = b.cache_dir.with_name("0000000000000000")
    b.cache_dir.rename(renamed)
    report = se.fsck("b", home=home)
    assert any(str(p).startswith(f"{renamed / '_metadata.json'}: version id") for p in report.problems)
    assert any("refs/latest: the ref points to version" in str(p) for p in report.problems)


def test_an_old_cache_without_batch_digests_is_checked_by_its_shard_digests(home: Path) -> None:
    b = se.load("b", home=home)
    edit_metadata(b.cache_dir, lambda raw: raw.pop("batch_digests"), keep_digest=False)
    report = se.fsck("b", home=home)
    assert report.ok, str(report)
    assert report.batches == 0


def test_fsck_of_an_unknown_name_says_so(home: Path) -> None:
    with pytest.raises(CacheNotFoundError, match="no dataset named 'zzz'"):
        se.fsck("zzz", home=home)
    result = _cli(home, "zzz")
    assert result.returncode == 1
    assert "no dataset named 'zzz'" in result.stderr


def test_an_empty_dataset_left_by_a_failed_first_build_is_one_line(home: Path) -> None:
    with pytest.raises(se.EncodingError):
        se.build([{"x": "not an int", "s": "a"}], F, name="failed", home=home, progress=False)
    assert not (home / "failed").exists()  # a first build that fails tidies its folder away
    (home / "failed" / "versions").mkdir(parents=True)  # what one killed before it could tidy leaves
    report = se.fsck("failed", home=home)
    assert [str(p) for p in report.problems] == [
        f"{home / 'failed'}: an empty dataset: no versions and no refs (left by a first build that failed)"
    ]


def lines_of(root: str):
    for i, path in enumerate(sorted(Path(root).glob("*.txt"))):
        yield {"x": i, "s": path.read_text()}


def test_a_dataset_built_from_a_folder_or_a_file_is_healthy(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    data.mkdir()
    for i in range(3):
        (data / f"{i}.txt").write_text(f"line {i}")
    se.build(lines_of, F, args=(str(data),), name="folder", home=home, progress=False)
    with pytest.warns(se.EmptyBuildWarning):  # a file, not a folder: lines_of finds no files under it
        se.build(lines_of, F, args=(str(data / "1.txt"),), name="file", home=home, progress=False)
    assert (home / "folder" / "sources" / "files").is_dir()  # the listing a rebuild explains itself with
    report = se.fsck(home=home)
    assert report.ok, str(report)
    result = _cli(home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no problems" in result.stdout
    listing = next((home / "folder" / "sources" / "files").iterdir())
    listing.write_bytes(b"not gzip")
    (home / "folder" / "sources" / "files" / "stray.txt").write_text("x")
    problems = sorted(str(p) for p in se.fsck(home=home).problems)
    assert problems == [
        f"{listing}: an unreadable folder listing: a rebuild cannot name the files that changed (deleting it is safe)",
        f"{listing.parent / 'stray.txt'}: not a folder listing (<digest>.json.gz, a plain file)",
    ]


def test_an_early_revision_cache_is_healthy_and_its_rebuild_says_why(tmp_path: Path) -> None:
    import json

    from stable_explore.testing.caches import as_format_revision_1

    home, data = tmp_path / "home", tmp_path / "data"
    data.mkdir()
    for i in range(3):
        (data / f"{i}.txt").write_text(f"line {i}")
    built = se.build(lines_of, F, args=(str(data),), name="old", home=home, progress=False)
    old_dir = as_format_revision_1(built.cache_dir)
    raw = json.loads((old_dir / "_metadata.json").read_text())
    assert raw["format_revision"] == 1
    assert "metadata_digest" not in raw
    assert "batch_digests" not in raw
    old = se.load("old", home=home)
    assert old.version == old_dir.name
    assert old[2]["s"] == "line 2"
    assert "ok: 1 shard(s), 3 rows" in str(se.verify(old))
    report = se.fsck(home=home)
    assert report.ok, str(report)
    # the source record as that release fingerprinted it: no file states, other digests of code and arguments
    source = raw["source"]
    raw["source"] = {**{k: v for k, v in source.items() if k != "files"}, "code": "e096ad877b66f2f8"}
    raw["source"]["arguments"] = {"root": "7a8c1f40982d1432"}
    (old_dir / "_metadata.json").write_text(json.dumps(raw))
    for record in (home / "old" / "sources").iterdir():
        if record.is_file():
            record.unlink()  # that release's source fingerprint is not this one's: a miss
    (data / "3.txt").write_text("line 3")
    rebuilt = se.build(lines_of, F, args=(str(data),), name="old", home=home, progress=False)
    why = rebuilt.build_info
    assert f"the earlier build (old@{old.version}, format revision 1) was recorded by an older stable-explore" in why
    for wrong in ("now exists", "argument 'root'", "generator source"):
        assert wrong not in why
    assert se.fsck(home=home).ok
