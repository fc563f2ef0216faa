"""Columns and rows cut from Arrow IPC files by byte range give what Arrow's own reader gives."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from stable_explore.storage.backends.remote_ranges import BatchRanges, merged_fetch
from stable_explore.storage.format.ipc_layout import (
    FILE_TAIL,
    UnsupportedLayout,
    batch_header,
    footer_blocks,
    footer_length,
)
from stable_explore.storage.read.batches import column_digest
from stable_explore.storage.read.shard_file import widened

NESTED = ("list", "struct", "fixed_list", "map")


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "int": pa.array(rng.integers(-100, 100, n)),
            "float": pa.array(rng.random(n).astype("float32")),
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
            "map": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        }
    )


def _file(table: pa.Table, batch: int, **options: object) -> bytes:
    sink = io.BytesIO()
    with ipc.new_file(sink, table.schema, options=ipc.IpcWriteOptions(**options)) as writer:  # type: ignore[arg-type]
        for part in table.to_batches(max_chunksize=batch):
            writer.write_batch(part)
    return sink.getvalue()


def _ranges(data: bytes, schema: pa.Schema) -> tuple[BatchRanges, list[int]]:
    moved = [0]

    def read(spans: list[tuple[int, int]]) -> list[bytes]:
        return [data[a:b] for a, b in spans]

    fetch = merged_fetch(read, counted=lambda n: moved.__setitem__(0, moved[0] + n))
    return BatchRanges.of_bytes(fetch, len(data), schema), moved


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_whole_columns_have_the_digests_of_arrows_reader(seed: int) -> None:
    table = _table(700, seed)
    data = _file(table, batch=128)
    ranges, _ = _ranges(data, table.schema)
    reader = ipc.open_file(pa.py_buffer(data))
    assert len(ranges.blocks) == reader.num_record_batches == 6
    for b in range(reader.num_record_batches):
        batch = widened(reader.get_batch(b))
        cut = ranges.columns([(b, c) for c in range(table.num_columns)])
        for c, array in enumerate(cut):
            mine = widened(pa.record_batch([array], names=[table.column_names[c]])).column(0)
            assert column_digest(mine) == column_digest(batch.column(c)), (b, table.column_names[c])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rows_cut_from_flat_columns_equal_a_take(seed: int) -> None:
    table = _table(700, seed)
    data = _file(table, batch=128)
    ranges, moved = _ranges(data, table.schema)
    reader = ipc.open_file(pa.py_buffer(data))
    rng = np.random.default_rng(seed)
    flat = [c for c, name in enumerate(table.column_names) if name not in NESTED]
    wanted = {b: np.sort(rng.choice(reader.get_batch(b).num_rows, 9, replace=False)) for b in (0, 2, 5)}
    cut = ranges.rows(wanted, flat)
    for b, positions in wanted.items():
        batch = reader.get_batch(b)
        for c, array in zip(flat, cut[b], strict=True):
            assert array.equals(batch.column(c).take(pa.array(positions))), (b, table.column_names[c])
    touched = sum(ranges.blocks[b].metadata_length + ranges.blocks[b].body_length for b in wanted)
    assert moved[0] < touched / 4  # the cells' bytes, the bitmaps and the headers: not the batches


def test_nested_columns_are_refused_for_rows_and_empty_positions_give_empty_arrays() -> None:
    table = _table(50, 0)
    ranges, _ = _ranges(_file(table, batch=20), table.schema)
    with pytest.raises(UnsupportedLayout, match=r"'list'.*not flat"):
        ranges.rows({0: np.array([1])}, [table.column_names.index("list")])
    empty = ranges.rows({1: np.array([], dtype=np.int64)}, [0, 2])[1]
    assert [len(a) for a in empty] == [0, 0]


def test_compressed_bodies_and_damaged_footers_are_unsupported_layouts() -> None:
    table = _table(50, 0).select(["int", "text"])
    compressed = _file(table, batch=20, compression="zstd")
    with pytest.raises(UnsupportedLayout, match="compressed"):
        _ranges(compressed, table.schema)[0].column(0, 0)
    data = _file(table, batch=20)
    with pytest.raises(UnsupportedLayout, match="ARROW1"):
        footer_length(data[-FILE_TAIL:-1] + b"X")
    with pytest.raises(UnsupportedLayout):
        footer_blocks(b"\x01\x00")
    with pytest.raises(UnsupportedLayout):
        batch_header(b"\xff\xff\xff\xff\x10\x00\x00\x00" + b"\x00" * 4)
