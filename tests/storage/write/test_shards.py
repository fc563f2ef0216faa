"""Shard files: digests streamed while writing, and aborting a writer."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from stable_explore import Features, Value, verify
from stable_explore.storage.format.hashing import hash_file
from stable_explore.storage.write.shards import ShardWriter
from stable_explore.storage.write.writer import write_sharded_arrow_cache


def test_shard_digests_streamed_while_writing_match_the_files(tmp_path: Path) -> None:
    # ~2.4 MB per batch of incompressible bytes: each shard is digested in several steps while it is
    # written, and the recorded digest must still be the digest of the whole file as it lies on disk.
    rng = np.random.default_rng(7)
    blobs = [rng.bytes(24_000) for _ in range(16)]
    features = Features(blob=Value("binary"), n=Value("int64"))
    rows = ({"blob": blobs[i % 16], "n": i} for i in range(2_000))
    meta = write_sharded_arrow_cache(rows, features, tmp_path / "c", batch_size=100, shard_size_bytes=20 * 2**20)
    assert meta.num_shards == 3
    assert meta.shard_hashes == [hash_file(p) for p in meta.shard_paths]
    assert meta.shard_sizes == [p.stat().st_size for p in meta.shard_paths]
    assert verify(tmp_path / "c").hashed


def test_aborting_a_writer_closes_its_file_and_its_queued_writebacks_do_not_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stable_explore.storage.write import shards as cache

    calls: list[BaseException | None] = []
    original = cache._start_writeback_of

    def recording(path: Path, offset: int, length: int) -> None:
        try:
            original(path, offset, length)
        except BaseException as exc:
            calls.append(exc)
            raise
        calls.append(None)

    monkeypatch.setattr(cache, "_start_writeback_of", recording)
    gate = threading.Event()
    schema = pa.schema([("blob", pa.large_binary())])
    batch = pa.record_batch([pa.array([bytes(1_000_000)] * 20, pa.large_binary())], schema=schema)
    writer = ShardWriter(tmp_path, schema, shard_size_bytes=10**12)
    writer._sealer.submit(gate.wait)  # hold the helper thread, so the writebacks stay queued
    writer.write(batch)  # 20 MB: writeback is due
    open_file = writer._sink.file  # type: ignore[union-attr]
    shutil.rmtree(tmp_path)  # what a failed build does to its temp dir
    gate.set()
    writer._sealer.submit(lambda: None).result()  # the queued writebacks have run by now
    assert calls  # at least one stretch of 8 MB was due
    assert all(exc is None for exc in calls)  # on a removed file: skipped quietly, not failed
    writer.abort()
    assert writer._sink is None
    assert open_file.closed


def _every_type(n: int, seed: int) -> pa.Table:
    """A column of each type a shard may hold, with nulls, odd lengths and a large binary column."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "int": pa.array(rng.integers(-100, 100, n)),
            "float": pa.array([float(x) if i % 4 else None for i, x in enumerate(rng.random(n))], pa.float32()),
            "binary": pa.array([rng.bytes(int(rng.integers(0, 40))) if i % 7 else None for i in range(n)], pa.binary()),
            "large_binary": pa.array([b"x" * (i % 5) for i in range(n)], pa.large_binary()),
            "blob": pa.array([rng.bytes(int(rng.integers(1000, 3000))) for _ in range(n)], pa.binary()),
            "text": pa.array([str(i) if i % 3 else None for i in range(n)]),
            "empty_text": pa.array([""] * n),
            "bool": pa.array([bool(i % 3) if i % 5 else None for i in range(n)]),
            "time": pa.array(np.arange(n).astype("datetime64[ms]")),
            "u64": pa.array(rng.integers(0, 2**63, n, dtype=np.uint64)),
            "list": pa.array([[1, 2, 3][: i % 4] if i % 6 else None for i in range(n)], pa.list_(pa.int32())),
            "struct": pa.array([{"a": i, "b": str(i)} if i % 4 else None for i in range(n)]),
            "fixed_list": pa.array([[1.0, float(i)] for i in range(n)], pa.list_(pa.float32(), 2)),
            "map": pa.array([[("k", i)] if i % 5 else None for i in range(n)], pa.map_(pa.string(), pa.int64())),
            "nulls": pa.nulls(n, pa.int64()),
        }
    )


def _written(tmp_path: Path, table: pa.Table, batches: list[pa.RecordBatch], **options: object) -> tuple[list, bool]:
    """Write ``batches`` with a ShardWriter; (per shard: the recorded digests and the file's), taken while writing."""
    from stable_explore.storage.format.sidecars import read_json_file
    from stable_explore.storage.read.batches import BatchDigests
    from stable_explore.storage.write.shards import batch_digests_of

    out = tmp_path / "out"
    out.mkdir()
    writer = ShardWriter(out, table.schema, **options)  # type: ignore[arg-type]
    taken_while_writing = True
    for batch in batches:
        writer.write(batch)
        sink = writer._sink  # the open shard, after this batch (None right after a shard was closed)
        if sink is not None:
            pending = sink.digests()
            if pending is None or pending[1][-1].result() is None:
                taken_while_writing = False
    shards = writer.finish()
    pairs = []
    for name, ref in zip(shards.names, shards.batch_files, strict=True):
        assert ref is not None
        recorded = BatchDigests.from_json(read_json_file(out, ref, out / "_metadata.json"), ref.file, 0)
        pairs.append((recorded, batch_digests_of(out / name)))
    return pairs, taken_while_writing


@pytest.mark.parametrize("seed", [0, 1])
def test_batch_digests_taken_while_writing_equal_those_of_the_finished_files(tmp_path: Path, seed: int) -> None:
    # Every column type, batches sliced at odd offsets (written from offset 0, read back so), one of no
    # rows, and several shards: each batch is digested from the bytes just written, and the digests
    # must be those a reader of the closed file gets.
    table = _every_type(1_000, seed)
    batches = [table.slice(0, 1).to_batches()[0], table.to_batches()[0].slice(0, 0)]
    batches += table.slice(1, 997).to_batches(max_chunksize=83)
    pairs, taken = _written(tmp_path, table, batches, shard_size_bytes=400_000)
    assert taken
    assert len(pairs) >= 3
    for recorded, found in pairs:
        assert recorded == found
    assert sum(sum(recorded.rows) for recorded, _ in pairs) == 998


@pytest.mark.parametrize(
    ("options", "column"),
    [
        ({"compression": "zstd"}, pa.array([b"x" * (i % 50) for i in range(300)])),
        ({"compression": "lz4"}, pa.array(list(range(300)))),
        ({}, pa.array([str(i % 3) for i in range(300)]).dictionary_encode()),
    ],
)
def test_compressed_and_dictionary_shards_are_digested_from_the_closed_file(
    tmp_path: Path, options: dict[str, object], column: pa.Array
) -> None:
    table = pa.table({"c": column, "n": pa.array(range(300))})
    pairs, taken = _written(tmp_path, table, table.to_batches(max_chunksize=64), **options)
    assert not taken
    assert [len(recorded.rows) for recorded, _ in pairs] == [5]
    for recorded, found in pairs:
        assert recorded == found
