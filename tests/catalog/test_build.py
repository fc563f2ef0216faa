"""Builds: a cache hit skips the generator and says why, a miss names what changed, bad rows publish nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
from stable_explore import Features, Value
from tests import sources
from tests.sources import NUM_FEATURES, numbers


def test_cache_hit_skips_the_generator_and_says_why(home: Path) -> None:
    numbers.calls = 0
    first = se.build(numbers, NUM_FEATURES, args=(100,), home=home, progress=False)
    assert first.build_info == "built: first build of numbers"
    written = {p.name: p.stat().st_mtime_ns for p in first.cache_dir.iterdir()}
    again = se.build(numbers, NUM_FEATURES, args=(100,), home=home, progress=False)
    assert numbers.calls == 1
    assert again.version == first.version
    assert again.build_info == "reused: same source, arguments and features"
    # the hit read no rows and wrote nothing: still one version, its files untouched
    assert [p.name for p in (home / "numbers" / "versions").iterdir()] == [first.version]
    assert {p.name: p.stat().st_mtime_ns for p in again.cache_dir.iterdir()} == written


def test_a_miss_names_what_changed(home: Path) -> None:
    se.build(numbers, NUM_FEATURES, args=(5,), home=home, progress=False)
    changed_arg = se.build(numbers, NUM_FEATURES, args=(6,), home=home, progress=False)
    assert changed_arg.build_info == "rebuilt: argument 'n' changed"
    forced = se.build(numbers, NUM_FEATURES, args=(6,), home=home, progress=False, force=True)
    assert forced.build_info.startswith("rebuilt: force=True")
    assert "identical content" in forced.build_info
    old_root = sources.ROOT
    try:
        sources.ROOT = "data/v2"
        changed_global = se.build(numbers, NUM_FEATURES, args=(6,), home=home, progress=False)
    finally:
        sources.ROOT = old_root
    assert changed_global.build_info == "rebuilt: variable 'ROOT' changed"
    assert changed_global[0]["s"] == "data/v2/0"
    other_features = Features(x=Value("int32"), s=Value("string"))
    assert "features changed" in se.build(numbers, other_features, args=(6,), home=home, progress=False).build_info


def test_edited_generator_source_is_a_miss(home: Path) -> None:
    namespace: dict = {}
    exec("def gen(n):\n    for i in range(n):\n        yield {'x': i, 's': 'a'}\n", namespace)
    se.build(namespace["gen"], NUM_FEATURES, name="g", args=(3,), home=home, progress=False)
    exec("def gen(n):\n    for i in range(n):\n        yield {'x': i * 2, 's': 'a'}\n", namespace)
    rebuilt = se.build(namespace["gen"], NUM_FEATURES, name="g", args=(3,), home=home, progress=False)
    # without source text, bytecode stands in for it
    assert rebuilt.build_info == "rebuilt: generator source changed"
    assert rebuilt[2]["x"] == 4


def test_plain_iterables_always_build_unless_keyed(home: Path) -> None:
    rows = [{"x": 1, "s": "a"}]
    first = se.build(rows, NUM_FEATURES, name="plain", home=home, progress=False)
    assert "plain iterable has no fingerprint" in first.build_info
    keyed = se.build(rows, NUM_FEATURES, name="plain", key="v1", home=home, progress=False)
    assert se.build(iter(()), NUM_FEATURES, name="plain", key="v1", home=home, progress=False).version == keyed.version


def test_concurrent_builders_of_one_source_build_once(tmp_path: Path) -> None:
    marker = tmp_path / "runs.log"
    script = textwrap.dedent(
        f"""
        import time, stable_explore as se
        def slow(n):
            with open({str(marker)!r}, "a") as f:
                f.write("run\\n")
            for i in range(n):
                time.sleep(0.002)
                yield {{"x": i}}
        ds = se.build(slow, se.Features(x=se.Value("int64")), args=(300,), home={str(tmp_path / "home")!r},
                      progress=False)
        print(ds.version, ds.build_info)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120)[0].split(" ", 1) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert marker.read_text().count("run") == 1
    assert outputs[0][0] == outputs[1][0]
    assert sorted(o[1].split(":")[0] for o in outputs) == ["built", "reused"]


def test_bad_row_during_build_publishes_nothing(home: Path) -> None:
    good = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)

    def broken():
        yield "a", {"x": 1, "s": "ok"}
        yield "b", {"x": "two", "s": "bad"}

    with pytest.raises(se.EncodingError, match=r"row 1, key 'b', field 'x'"):
        se.build(broken, NUM_FEATURES, home=home, name="numbers", progress=False)
    assert se.load("numbers", home=home).version == good.version
    assert [p.name for p in (home / "numbers" / "versions").iterdir()] == [good.version]


def test_a_hit_on_the_latest_version_writes_nothing(home: Path) -> None:
    se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    ref = home / "numbers" / "refs" / "latest"
    before = ref.stat().st_mtime_ns
    se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    assert ref.stat().st_mtime_ns == before


def test_a_cache_hit_in_a_home_this_process_cannot_write_still_reuses(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hit takes the refs lock to mark the version used (for gc); on a read-only share that fails: still a hit."""
    import errno
    import os

    first = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    again = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    assert again.build_info.startswith("reused")
    assert again.version == first.version


def _files_under(root: str) -> Any:
    for path in sorted(Path(root).glob("*.txt")):
        yield {"n": len(path.read_text())}


def test_a_source_that_yields_nothing_warns_and_names_the_version_before(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("hello")
    features = Features(n=Value("int64"))
    full = se.build(_files_under, features, args=(str(folder),), name="notes", home=home, progress=False)
    typo = str(tmp_path / "ntoes")  # a folder that does not exist: the generator yields nothing
    with pytest.warns(se.EmptyBuildWarning) as caught:
        empty = se.build(_files_under, features, args=(typo,), name="notes", home=home, progress=False)
    said = str(caught[0].message)
    assert f"notes@{empty.version[:12]} is empty and is now the latest" in said
    assert f"se.load('notes@{full.version[:12]}')" in said
    assert caught[0].filename == __file__  # the user's line, not ours
    # an empty version is valid, and the one before it is still there, by the id the warning gave
    assert len(empty) == 0
    assert len(se.load(f"notes@{full.version[:12]}", home=home)) == 1


def test_allow_empty_false_refuses_an_empty_build_and_publishes_nothing(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("hello")
    features = Features(n=Value("int64"))
    full = se.build(_files_under, features, args=(str(folder),), name="notes", home=home, progress=False)
    typo = str(tmp_path / "ntoes")
    with pytest.raises(se.EmptyBuildError) as caught:
        se.build(_files_under, features, args=(typo,), name="notes", home=home, progress=False, allow_empty=False)
    said = str(caught.value)
    assert f"nothing was published (notes@{full.version[:12]} stays the latest)" in said
    assert "pass allow_empty=True" in said
    assert se.load("notes", home=home).version == full.version
    assert [v["version"] for v in se.versions("notes", home=home)] == [full.version]
    assert not [p for p in (home / "notes" / "versions").iterdir() if p.name != full.version]  # no staging left
    with pytest.raises(se.InvalidArgumentTypeError, match="allow_empty must be True or False"):
        se.build(_files_under, features, args=(typo,), name="notes", home=home, progress=False, allow_empty="no")
