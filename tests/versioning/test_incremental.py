"""Saves that cost what they change: digest runs redone only where edited, plans made of runs, old parents."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import CachedDataset, Features
from stable_explore.storage.format.hashing import ContentDigest, run_ends
from stable_explore.testing.caches import as_format_revision_2, as_format_revision_3
from stable_explore.versioning._plan import Link, Rewrite, base_runs, carried_ends, plan_rows, stale_digest_runs

ROWS = 70_000  # about 17 digest runs of 4,096 rows on average
FEATURES = Features(label=se.ClassLabel(names=["a", "b", "c"]), x=se.Value("int64"))


def _examples(n: int) -> list[tuple[str, dict[str, int]]]:
    return [(f"k{i:06d}", {"label": i % 3, "x": i}) for i in range(n)]


@pytest.fixture
def many(tmp_path: Path) -> CachedDataset:
    return se.build(
        _examples(ROWS), FEATURES, name="many", home=tmp_path, progress=False, batch_size=5000, shard_size="200KB"
    )


def _rebuild(ds: CachedDataset, home: Path) -> CachedDataset:
    table = ds.to_arrow()
    rows = zip(ds.keys(), table.select(["label", "x"]).to_pylist(), strict=True)
    return se.build(list(rows), FEATURES, name="rebuilt", home=home, progress=False, batch_size=777)


def test_a_chain_of_relabels_and_drops_has_the_ids_and_runs_of_a_rebuild(many: CachedDataset, tmp_path: Path) -> None:
    assert len(many.cache_meta.content_runs or []) > 1
    rng = np.random.default_rng(3)
    ds = many
    for step in range(6):
        rows = rng.choice(len(ds), 10, replace=False).tolist()
        draft = ds.relabel(dict.fromkeys(rows[:5], "c")) if step % 2 == 0 else ds.drop(rows)
        if step == 4:  # drop the first and last rows of a digest run: its boundary goes
            end = int(np.cumsum([r for r, _ in ds.cache_meta.content_runs or []])[0])
            draft = draft.drop([end - 1, end, len(ds) - 1])
        ds = draft.save(message=f"step {step}", progress=False)
    rebuilt = _rebuild(ds, tmp_path)
    assert rebuilt.version == ds.version
    assert rebuilt.cache_meta.content_runs == ds.cache_meta.content_runs
    assert ds.to_arrow().equals(rebuilt.to_arrow())
    assert se.verify(ds).num_rows == len(ds)
    assert not se.fsck(home=tmp_path).problems


def test_the_digest_does_not_depend_on_batches_and_runs_follow_the_rows() -> None:
    keys = pa.array([f"k{i}" for i in range(50_000)])
    hashes = np.random.default_rng(0).integers(0, 2**63, 50_000).astype(np.uint64)
    whole, pieces = ContentDigest(), ContentDigest()
    whole.update(keys, hashes)
    for start in range(0, 50_000, 1234):
        pieces.update(keys.slice(start, 1234), hashes[start : start + 1234])
    assert whole.hexdigest() == pieces.hexdigest()
    assert whole.runs == pieces.runs
    # dropping a row in the middle of a run changes that run only
    ends = np.cumsum([rows for rows, _ in whole.runs])
    middle = int(ends[0]) + 10
    dropped = ContentDigest()
    dropped.update(pa.concat_arrays([keys[:middle], keys[middle + 1 :]]), np.delete(hashes, middle))
    changed = [i for i, (a, b) in enumerate(zip(whole.runs, dropped.runs, strict=True)) if a != b]
    assert changed == [1]


def test_a_save_reads_only_the_runs_it_changed(many: CachedDataset, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.storage.check import verify

    fed: list[int] = []
    real = verify.feed_rows

    def counting(digest, paths, segments, start=0, stop=None, tables=None, **options):  # type: ignore[no-untyped-def]
        fed.append((stop if stop is not None else len(many)) - start)
        return real(digest, paths, segments, start, stop, tables, **options)

    monkeypatch.setattr("stable_explore.versioning._edit_writer.feed_rows", counting)
    saved = many.relabel({100: "c", 101: "c"}).save(progress=False)
    assert sum(fed) <= max(rows for rows, _ in many.cache_meta.content_runs or []) * 2
    assert sum(fed) < len(many) / 2
    assert se.verify(saved).num_rows == len(many)


def _hash_that_ends_a_run(key: str, rng: np.random.Generator) -> np.uint64:
    """A row hash with which the row of this key ends a run (about one in 4,096 does)."""
    candidates = rng.integers(0, 2**63, 50_000).astype(np.uint64)
    found = run_ends(pa.array([key] * candidates.size), candidates)
    return np.uint64(candidates[found[0]])


@pytest.mark.parametrize("seed", range(6))
def test_run_ends_carried_from_the_parent_give_the_runs_of_a_full_pass(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 30_000
    keys = pa.array([f"k{i:06d}" for i in range(n)])
    hashes = rng.integers(0, 2**63, n).astype(np.uint64)
    parent = ContentDigest()
    parent.update(keys, hashes)
    ends = np.cumsum([rows for rows, _ in parent.runs], dtype=np.int64)
    # drop and change random rows, rows that end runs, the first and the last; one changed row comes to end a run
    candidates = np.unique(np.concatenate([rng.choice(n, 30), rng.choice(ends - 1, 4), [0, n - 1]]))
    dropped = np.sort(rng.choice(candidates, candidates.size // 2, replace=False))
    changed = np.sort(rng.choice(candidates, candidates.size // 2, replace=False))  # some are dropped too
    edited = hashes.copy()
    edited[changed] = rng.integers(0, 2**63, changed.size).astype(np.uint64)
    newly_ending = int(np.setdiff1d(changed, dropped)[0])
    edited[newly_ending] = _hash_that_ends_a_run(keys[newly_ending].as_py(), rng)
    kept = np.setdiff1d(np.arange(n), dropped)
    child_keys, child_hashes = keys.take(pa.array(kept)), edited[kept]
    full = ContentDigest()
    full.update(child_keys, child_hashes)
    # what a save does: the stale groups digested again with the ends the parent gives, every other run kept
    runs: list[tuple[int, str]] = []
    done = 0
    for first, last in stale_digest_runs(ends, np.union1d(dropped, changed)):
        runs.extend(parent.runs[done:first])
        start, stop = (int(ends[first - 1]) if first else 0), int(ends[last])
        new_start, new_stop = (x - int(np.searchsorted(dropped, x)) for x in (start, stop))
        digest = ContentDigest(carried_ends(ends, first, last, dropped, changed))
        for at in range(new_start, new_stop, 777):  # in batches, as a save reads shards
            count = min(777, new_stop - at)
            digest.update(child_keys.slice(at, count), child_hashes[at : at + count])
        runs.extend(digest.runs)
        done = last + 1
    runs.extend(parent.runs[done:])
    assert runs == full.runs
    # the case a parent cannot tell: a changed row that now ends a run
    assert int(np.searchsorted(kept, newly_ending)) in (np.cumsum([rows for rows, _ in full.runs]) - 1).tolist()


def test_stale_groups_take_the_next_run_when_a_boundary_row_changes() -> None:
    ends = np.array([10, 20, 30, 40])
    assert stale_digest_runs(ends, np.array([], dtype=np.int64)) == []
    assert stale_digest_runs(ends, np.array([3])) == [(0, 0)]
    assert stale_digest_runs(ends, np.array([9])) == [(0, 1)]  # last row of run 0
    assert stale_digest_runs(ends, np.array([9, 19, 25])) == [(0, 2)]
    assert stale_digest_runs(ends, np.array([3, 35])) == [(0, 0), (3, 3)]
    assert stale_digest_runs(ends, np.array([39])) == [(3, 3)]  # the last run has nothing after it


def test_plans_link_unchanged_runs_and_rewrite_edited_rows() -> None:
    segments = [(0, 0, 100), (1, 0, 100)]
    offsets = np.array([0, 100, 200])
    plan = plan_rows(
        base_runs(None, 200),
        np.array([150]),
        np.array([10]),
        offsets,
        segments,
        can_link=True,
        min_linked_rows=1,
    )
    assert plan == [Link(0, 0, 10, 0), Rewrite(10, 1), Link(0, 11, 89, 11), Link(1, 0, 50, 100), Link(1, 51, 49, 151)]
    assert base_runs(np.array([5, 6, 7, 2, 3]), 10) == [(0, 5, 3), (3, 2, 2)]
    assert base_runs(range(3, 9), 10) == [(0, 3, 6)]


def test_a_revision_2_parent_still_loads_verifies_and_saves(many: CachedDataset, tmp_path: Path) -> None:
    old_dir = as_format_revision_2(many.cache_dir)
    old = se.load("many", home=tmp_path)
    assert old.cache_dir == old_dir
    raw = json.loads((old_dir / "_metadata.json").read_text())
    assert raw["format_revision"] == 2
    assert raw["content_digest"].startswith("xxh3_128:")
    assert old.cache_meta.content_runs is None
    assert se.verify(old).num_rows == ROWS  # checked with the digest it was written with
    names = old.features["label"].names
    other = next(n for n in names if n != names[old[5]["label"]])  # a real relabel, not the class it has
    saved = old.relabel({5: other}).drop([7]).save(progress=False)
    assert saved.cache_meta.format_revision == 5  # the relabel is a cell patch
    assert saved.cache_meta.content_runs is not None
    assert saved.version == _rebuild(saved, tmp_path).version
    assert not se.fsck(home=tmp_path).problems


def test_a_revision_3_parent_keeps_its_id_loads_verifies_and_saves(many: CachedDataset, tmp_path: Path) -> None:
    runs = many.cache_meta.content_runs
    old_dir = as_format_revision_3(many.cache_dir)
    raw = json.loads((old_dir / "_metadata.json").read_text())
    assert raw["format_revision"] == 3
    assert isinstance(raw["content_runs"], list)
    assert isinstance(raw["batch_digests"][0]["digests"], list)
    assert sorted(p.name for p in old_dir.iterdir() if not p.name.endswith(".arrow")) == ["_metadata.json"]
    old = se.load("many", home=tmp_path)
    assert old.version == many.version  # the content digest did not change in revision 4
    assert old.cache_meta.content_runs == runs
    assert se.verify(old).num_rows == ROWS
    saved = old.relabel({5: "a"}).drop([7]).save(progress=False)
    assert saved.cache_meta.format_revision == 5
    assert saved.version == _rebuild(saved, tmp_path).version
    assert saved[5]["label"] == FEATURES["label"].names.index("a")
    assert not se.fsck(home=tmp_path).problems


def test_a_newer_format_revision_is_refused_by_name(many: CachedDataset) -> None:
    path = many.cache_dir / "_metadata.json"
    raw = json.loads(path.read_text())
    raw["format_revision"] = 99
    path.write_text(json.dumps(raw))
    with pytest.raises(se.CacheCorruptionError, match=r"format revision 99 .* newer stable-explore"):
        se.load(many.cache_dir)


def test_fifty_small_saves_keep_files_and_pieces_bounded(tmp_path: Path) -> None:
    ds = se.build(_examples(6000), FEATURES, name="chain", home=tmp_path, progress=False, shard_size="64KB")
    rng = np.random.default_rng(11)
    for step in range(50):
        rows = rng.choice(len(ds), 10, replace=False).tolist()
        draft = ds.relabel(dict.fromkeys(rows, "abc"[step % 3])) if step % 5 else ds.drop(rows[:2])
        ds = draft.save(progress=False)
        assert len(ds.cache_meta.segments) <= 64 + 3 * 10  # compacted past 64; a save adds 3 per edit at most
        largest = max(ds.cache_meta.shard_row_counts)
        assert sum(1 for rows in ds.cache_meta.shard_row_counts if rows < largest // 8) <= 2 + 1
    rebuilt = _rebuild(ds, tmp_path)
    assert rebuilt.version == ds.version
    assert ds.to_arrow().equals(rebuilt.to_arrow())  # a slice over many segments reads the same rows
    assert ds.with_format("arrow")[100:5000].to_arrow().equals(rebuilt.with_format("arrow")[100:5000].to_arrow())
    assert se.verify(ds).num_rows == len(ds)
    assert not se.fsck(home=tmp_path).problems


def test_a_label_only_save_of_100k_image_rows_writes_a_few_kilobytes(tmp_path: Path) -> None:
    from stable_explore.testing.caches import _png, tiny_features

    pool = [_png(i, 24) for i in range(64)]  # about 1.8 KB each, made distinct per row below
    rows = (
        (f"row-{i:06d}", {"image": pool[i % 64] + i.to_bytes(4, "little"), "label": i % 3, "score": i, "name": "n"})
        for i in range(100_000)
    )
    ds = se.build(rows, tiny_features(), name="big", home=tmp_path, progress=False, shard_size="8MB")
    assert ds.num_shards > 10
    edits = dict.fromkeys(np.random.default_rng(2).choice(100_000, 10, replace=False).tolist(), "dog")
    saved = ds.relabel(edits).save(progress=False)
    written = sum(p.stat().st_size for p in saved.cache_dir.iterdir() if p.stat().st_nlink == 1)
    # the metadata and ten cell patches: not the rows' images (ten rewritten rows with images wrote about 26 KB)
    assert written < 8 * 1024, written
    assert "wrote 0 new shard(s)" in saved.build_info
    assert [saved[i]["label"] for i in sorted(edits)] == [1] * 10


def test_compare_reads_only_rows_outside_shared_pieces_and_agrees_with_a_full_join(many: CachedDataset) -> None:
    from stable_explore.versioning._shared import unshared_rows
    from stable_explore.versioning.row_diff import _joined_row_diff

    child = many.relabel({10: "c", 40_000: "a", 69_999: "b"}).drop([5, 6, 50_000]).save(progress=False)
    grandchild = child.relabel({100: "b"}).save(progress=False)
    for a, b in ((many, child), (child, many), (many, grandchild)):
        found = unshared_rows(a.cache_meta, b.cache_meta)
        assert found is not None
        rest_a, rest_b, shared = found
        assert len(rest_a) + len(rest_b) < 50
        assert shared + len(rest_a) == len(a)
        fast, full = se.compare(a, b).rows, _joined_row_diff(a, b)
        assert fast.changed == full.changed
        assert sorted(fast.removed) == sorted(full.removed)
        assert sorted(fast.added) == sorted(full.added)
        assert fast.unchanged == full.unchanged
        assert sorted(fast.changed_rows) == sorted(full.changed_rows)
        assert sorted(fast.removed_rows) == sorted(full.removed_rows)
        assert sorted(fast.added_rows) == sorted(full.added_rows)
        assert fast.changed_fields == full.changed_fields
    assert se.compare(many, child).rows.changed_fields["k040000"] == {"label": ("b", "a")}
    expected = se.compare(many, child).rows.changed
    old = se.load(as_format_revision_2(many.cache_dir))  # an older format: every key is joined, same answer
    assert unshared_rows(old.cache_meta, child.cache_meta) is None
    assert se.compare(old, child).rows.changed == expected


def test_a_label_only_save_of_200k_tiny_rows_rewrites_a_compact_metadata_file(tmp_path: Path) -> None:
    ds = se.build(_examples(200_000), FEATURES, name="tiny", home=tmp_path, progress=False, shard_size="64MB")
    edits = dict.fromkeys(np.random.default_rng(3).choice(200_000, 10, replace=False).tolist(), "c")
    saved = ds.relabel(edits).save(progress=False)
    new_files = [p for p in saved.cache_dir.iterdir() if p.stat().st_nlink == 1]
    assert sorted(p.name for p in new_files) == ["_metadata.json", "cell-patches.json"]  # no row is rewritten
    meta_path = saved.cache_dir / "_metadata.json"
    text = meta_path.read_text(encoding="utf-8")
    raw = json.loads(text)
    compact = len(json.dumps(raw, separators=(",", ":")))
    assert len(text) <= compact + 2 * len(raw) + 4, (len(text), compact)  # one field a line, nothing indented
    # what is left is per record batch and per digest run (issue 16: batch digests beside shards would drop it)
    assert meta_path.stat().st_size < 20_000, meta_path.stat().st_size
    assert sum(p.stat().st_size for p in new_files) < 22_000
    assert [saved[i]["label"] for i in sorted(edits)] == [2] * 10
    assert se.verify(saved).num_rows == 200_000
