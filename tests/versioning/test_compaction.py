"""Compaction in a save: a chain of small saves keeps the pieces and files a read pays for bounded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore import CachedDataset, Features
from stable_explore.versioning._plan import Link, Rewrite, compacted

FEATURES = Features(label=se.ClassLabel(names=["a", "b", "c"]), x=se.Value("int64"))


def _examples(n: int) -> list[tuple[str, dict[str, int]]]:
    return [(f"k{i:06d}", {"label": i % 3, "x": i}) for i in range(n)]


def _cut(file_id: int, pieces: int, rows: int, position: int) -> list[Link | Rewrite]:
    """``rows`` rows of file ``file_id`` cut into ``pieces`` by one edited row (written anew) after each."""
    plan: list[Link | Rewrite] = []
    step = rows // pieces
    for i in range(pieces):
        plan += [Link(file_id, i * step, step - 1, position + i * step), Rewrite(position + i * step + step - 1, 1)]
    return plan


def test_under_the_limit_the_plan_is_kept() -> None:
    plan = [*_cut(0, 5, 100, 0), Link(1, 0, 100, 100)]
    assert compacted(plan, [100, 100], max_segments=len(plan), small_file_rows=5, max_small_files=2) == plan


def test_past_the_limit_the_fragmented_file_is_rewritten_whole_and_a_whole_shard_stays_linked() -> None:
    plan = [*_cut(0, 5, 100, 0), Link(1, 0, 100, 100)]
    out = compacted(plan, [100, 100], max_segments=len(plan) - 1, small_file_rows=5, max_small_files=2)
    assert out == [Rewrite(0, 100), Link(1, 0, 100, 100)]


def test_a_big_file_cut_once_is_not_rewritten_for_the_pieces_of_another() -> None:
    plan = [Link(2, 0, 2500, 0), Rewrite(2500, 1), Link(2, 2501, 2499, 2501), *_cut(0, 20, 200, 5000)]
    out = compacted(plan, [200, 100, 5000], max_segments=30, small_file_rows=5, max_small_files=2)
    assert out == [*plan[:3], Rewrite(5000, 200)]


def test_a_file_the_compacted_version_uses_less_than_half_of_is_rewritten_too() -> None:
    plan = [*_cut(0, 5, 100, 0), Link(1, 0, 100, 100)]
    out = compacted(plan, [100, 201], max_segments=len(plan) - 1, small_file_rows=5, max_small_files=2)
    assert out == [Rewrite(0, 200)]


def test_small_files_are_merged_past_their_number_or_at_once_when_cheap_and_the_save_writes() -> None:
    plan = [Link(0, 0, 50, 0), Link(2, 0, 1, 50), Link(0, 51, 49, 51), Link(3, 0, 1, 100), Rewrite(101, 1)]
    rows, sizes = [100, 100, 1, 1], [9000, 9000, 10, 10]
    merged = [Link(0, 0, 50, 0), Rewrite(50, 1), Link(0, 51, 49, 51), Rewrite(100, 2)]
    assert compacted(plan, rows, max_segments=64, small_file_rows=10, max_small_files=2) == plan
    assert compacted(plan, rows, max_segments=64, small_file_rows=10, max_small_files=1) == merged
    cheap = compacted(
        plan, rows, max_segments=64, small_file_rows=10, max_small_files=2, file_bytes=sizes, merge_bytes=20
    )
    assert cheap == merged
    dear = compacted(
        plan, rows, max_segments=64, small_file_rows=10, max_small_files=2, file_bytes=sizes, merge_bytes=19
    )
    assert dear == plan
    drops_only = plan[:-1]  # a save that writes no file of its own keeps the small files as they are
    kept = compacted(
        drops_only, rows, max_segments=64, small_file_rows=10, max_small_files=2, file_bytes=sizes, merge_bytes=20
    )
    assert kept == drops_only


def _check_rows(ds: CachedDataset, keys: list[str], labels: list[int], xs: list[int]) -> None:
    """Every row of ``ds``, column by column, against the expected lists; a mismatch names the row."""
    table = ds.to_arrow(with_row_columns=True)
    found = {name: table.column(name).to_pylist() for name in ("label", "x", "__key__")}
    for name, values in (("label", labels), ("x", xs), ("__key__", keys)):
        if found[name] != values:
            bad = next(i for i, (a, b) in enumerate(zip(found[name], values, strict=True)) if a != b)
            pytest.fail(f"{ds.ref}: row {bad} column {name!r} is {found[name][bad]!r}, expected {values[bad]!r}")


def test_a_chain_of_saves_keeps_pieces_and_files_bounded_and_every_row_right(tmp_path: Path) -> None:
    n = 12_000
    ds = se.build(_examples(n), FEATURES, name="chain", home=tmp_path, progress=False, batch_size=500)
    keys = [f"k{i:06d}" for i in range(n)]
    labels = [i % 3 for i in range(n)]
    xs = list(range(n))
    rng = np.random.default_rng(7)
    written = []
    for step in range(40):
        rows = sorted(rng.choice(len(ds), 10, replace=False).tolist())
        if step % 7 == 3:
            draft = ds.drop(rows[:3])
            for row in reversed(rows[:3]):
                del keys[row], labels[row], xs[row]
        elif step % 7 == 5:
            draft = ds.set(rows[0], "x", -step).relabel({rows[1]: "c"})
            xs[rows[0]], labels[rows[1]] = -step, 2
        elif step % 2:  # relabels: cell patches, the rows stay where they are
            draft = ds.relabel(dict.fromkeys(rows, "abc"[step % 3]))
            for row in rows:
                labels[row] = step % 3
        else:  # new values: the rows are written anew, and the files they leave are cut into pieces
            draft = ds
            for row in rows:
                draft = draft.set(row, "x", -row - 1)
                xs[row] = -row - 1
        ds = draft.save(progress=False)
        meta = ds.cache_meta
        assert len(meta.segments) <= 64 + 3 * 10  # compacted past max(64, rows / 1000); a save adds 3 per edit
        largest = max(meta.shard_row_counts)
        assert sum(1 for r in meta.shard_row_counts if r < largest // 8) <= 1  # earlier saves' rows merged
        assert sum(meta.shard_row_counts) <= 2 * len(ds)  # no file kept for a few of its rows
        written.append(ds.build_info)
        _check_rows(se.load(ds.cache_dir), keys, labels, xs)
    assert any("reused 0 of the parent's" in info for info in written)  # the fragmented file was rewritten
    rebuilt = se.build(
        list(zip(ds.keys(), ds.to_arrow().to_pylist(), strict=True)), FEATURES, name="re", home=tmp_path, progress=False
    )
    assert rebuilt.version == ds.version
    assert se.verify(ds).num_rows == len(ds)
    assert not se.fsck(home=tmp_path).problems


def test_saving_a_reordered_view_of_a_fragmented_version_keeps_its_rows_in_view_order(tmp_path: Path) -> None:
    n = 5000
    ds = se.build(_examples(n), FEATURES, name="view", home=tmp_path, progress=False, batch_size=250)
    rng = np.random.default_rng(1)
    for _ in range(4):
        ds = ds.relabel(dict.fromkeys(rng.choice(len(ds), 10, replace=False).tolist(), "b")).save(progress=False)
    labels = ds.to_arrow().column("label").to_pylist()
    order = rng.permutation(n)[: n // 2]
    view = ds[order]
    saved = view.relabel({0: "c"}).drop([1]).save(progress=False)
    expected = [labels[i] for i in order.tolist()]
    expected[0] = 2
    del expected[1]
    assert saved.to_arrow().column("label").to_pylist() == expected
    assert saved.keys() == [f"k{i:06d}" for i in np.delete(order, 1).tolist()]


def test_a_short_but_big_file_is_never_merged_as_a_small_one() -> None:
    # a build's last shard has fewer rows than the largest / 8, but it is no earlier save's edited rows
    plan = [Link(0, 0, 50, 0), Link(1, 0, 9, 50), Link(2, 0, 1, 59), Link(3, 0, 1, 60), Rewrite(61, 1)]
    rows, sizes = [100, 9, 1, 1], [90_000, 8_000, 10, 10]
    out = compacted(
        plan, rows, max_segments=64, small_file_rows=10, max_small_files=1, file_bytes=sizes, small_file_bytes=1000
    )
    assert out == [Link(0, 0, 50, 0), Link(1, 0, 9, 50), Rewrite(59, 3)]


def test_a_chain_of_saves_never_rewrites_the_build_s_last_shard(home: Path) -> None:
    rows = 400_000
    ds = se.build(_examples(rows), FEATURES, name="t", home=home, progress=False, batch_size=5000, shard_size="12MB")
    counts, sizes = ds.cache_meta.shard_row_counts, ds.cache_meta.shard_sizes or []
    assert len(counts) == 2, counts
    assert counts[1] * 8 < counts[0], counts  # short in rows, as an earlier save's edited rows would be
    assert sizes[1] > 1024 * 1024, sizes  # but big in bytes
    last = ds.cache_meta.shard_paths[-1]
    rng = np.random.default_rng(2)
    for step in range(6):
        ds = ds.relabel(dict.fromkeys(rng.choice(rows, 10, replace=False).tolist(), step % 3)).save(progress=False)
        assert any(p.samefile(last) for p in ds.cache_meta.shard_paths), step  # still linked, never rewritten
        assert len(ds.cache_meta.shard_paths) <= 4, step  # the saves' own small files are still merged
