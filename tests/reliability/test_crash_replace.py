"""Issue 12 #2: replacing a cache directory is crash-safe at every step (real SIGKILLs in a child process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from stable_explore import Features, Value
from stable_explore.cache import read_sharded_cache_meta, write_sharded_arrow_cache
from stable_explore.storage.backends.fsutil import exchange_paths

ROOT = Path(__file__).resolve().parents[2]
F = Features(x=Value("int64"))

CHILD = """
import os, pathlib, shutil, signal, sys
from stable_explore import Features, Value
from stable_explore.cache import write_sharded_arrow_cache
from stable_explore.storage.backends import fsutil

target, mode = pathlib.Path(sys.argv[1]), sys.argv[2]
if mode == "between-renames":
    fsutil.exchange_paths = lambda first, second: False  # a system without an atomic exchange
    real_rename = pathlib.Path.rename

    def rename(self, dest):
        result = real_rename(self, dest)
        if ".old-" in pathlib.Path(dest).name:  # the old cache is now aside, the new one not yet in place
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    pathlib.Path.rename = rename
elif mode == "after-exchange":
    real_rmtree = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        if ".tmp-" in pathlib.Path(path).name:  # the new cache is in place, the old one not yet deleted
            os.kill(os.getpid(), signal.SIGKILL)
        return real_rmtree(path, *args, **kwargs)

    shutil.rmtree = rmtree
write_sharded_arrow_cache(({"x": 100 + i} for i in range(7)), Features(x=Value("int64")), target)
"""


def _replace_and_die(target: Path, mode: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", CHILD, str(target), mode], env=env, capture_output=True, text=True)
    assert result.returncode == -signal.SIGKILL, result.stderr


def _xs(target: Path) -> list[int]:
    from stable_explore.cache import read_shard

    meta = read_sharded_cache_meta(target)
    return [x for path in meta.shard_paths for x in read_shard(path).column("x").to_pylist()]


@pytest.fixture
def old_cache(tmp_path: Path) -> Path:
    target = tmp_path / "caches" / "c"
    write_sharded_arrow_cache(({"x": i} for i in range(3)), F, target)
    return target


def test_killed_between_the_renames_the_next_open_puts_the_old_copy_back(old_cache: Path) -> None:
    _replace_and_die(old_cache, "between-renames")
    assert not old_cache.exists()  # the crash really happened between the two renames
    assert [p.name for p in old_cache.parent.iterdir() if ".old-" in p.name]
    assert _xs(old_cache) == [0, 1, 2]  # the old cache, whole
    assert not [p for p in old_cache.parent.iterdir() if ".old-" in p.name]


def test_killed_between_the_renames_the_next_write_beside_puts_the_old_copy_back(old_cache: Path) -> None:
    _replace_and_die(old_cache, "between-renames")
    write_sharded_arrow_cache(({"x": 9} for _ in range(1)), F, old_cache.parent / "other")  # sweeps the folder
    assert _xs(old_cache) == [0, 1, 2]
    assert sorted(p.name for p in old_cache.parent.iterdir() if not p.name.endswith(".lock")) == ["c", "other"]


def test_killed_between_the_renames_the_next_write_of_the_target_replaces_it(old_cache: Path) -> None:
    _replace_and_die(old_cache, "between-renames")
    write_sharded_arrow_cache(({"x": 50 + i} for i in range(2)), F, old_cache)
    assert _xs(old_cache) == [50, 51]
    assert sorted(p.name for p in old_cache.parent.iterdir() if not p.name.endswith(".lock")) == ["c"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RENAME_EXCHANGE is Linux's")
def test_killed_after_the_atomic_exchange_the_new_cache_is_in_place(old_cache: Path) -> None:
    _replace_and_die(old_cache, "after-exchange")
    assert _xs(old_cache) == list(range(100, 107))
    leftovers = [p for p in old_cache.parent.iterdir() if ".tmp-" in p.name]
    assert leftovers  # the old copy, under a temp name of a dead process
    write_sharded_arrow_cache(({"x": 9} for _ in range(1)), F, old_cache.parent / "other")
    assert not [p for p in old_cache.parent.iterdir() if ".tmp-" in p.name]
    assert _xs(old_cache) == list(range(100, 107))


def test_a_copy_moved_aside_by_a_live_process_is_left_alone(old_cache: Path) -> None:
    aside = old_cache.parent / f".c.old-{os.uname().nodename}-{os.getpid()}-abcdef"
    old_cache.rename(aside)
    with pytest.raises(FileNotFoundError):
        read_sharded_cache_meta(old_cache)
    assert aside.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RENAME_EXCHANGE is Linux's")
def test_exchange_paths_swaps_two_directories(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one").touch()
    (tmp_path / "b").mkdir()
    assert exchange_paths(tmp_path / "a", tmp_path / "b")
    assert (tmp_path / "b" / "one").exists()
    assert not (tmp_path / "a" / "one").exists()
