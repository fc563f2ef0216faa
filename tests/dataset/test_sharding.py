"""ds.shard and ds.split_by_node: disjoint parts that hold every row once, by rows or by shard file; bad arguments."""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore import CachedDataset, InvalidArgumentTypeError, InvalidOptionError
from stable_explore.dataset._sharding import consumer_runs, deal, file_units

FEATURES = se.Features(x=se.Value("int64"))


def numbers(home: Path, n: int, per_shard: int) -> CachedDataset:
    """``n`` rows, x = 0..n-1, in shard files of ``per_shard`` rows (the last one shorter)."""
    rows = [{"x": i} for i in range(n)]
    options = {"name": f"n{n}x{per_shard}", "home": home, "progress": False, "batch_size": per_shard, "shard_size": 1}
    if n:
        return se.build(rows, FEATURES, **options)
    with pytest.warns(se.EmptyBuildWarning):  # no rows, on purpose
        return se.build(rows, FEATURES, **options)


def xs(ds: CachedDataset) -> list[int]:
    values: list[int] = ds["x"]
    return values


CASES = [(10, 3, 1), (10, 3, 3), (10, 3, 4), (10, 3, 5), (7, 2, 10), (12, 4, 3), (1, 1, 2), (0, 5, 3)]


@pytest.mark.parametrize(("n", "per_shard", "num_shards"), CASES)
@pytest.mark.parametrize("by", ["rows", "files"])
@pytest.mark.parametrize("contiguous", [True, False])
def test_parts_hold_every_row_exactly_once(
    home: Path, n: int, per_shard: int, num_shards: int, by: str, contiguous: bool
) -> None:
    ds = numbers(home, n, per_shard)
    parts = [ds.shard(num_shards, i, by=by, contiguous=contiguous) for i in range(num_shards)]
    together = [x for part in parts for x in xs(part)]
    assert sorted(together) == list(range(n))
    if contiguous:  # parts in index order are the dataset
        assert together == list(range(n))
    if by == "rows":
        sizes = [len(part) for part in parts]
        assert max(sizes) - min(sizes) <= 1
    else:  # each part reads its own files, and files stay whole
        files = [set(part.shard_ids().tolist()) for part in parts]
        for i, mine in enumerate(files):
            for other in files[i + 1 :]:
                assert not mine & other
        for mine, part in zip(files, parts, strict=True):
            assert len(part) == sum(ds.shard_row_counts[f] for f in mine)


def test_rows_sizes_and_strides_match_hugging_face_semantics(home: Path) -> None:
    ds = numbers(home, 10, 3)
    assert [len(ds.shard(4, i)) for i in range(4)] == [3, 3, 2, 2]
    assert xs(ds.shard(4, 1, contiguous=False)) == [1, 5, 9]
    assert xs(ds.shard(3, 1, by="files")) == [6, 7, 8]  # 4 files of 3, 3, 3, 1 rows: 2, 1, 1 files per part
    assert xs(ds.shard(3, 2, by="files")) == [9]
    assert xs(ds.shard(3, 0, by="files")) == [0, 1, 2, 3, 4, 5]
    assert xs(ds.shard(2, 1, by="files", contiguous=False)) == [3, 4, 5, 9]


def test_more_parts_than_files_gives_empty_parts_by_files_and_rows_by_rows(home: Path) -> None:
    ds = numbers(home, 6, 6)
    assert ds.num_shards == 1
    assert [len(ds.shard(3, i, by="files")) for i in range(3)] == [6, 0, 0]
    assert [len(ds.shard(3, i)) for i in range(3)] == [2, 2, 2]
    empty = ds.shard(3, 2, by="files")
    assert list(empty) == []
    assert xs(empty) == []


def test_parts_are_cheap_views(home: Path) -> None:
    ds = numbers(home, 5000, 1000)
    for part in (ds.shard(3, 1), ds.shard(3, 1, contiguous=False), ds.shard(3, 1, by="files")):
        assert part.is_view
        assert len(pickle.dumps(part)) < 4096  # rows as a range: references only
        assert xs(pickle.loads(pickle.dumps(part))) == xs(part)


