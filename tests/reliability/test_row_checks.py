"""Issue 26: a take of a few rows checks their images by row hash, not their record batches; nothing damaged leaks.

A take hashes the binary cells of the rows it hands out and compares each row's hash, made of its
cells, with the row hash stored beside it (that small column, and the other fixed-width columns,
are checked whole per batch against the batch digests, as before). Damage in a taken row is
refused, naming the shard, batch, column and rows; damage in a row not taken is refused when that
row is read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import CacheCorruptionError, ClassLabel, Features, Value
from stable_explore.storage.kept import forget
from stable_explore.storage.read.batches import BatchDigests
from stable_explore.storage.read.layout import ShardLayout
from stable_explore.storage.read.mapped import MappedReader
from tests.reliability.trials import flip_byte

FEATURES = Features(blob=Value("binary"), label=ClassLabel(names=["a", "b", "c"]), value=Value("float32"))
ROWS = 3000


def _blob(i: int) -> bytes:
    return b"BLOB%06d|" % i + bytes(np.random.default_rng(i).integers(0, 256, 300, dtype=np.uint8))


def _rows():
    for i in range(ROWS):
        yield {"blob": _blob(i), "label": i % 3, "value": i / 2}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    se.build(_rows, FEATURES, name="r", home=tmp_path / "home", progress=False, batch_size=500)
    forget()
    return tmp_path / "home"


def _damage_blob(home: Path, row: int) -> Path:
    """Flip a byte inside row ``row``'s blob in its shard file; the shard's path."""
    shard = se.load("r", home=home).cache_meta.shard_paths[0]
    offset = shard.read_bytes().index(b"BLOB%06d|" % row) + 40
    flip_byte(shard, offset, 0x08)
    forget()
    return shard


def test_a_take_beside_a_damaged_row_reads_and_the_damaged_row_is_refused_when_taken(home: Path) -> None:
    shard = _damage_blob(home, 42)
    fresh = se.load("r", home=home)
    table = fresh.select([41, 43, 2999, 0]).to_arrow()  # rows of the damaged batch, but not the damaged row
    assert table.column("blob").to_pylist() == [_blob(i) for i in (41, 43, 2999, 0)]
    assert table.column("value").to_pylist() == [41 / 2, 43 / 2, 2999 / 2, 0.0]
    pattern = rf"{shard.name}: record batch 0, column 'blob' \(rows 0-499 of this shard; rows 0-499 of the version\)"
    with pytest.raises(CacheCorruptionError, match=pattern):
        fresh.select([2999, 42]).to_arrow()
    with pytest.raises(CacheCorruptionError, match=pattern):
        fresh[42]  # a single row: checked by its row hash too
    with pytest.raises(CacheCorruptionError, match="record batch 0, column 'blob'"):
        fresh[40:45].to_arrow()
    with pytest.raises(CacheCorruptionError, match="record batch 0, column 'blob'"):
        se.load("r", home=home).to_pandas()  # a whole read checks whole batches
    assert fresh[43]["blob"] == _blob(43)  # the rows beside it still read
    # a read of the damaged row's label alone hands out no image: it reads (the label's batch checked whole)
    assert fresh.select([42, 41]).arrow_column("label").to_pylist() == [0, 2]


def test_damage_found_by_a_take_is_found_by_a_new_process_too(home: Path) -> None:
    _damage_blob(home, 1700)
    with pytest.raises(CacheCorruptionError, match="record batch 3, column 'blob'"):
        se.load("r", home=home).select(np.array([5, 1700])).to_arrow()
    forget()  # what this process checked is forgotten: checked again, and refused again
    with pytest.raises(CacheCorruptionError, match="record batch 3, column 'blob'"):
        se.load("r", home=home).select([1700]).to_arrow()


def test_the_row_hashes_a_take_relies_on_are_checked_against_the_batch_digests(home: Path) -> None:
    ds = se.load("r", home=home)
    shard = ds.cache_meta.shard_paths[0]
    stored = ds.row_hashes()[42]
    offset = shard.read_bytes().index(int(stored).to_bytes(8, "little"))
    flip_byte(shard, offset, 0x01)
    forget()
    with pytest.raises(CacheCorruptionError, match="record batch 0, column '__row_hash__'"):
        se.load("r", home=home).select([7, 42]).to_arrow()


def test_relabelled_rows_taken_from_a_fresh_open_read_their_new_labels(home: Path) -> None:
    saved = se.load("r", home=home).relabel({42: "c", 7: "a"}).save(message="fix two")
    forget()
    fresh = se.load(f"r@{saved.version}", home=home)
    table = fresh.select([42, 7, 8]).to_arrow()
    assert table.column("label").to_pylist() == [2, 0, 2]
    assert table.column("blob").to_pylist() == [_blob(42), _blob(7), _blob(8)]


def _handmade(tmp_path: Path, hashes: list[int]) -> tuple[Path, BatchDigests]:
    """A shard whose stored row hashes are not made of its columns (as a future writer might), with batch digests."""
    schema = pa.schema([("blob", pa.large_binary()), ("__key__", pa.int64()), ("__row_hash__", pa.uint64())])
    table = pa.table(
        {
            "blob": pa.array([_blob(i) for i in range(len(hashes))], pa.large_binary()),
            "__key__": pa.array(range(len(hashes)), pa.int64()),
            "__row_hash__": pa.array(hashes, pa.uint64()),
        },
        schema=schema,
    )
    path = tmp_path / "shard-00000.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for batch in table.to_batches(max_chunksize=100):
            writer.write_batch(batch)
    with pa.memory_map(str(path)) as source:
        batches = [pa.ipc.open_file(source).get_batch(i) for i in range(3)]
        digests = BatchDigests.of_batches(schema.names, batches)
    return path, digests


def test_row_hashes_not_made_of_the_columns_fall_back_to_the_batch_digests(tmp_path: Path) -> None:
    path, digests = _handmade(tmp_path, [7] * 300)
    reader = MappedReader(ShardLayout.of([path], [300], batch_digests=[digests]))
    assert reader.take([250, 3, 3]).column("blob").to_pylist() == [_blob(250), _blob(3), _blob(3)]
    offset = path.read_bytes().index(b"BLOB%06d|" % 150) + 20
    flip_byte(path, offset, 0x04)
    forget()
    again = MappedReader(ShardLayout.of([path], [300], batch_digests=[digests]))
    with pytest.raises(CacheCorruptionError, match=r"record batch 1, column 'blob' \(rows 100-199 of this shard"):
        again.take([150, 5])
