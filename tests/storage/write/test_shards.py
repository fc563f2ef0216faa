"""Shard files: digests streamed while writing, and aborting a writer."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stable_explore import Features, Value, verify
from stable_explore.storage.format.hashing import hash_file
from stable_explore.storage.write.shards import ShardWriter
from stable_explore.storage.write.writer import write_sharded_arrow_cache

if TYPE_CHECKING:
    import pytest


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