def test_parts_of_a_view_are_parts_of_its_rows_in_its_order(home: Path) -> None:
    ds = numbers(home, 40, 7)
    for view in (ds.filter(lambda row: row["x"] % 3 != 0), ds.shuffle(seed=5), ds[5:33:2]):
        for by in ("rows", "files"):
            parts = [view.shard(4, i, by=by) for i in range(4)]
            assert sorted(x for part in parts for x in xs(part)) == sorted(xs(view))
        assert [x for i in range(4) for x in xs(view.shard(4, i))] == xs(view)
        for part in (view.shard(4, i, by="files") for i in range(4)):  # within a file: the view's order
            order = [xs(view).index(x) for x in xs(part)]
            for file in set(part.shard_ids().tolist()):
                mine = [o for o, f in zip(order, part.shard_ids().tolist(), strict=True) if f == file]
                assert mine == sorted(mine)


def test_by_files_keeps_the_runs_of_an_edited_version_together(home: Path) -> None:
    features = se.Features(label=se.ClassLabel(names=["a", "b"]), x=se.Value("int64"))
    rows = [(f"k{i:05d}", {"label": "a", "x": i}) for i in range(3000)]
    ds = se.build(rows, features, name="e", shard_size="16KB", batch_size=1000, home=home, progress=False)
    edited = ds.set(500, "x", -500).drop([2999]).save(message="edit", progress=False)
    assert edited.num_segments > edited.num_shards  # file 0 holds rows 0-499 and 501-999; row 500 is elsewhere
    parts = [edited.shard(2, i, by="files") for i in range(2)]
    assert sorted(x for part in parts for x in xs(part)) == sorted([-500, *range(500), *range(501, 2999)])
    first = set(parts[0].shard_ids().tolist())
    assert not first & set(parts[1].shard_ids().tolist())
    assert edited.shard_of(0)[0] in first
    assert {0, 499, 501, 999} <= set(xs(parts[0]))  # both runs of file 0 went to one part


def test_split_by_node_is_the_rank_s_contiguous_part(home: Path) -> None:
    ds = numbers(home, 11, 4)
    nodes = [ds.split_by_node(rank, 3) for rank in range(3)]
    assert [xs(node) for node in nodes] == [xs(ds.shard(3, rank)) for rank in range(3)]
    assert [x for node in nodes for x in xs(node)] == list(range(11))
    assert xs(ds.split_by_node(1, 2, by="files")) == xs(ds.shard(2, 1, by="files"))


@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"num_shards": 0, "index": 0}, InvalidOptionError, "num_shards must be an int >= 1, got 0"),
        ({"num_shards": -2, "index": 0}, InvalidOptionError, "num_shards must be an int >= 1, got -2"),
        ({"num_shards": 2.0, "index": 0}, InvalidArgumentTypeError, "num_shards must be an int, got float 2.0"),
        ({"num_shards": "2", "index": 0}, InvalidArgumentTypeError, "num_shards must be an int, got str '2'"),
        ({"num_shards": True, "index": 0}, InvalidArgumentTypeError, "num_shards must be an int, got bool True"),
        ({"num_shards": 3, "index": 3}, InvalidOptionError, "index must be in [0, num_shards) = [0, 3), got index=3"),
        ({"num_shards": 3, "index": -1}, InvalidOptionError, "index must be an int >= 0, got -1"),
        ({"num_shards": 3, "index": None}, InvalidArgumentTypeError, "index must be an int, got NoneType None"),
        ({"num_shards": 3, "index": 0, "by": "segments"}, InvalidOptionError, "by must be one of ('rows', 'files')"),
        ({"num_shards": 3, "index": 0, "contiguous": "no"}, InvalidArgumentTypeError, "got str 'no'"),
    ],
)
def test_bad_arguments_say_what_was_expected_and_given(
    home: Path, kwargs: dict[str, object], error: type[Exception], says: str
) -> None:
    ds = numbers(home, 4, 2)
    with pytest.raises(error) as raised:
        ds.shard(**kwargs)  # type: ignore[arg-type]
    assert says in str(raised.value)
    assert isinstance(raised.value, (ValueError, TypeError))  # the builtins users catch


