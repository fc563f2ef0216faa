"""Opening shards: a memory-mapped shard is mapped once per file and kept for the next open, never stale."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore.storage.kept import forget
from stable_explore.storage.read.batches import BatchDigests
from stable_explore.storage.read.shard_file import open_shard, read_shard_batches

on_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")


def _write(path: Path, rows: int, width: int, seed: int = 0) -> None:
    payload = np.random.default_rng(seed).integers(0, 256, (rows, width), dtype=np.uint8)
    table = pa.table({"x": pa.array(range(rows)), "b": pa.array([p.tobytes() for p in payload], pa.binary())})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=1000):
            writer.write_batch(batch)


def _address(table: pa.Table) -> int:
    """Where the first data buffer of the table lives: the same address means the same map."""
    buffer = table.column("x").chunk(0).buffers()[1]
    assert buffer is not None
    return int(buffer.address)


def _mapped_here(inode: int) -> list[str]:
    """The lines of /proc/self/maps that map the file ``inode`` (under any name, deleted or not)."""
    lines = Path("/proc/self/maps").read_text().splitlines()
    return [line for line in lines if len(line.split()) > 4 and line.split()[4] == str(inode)]


@pytest.fixture(autouse=True)
def _no_kept_maps() -> None:
    forget(holding_files=True)


def test_a_mapped_shard_opened_twice_is_mapped_once(tmp_path: Path) -> None:
    path = tmp_path / "big.arrow"
    _write(path, 6000, 256)  # 1.5 MB: memory-mapped
    first, second = open_shard(path), open_shard(path, validate=False, columns=["x"])
    assert _address(first) == _address(second)
    assert second.column_names == ["x"]
    assert first.schema.field("b").type == pa.large_binary()  # widened per open, as before
    assert first.column("x").to_pylist()[-3:] == [5997, 5998, 5999]


def test_a_small_shard_is_read_each_time_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "small.arrow"
    _write(path, 100, 16)
    assert _address(open_shard(path)) != _address(open_shard(path))  # two reads, two copies


def test_a_rewritten_shard_is_opened_anew(tmp_path: Path) -> None:
    path = tmp_path / "big.arrow"
    _write(path, 6000, 256)
    before = open_shard(path)
    _write(path, 7000, 256, seed=1)  # another size (and time): another file to the cache
    after = open_shard(path)
    assert after.num_rows == 7000
    assert before.num_rows == 6000
    assert _address(after) != _address(before)


def test_a_shard_damaged_in_place_under_the_same_identity_still_fails_its_full_check(tmp_path: Path) -> None:
    path = tmp_path / "big.arrow"
    _write(path, 6000, 256)
    stamp = path.stat().st_mtime_ns
    assert open_shard(path, validate=False).num_rows == 6000  # kept, not checked in full
    # damage one offset of the binary column in place (same inode, same size) and give the file its
    # time back: the same identity, so the kept map is used, and it shows the file's bytes as they are
    raw = bytearray(path.read_bytes())
    at = raw.find(np.arange(0, 17 * 256, 256, dtype=np.int32).tobytes())
    assert at > 0
    raw[at + 8 : at + 12] = np.int32(2**30).tobytes()
    with path.open("r+b") as f:
        f.write(raw)
    os.utime(path, ns=(stamp, stamp))
    with pytest.raises(se.CacheCorruptionError, match="not a readable Arrow shard"):
        open_shard(path)


@on_linux
def test_forgetting_kept_files_lets_a_deleted_shard_go(tmp_path: Path) -> None:
    path = tmp_path / "big.arrow"
    _write(path, 6000, 256)
    inode = path.stat().st_ino
    table = open_shard(path)
    assert table.num_rows == 6000
    del table
    gc.collect()
    assert _mapped_here(inode)  # kept for the next open
    path.unlink()
    forget(holding_files=True)
    assert not _mapped_here(inode)  # its disk space is free


@on_linux
def test_gc_lets_go_of_the_maps_of_what_it_deletes(tmp_path: Path) -> None:
    features = se.Features(x=se.Value("int64"), b=se.Value("binary"))
    rows = [{"x": i, "b": bytes(300)} for i in range(5000)]
    old = se.build(rows, features, name="blobs", home=tmp_path, progress=False)
    shard = old.cache_dir / "shard-00000.arrow"
    assert shard.stat().st_size > 1 << 20
    inode = shard.stat().st_ino
    assert old.to_arrow().num_rows == 5000
    se.build(rows[:10], features, name="blobs", home=tmp_path, progress=False)  # latest: the old one is untagged
    del old
    gc.collect()
    assert _mapped_here(inode)
    se.gc("blobs", keep=0, home=tmp_path)
    assert not shard.exists()
    assert not _mapped_here(inode)  # gc renames a version away, then deletes it: no map holds its space


def test_a_shard_with_an_empty_record_batch_of_binary_reads_and_digests(tmp_path: Path) -> None:
    # widened() cast binary to large_binary through a table, whose empty form has no batch to give: IndexError
    schema = pa.schema([("image", pa.binary()), ("label", pa.int64())])
    path = tmp_path / "shard.arrow"
    with pa.ipc.new_file(str(path), schema) as writer:
        writer.write_batch(pa.record_batch([pa.array([], pa.binary()), pa.array([], pa.int64())], schema=schema))
        writer.write_batch(pa.record_batch([pa.array([b"ab", None]), pa.array([1, 2])], schema=schema))
    batches = list(read_shard_batches(path))
    assert [b.num_rows for b in batches] == [0, 2]
    assert all(b.schema.field("image").type == pa.large_binary() for b in batches)
    assert batches[1].column("image").to_pylist() == [b"ab", None]
    digests = BatchDigests.of_batches(schema.names, read_shard_batches(path))
    assert digests.rows == (0, 2)
    assert digests.digests == BatchDigests.of_batches(schema.names, read_shard_batches(path)).digests
