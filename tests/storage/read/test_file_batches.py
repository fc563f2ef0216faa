"""A local shard's record batches, read one by one as first asked for: what a save or a take reads, and damage."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore.storage.format.batch_digests import BatchDigests, column_digest
from stable_explore.storage.kept import forget
from stable_explore.storage.read.batches import ShardCheck
from stable_explore.storage.read.file_batches import FileBatches
from stable_explore.storage.read.open_files import kept_as
from stable_explore.storage.read.shard_file import open_shard, read_shard_batches, widened, widened_array


def _write(path: Path, counts: list[int]) -> pa.Table:
    rows = sum(counts)
    payload = np.random.default_rng(0).integers(0, 256, (rows, 64), dtype=np.uint8)
    table = pa.table(
        {"x": pa.array(range(rows)), "b": pa.array([p.tobytes() for p in payload], pa.binary())},
        metadata={"note": "kept"},
    )
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        start = 0
        for count in counts:
            writer.write_batch(table.slice(start, count).combine_chunks().to_batches()[0] if count else
                               pa.RecordBatch.from_pylist([], schema=table.schema))  # fmt: skip
            start += count
    return table


@pytest.fixture(autouse=True)
def _nothing_kept() -> None:
    forget(holding_files=True)


def test_opening_reads_no_batch_and_an_index_reads_only_its_own(tmp_path: Path) -> None:
    path = tmp_path / "shard.arrow"
    table = _write(path, [1000] * 20)
    batches = FileBatches.open(path, [1000] * 20)
    assert (len(batches), batches.batches_read) == (20, 0)
    assert batches.schema.field("b").type == pa.large_binary()
    assert batches.schema.metadata == {b"note": b"kept"}
    assert batches[7].column("x").to_pylist()[:2] == [7000, 7001]
    assert batches[-1].column("x").to_pylist()[-1] == 19_999
    assert batches.batches_read == 2
    assert batches[7] is batches[7]  # read once, kept
    assert batches.table().equals(open_shard(path))
    assert batches.table().column("b").to_pylist() == table.column("b").to_pylist()
    assert batches.batches_read == 20


def test_batches_are_handed_out_as_their_digests_were_taken(tmp_path: Path) -> None:
    path = tmp_path / "shard.arrow"
    _write(path, [300, 0, 700, 1])  # an empty batch among them
    written = BatchDigests.of_batches(["x", "b"], read_shard_batches(path))
    assert BatchDigests.of_batches(["x", "b"], FileBatches.open(path, written.rows)) == written


def test_an_empty_batch_is_widened_as_the_first_readers_widened_it() -> None:
    """Its digests were taken that way: a cast keeps an 8-byte data buffer where those made an empty one."""
    schema = pa.schema([("b", pa.binary()), ("s", pa.string()), ("x", pa.int64())])
    empty = widened(pa.RecordBatch.from_pylist([], schema=schema))
    # the digests of the first release's widening (a table round trip), pinned
    assert [column_digest(c) for c in empty.columns] == ["6f57ce95208b9149", "0d5cd3a453c5ccf8", "5c14c4129ca5134c"]
    assert column_digest(widened_array(pa.array([], pa.binary()))) == "6f57ce95208b9149"
    assert empty.schema.field("b").type == pa.large_binary()


def test_threads_reading_one_batch_get_the_same_batch(tmp_path: Path) -> None:
    path = tmp_path / "shard.arrow"
    _write(path, [1000] * 4)
    batches = FileBatches.open(path, [1000] * 4)
    seen: list[pa.RecordBatch] = []
    threads = [threading.Thread(target=lambda: seen.append(batches[2])) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(batch) for batch in seen}) == 1
    assert batches.batches_read == 1


def test_another_number_of_batches_than_written_is_named_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "shard.arrow"
    _write(path, [1000] * 3)
    with pytest.raises(se.CacheCorruptionError, match="holds 3 record batches, but 2 were written") as caught:
        FileBatches.open(path, [1500, 1500])
    assert str(path) in str(caught.value)


def test_a_batch_of_another_row_count_is_refused_when_read_and_the_others_still_read(tmp_path: Path) -> None:
    path = tmp_path / "shard.arrow"
    _write(path, [1000] * 3)
    batches = FileBatches.open(path, [1000, 999, 1001])
    assert batches[0].num_rows == 1000
    with pytest.raises(se.CacheCorruptionError, match="record batch 1 holds 1000 rows, but 999 were written"):
        batches[1]
    with pytest.raises(se.CacheCorruptionError, match="record batch 1 holds"):
        batches[1]  # never handed out later either
    with pytest.raises(se.RowIndexError, match="record batch 3 of 3"):
        batches[3]


def test_a_truncated_or_missing_shard_is_named(tmp_path: Path) -> None:
    path = tmp_path / "shard.arrow"
    _write(path, [1000] * 3)
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(se.CacheCorruptionError, match="not a readable Arrow shard"):
        FileBatches.open(path, [1000] * 3)
    path.unlink()
    (tmp_path / "_metadata.json").write_text("{}")  # the version is there, its shard is not
    with pytest.raises(se.CacheCorruptionError, match="shard file is missing"):
        FileBatches.open(path, [1000] * 3)
    (tmp_path / "_metadata.json").unlink()  # the whole version went (gc took it): said so
    with pytest.raises(se.CacheNotFoundError, match="was deleted after this dataset was opened"):
        FileBatches.open(path, [1000] * 3)


def test_a_save_of_a_few_relabels_reads_only_the_batches_it_needs(tmp_path: Path) -> None:
    features = se.Features(label=se.ClassLabel(names=["a", "b"]), blob=se.Value("binary"))
    rows = ({"label": i % 2, "blob": bytes([i % 251]) * 100} for i in range(100_000))
    ds = se.build(rows, features, name="many", home=tmp_path, progress=False, batch_size=1000)
    forget(holding_files=True)
    saved = ds.relabel({5: "b", 75_005: "a"}).save(progress=False)
    shard = ds.cache_dir / "shard-00000.arrow"
    kept = kept_as(FileBatches.open(shard, [1000] * 100).identity, "")
    assert kept is not None
    assert isinstance(kept.batches, FileBatches)
    # the two rows' batches, and the batches of the two runs of rows its content digest hashed again
    # (runs of 4,096 rows on average): not the 100 batches of the shard
    assert 2 <= kept.batches.batches_read <= 20
    assert (saved[5]["label"], saved[75_005]["label"]) == (1, 0)  # "b", "a"
    assert saved.to_arrow().column("label").to_pylist()[:7] == [0, 1, 0, 1, 0, 1, 0]
    assert se.verify(saved).num_rows == 100_000  # its content digest, hashed again in full, matches


def test_each_version_linking_a_shard_names_its_own_path_when_a_batch_is_damaged(tmp_path: Path) -> None:
    first, second = tmp_path / "v1" / "shard.arrow", tmp_path / "v2" / "shard.arrow"
    first.parent.mkdir()
    second.parent.mkdir()
    _write(first, [1000] * 3)
    second.hardlink_to(first)
    opened = FileBatches.open(first, [1000, 999, 1000])  # batch 1 is not what was written
    through_second = opened.seen_from(second)
    assert through_second.identity == opened.identity
    assert through_second[0] is opened[0]  # what was read is shared
    with pytest.raises(se.CacheCorruptionError, match="record batch 1 holds") as caught:
        through_second[1]
    assert str(second) in str(caught.value)
    assert str(first) not in str(caught.value)
    with pytest.raises(se.RowIndexError, match="record batch -4 of 3"):
        through_second.column(-4, 0)
    assert through_second.column(-1, 0).to_pylist()[-1] == 2999


def test_a_shard_check_compares_the_counts_its_batches_were_opened_with(tmp_path: Path) -> None:
    path = tmp_path / "shard.arrow"
    _write(path, [1000] * 3)
    written = BatchDigests.of_batches(["x", "b"], read_shard_batches(path))
    batches = FileBatches.open(path, [1000, 1500, 500])  # another version's idea of the same file
    with pytest.raises(se.CacheCorruptionError, match=r"record batches of \[1000, 1500, 500\] rows"):
        ShardCheck(path, written, batches, schema=batches.schema)
    ShardCheck(path, written, FileBatches.open(path, written.rows), schema=batches.schema)  # as written: fine