def test_split_by_node_names_rank_and_world_size(home: Path) -> None:
    ds = numbers(home, 4, 2)
    with pytest.raises(InvalidOptionError, match=r"rank must be in \[0, world_size\) = \[0, 2\), got rank=2"):
        ds.split_by_node(2, 2)
    with pytest.raises(InvalidOptionError, match="world_size must be an int >= 1, got 0"):
        ds.split_by_node(0, 0)
    with pytest.raises(InvalidArgumentTypeError, match="rank must be an int, got str '0'"):
        ds.split_by_node("0", 2)  # type: ignore[arg-type]


# -- the dealing behind to_iterable, checked on many shapes without torch -------------------------


def _units(sizes: list[int]) -> list[list[range]]:
    starts = np.cumsum([0, *sizes])
    return [[range(int(a), int(b))] for a, b in itertools.pairwise(starts)]


@pytest.mark.parametrize("sizes", [[5, 5, 5, 5], [7, 7, 7, 7, 3], [10], [1, 1], [4, 9, 2, 6, 6, 1, 8], [], [3, 0, 3]])
@pytest.mark.parametrize(("world_size", "num_workers"), [(1, 1), (2, 2), (3, 2), (4, 1), (2, 5)])
@pytest.mark.parametrize("order", [None, (0, 0), (7, 3)])
def test_ranks_and_workers_read_every_row_once(
    sizes: list[int], world_size: int, num_workers: int, order: tuple[int, int] | None
) -> None:
    units = _units(sizes)
    seen: list[int] = []
    per_rank = []
    for rank in range(world_size):
        mine = consumer_runs(units, rank=rank, world_size=world_size, order=order)
        per_rank.append(sum(len(run) for run in mine))
        for worker in range(num_workers):
            runs = consumer_runs(
                units, rank=rank, world_size=world_size, worker=worker, num_workers=num_workers, order=order
            )
            seen.extend(row for run in runs for row in run)
    assert sorted(seen) == list(range(sum(sizes)))
    assert sum(per_rank) == sum(sizes)
    if sizes:  # whole files: each rank gets len // world_size of them; the rest is cut to within a row
        spread = len(sizes) // world_size * (max(sizes) - min(sizes)) + 1
        assert max(per_rank) - min(per_rank) <= spread


def test_whole_files_go_to_ranks_while_they_divide_evenly() -> None:
    units = _units([4, 4, 4, 4, 4])  # 5 files, 2 ranks: 2 whole files each, the fifth cut in two
    assert deal(units, 2, 0) == [range(0, 4), range(8, 12), range(16, 18)]
    assert deal(units, 2, 1) == [range(4, 8), range(12, 16), range(18, 20)]
    assert deal(_units([10]), 4, 3) == [range(8, 10)]  # fewer files than parts: rows


def test_file_units_group_an_array_of_rows_by_file_in_order_of_first_use() -> None:
    segments = [(0, 0, 5), (1, 0, 5), (0, 5, 5)]  # file 0 holds rows 0-4 and 10-14 of the version
    offsets = np.array([0, 5, 10, 15])
    assert file_units(range(3, 12), segments, offsets) == [[range(3, 5), range(10, 12)], [range(5, 10)]]
    units = file_units(np.array([7, 1, 12, 6, 0]), segments, offsets)
    assert [[run.tolist() for run in unit] for unit in units] == [[[7, 6]], [[1, 12, 0]]]
    assert file_units(range(0), segments, offsets) == []
