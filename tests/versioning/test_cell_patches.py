"""Issue 16: a relabel is a cell patch, not a rewritten row; every read, the digest, verify and compare agree."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import CacheCorruptionError
from stable_explore.versioning.row_diff import _joined_row_diff

FEATURES = se.Features(label=se.ClassLabel(names=["a", "b", "c"]), image=se.Value("binary"), x=se.Value("int64"))
ROWS = 6000


def _build(home: Path) -> se.CachedDataset:
    rows = ((f"k{i:05d}", {"label": i % 3, "image": bytes([i % 251]) * 300, "x": i}) for i in range(ROWS))
    return se.build(rows, FEATURES, name="p", home=home, progress=False, shard_size="500KB", batch_size=250)


def _check_reads(ds: se.CachedDataset, keys: list[str], labels: list[int], xs: list[int]) -> None:
    table = ds.to_arrow()
    assert ds.keys() == keys
    assert table.column("label").to_pylist() == labels
    assert table.column("x").to_pylist() == xs
    picks = list(range(0, len(keys), 37))[::-1]
    assert ds.select(picks).to_arrow().column("label").to_pylist() == [labels[i] for i in picks]
    assert ds.with_format("arrow")[100:900].to_arrow().column("label").to_pylist() == labels[100:900]
    assert ds.arrow_column("label").to_pylist() == labels
    assert [ds[i]["label"] for i in (0, len(keys) // 2, len(keys) - 1)] == [
        labels[0],
        labels[len(keys) // 2],
        labels[-1],
    ]
    counts = {name: labels.count(i) for i, name in enumerate("abc")}
    assert ds.label_counts() == {k: v for k, v in counts.items() if v}
    streamed = [label for batch in ds.with_format("arrow").iter(batch_size=512) for label in batch["label"].to_pylist()]
    assert streamed == labels


def test_a_chain_of_relabels_drops_and_sets_reads_right_everywhere(home: Path) -> None:
    ds = _build(home)
    keys = ds.keys()
    labels = [i % 3 for i in range(ROWS)]
    xs = list(range(ROWS))
    rng = np.random.default_rng(11)
    for step in range(24):
        rows = sorted(rng.choice(len(keys), 10, replace=False).tolist())
        if step % 6 == 2:
            ds = ds.drop(rows[:4]).save(progress=False)
            for row in reversed(rows[:4]):
                del keys[row], labels[row], xs[row]
        elif step % 6 == 4:  # a new value and a relabel of the same row: the row is written anew
            ds = ds.set(rows[0], "x", -1).relabel({rows[0]: "c", rows[1]: "b"}).save(progress=False)
            xs[rows[0]], labels[rows[0]], labels[rows[1]] = -1, 2, 1
        else:
            new = rng.integers(0, 3, 10).tolist()
            ds = ds.relabel(dict(zip(rows, new, strict=True))).save(progress=False)
            for row, label in zip(rows, new, strict=True):
                labels[row] = label
        _check_reads(ds, keys, labels, xs)
        fresh = se.load(ds.cache_dir)
        assert fresh.version == ds.version
        _check_reads(fresh, keys, labels, xs)
    patches = ds.cache_meta.cell_patches
    assert patches is not None
    assert len(patches) > 100
    assert se.verify(ds).num_rows == len(keys)
    assert not se.fsck(home=home).problems
    # the id is a function of the rows: a build of the same rows has it
    rebuilt = se.build(list(zip(keys, ds.to_arrow().select(list(FEATURES)).to_pylist(), strict=True)), FEATURES,
                       name="re", home=home, progress=False)  # fmt: skip
    assert rebuilt.version == ds.version
    assert rebuilt.to_arrow().equals(ds.to_arrow())


def test_compare_of_patched_versions_agrees_with_a_full_join(home: Path) -> None:
    first = _build(home)
    second = first.relabel({10: "c", 4000: "a", 5999: "b"}).drop([5, 3000]).save(progress=False)
    third = second.relabel({10: "a", 11: "c"}).save(progress=False)  # k00011 and k00012 (k00005 is gone)
    for a, b in ((first, second), (second, third), (first, third), (third, first)):
        fast, full = se.compare(a, b).rows, _joined_row_diff(a, b)
        assert sorted(fast.changed) == sorted(full.changed)
        assert sorted(fast.removed) == sorted(full.removed)
        assert fast.unchanged == full.unchanged
        assert fast.changed_fields == full.changed_fields
    diff = se.compare(first, third)
    assert diff.rows.changed == ["k00010", "k00011", "k00012", "k04000", "k05999"]
    assert diff.rows.changed_fields["k00011"] == {"label": ("c", "a")}
    assert diff.rows.changed_fields["k04000"] == {"label": ("b", "a")}
    assert se.compare(second, third).rows.changed == ["k00011", "k00012"]
    assert se.compare(third, third).identical


def test_relabelling_back_gives_the_parent_version(home: Path) -> None:
    first = _build(home)
    second = first.relabel({10: "c"}).save(progress=False)
    back = second.relabel({10: "b"}).save(progress=False)  # row 10 was "b" (10 % 3 == 1)
    assert back.version == first.version
    assert "identical content" in back.build_info


def test_a_label_only_save_writes_the_patches_not_the_rows(home: Path) -> None:
    ds = _build(home)
    saved = ds.relabel(dict.fromkeys(range(0, 6000, 600), "c")).save(progress=False)
    assert "wrote 0 new shard(s)" in saved.build_info
    new = {p.name: p.stat().st_size for p in saved.cache_dir.iterdir() if p.stat().st_nlink == 1}
    assert "cell-patches.json" in new
    assert set(new) <= {"_metadata.json", "cell-patches.json", "content-runs.json"}  # no shard, no batch file
    assert sum(new.values()) < 6 * 1024, new
    raw = json.loads((saved.cache_dir / "_metadata.json").read_text())
    assert raw["format_revision"] == 5
    # the rows did not move (every shard whole, in order), but their cells are patched: format 2,
    # which seed readers refuse instead of reading the old labels
    assert raw["cache_format_version"] == 2
    assert raw["row_segments"] == [[i, 0, rows] for i, rows in enumerate(raw["shard_row_counts"])]
    again = saved.relabel({1: "a", 2: "a"}).save(progress=False)
    patches = json.loads((again.cache_dir / "_metadata.json").read_text())["cell_patches"]
    assert (again.cache_dir / "cell-patches.json").samefile(saved.cache_dir / "cell-patches.json")  # linked
    assert patches["entries"] == 10
    assert sum(len(inserted) for _, _, inserted in patches["splices"]) == 2  # only this save's two entries


def test_a_pickled_patched_dataset_reads_its_patches(home: Path) -> None:
    saved = _build(home).relabel({7: "a", 8: "c"}).save(progress=False)
    copy = pickle.loads(pickle.dumps(saved))
    assert [copy[i]["label"] for i in (7, 8)] == [0, 2]
    assert copy.to_arrow().column("label").to_pylist() == saved.to_arrow().column("label").to_pylist()


def test_gc_keeps_a_childs_patches_file_when_its_parent_goes(home: Path) -> None:
    first = _build(home)
    second = first.relabel({1: "c"}).save(progress=False)
    third = second.relabel({2: "c"}).save(progress=False)
    se.gc("p", keep=0, home=home)
    last = se.load("p", home=home)
    assert last.version == third.version
    assert [last[i]["label"] for i in (1, 2)] == [2, 2]
    assert se.verify(last).num_rows == ROWS
    assert not se.fsck(home=home).problems


def _patched(home: Path) -> se.CachedDataset:
    return _build(home).relabel({5: "a", 6: "c"}).save(progress=False)


def test_a_damaged_or_missing_patches_file_is_named(home: Path) -> None:
    saved = _patched(home)
    path = saved.cache_dir / "cell-patches.json"
    data = bytearray(path.read_bytes())
    data[5] ^= 1
    path.unlink()
    path.write_bytes(bytes(data))
    with pytest.raises(CacheCorruptionError, match=r"cell-patches\.json"):
        se.load(saved.cache_dir).to_arrow()
    path.unlink()
    with pytest.raises(CacheCorruptionError, match=r"cell-patches\.json.*missing"):
        se.load(saved.cache_dir)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e[0].__setitem__(0, "xxh3_128:" + "0" * 32), "no shard has"),
        (lambda e: e.reverse(), "not in order"),
        (lambda e: e[-1].__setitem__(1, 10**9), "names row"),
        (lambda e: e[0].__setitem__(3, []), r"is not \[shard digest, row"),
    ],
)
def test_a_hand_edited_patch_entry_is_refused_by_name(home: Path, change: object, message: str) -> None:
    import xxhash

    from stable_explore.storage.write.writer import write_metadata

    saved = _patched(home)
    path = saved.cache_dir / "cell-patches.json"
    entries = json.loads(path.read_text())
    change(entries)  # type: ignore[operator]
    data = json.dumps(entries, separators=(",", ":")).encode()
    meta_path = saved.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    raw["cell_patches"].update(size=len(data), digest="xxh3_128:" + xxhash.xxh3_128_hexdigest(data))
    path.unlink()
    path.write_bytes(data)
    meta_path.unlink()
    write_metadata(saved.cache_dir, raw)  # resealed: only the entries' own checks can find it
    with pytest.raises(CacheCorruptionError, match=message):
        se.load(saved.cache_dir).to_arrow()


@pytest.mark.parametrize("patched_rows", [[3, 9_001], list(range(0, 20_000, 7))])
def test_applying_patches_keeps_batches_lined_up_and_nulls_where_they_were(patched_rows: list[int]) -> None:
    import pyarrow as pa

    from stable_explore.storage.format.cell_patches import CellPatches

    labels = [None if i % 5 == 0 else i % 3 for i in range(20_000)]
    table = pa.Table.from_batches(
        pa.table({"label": pa.array(labels, pa.int64()), "x": pa.array(range(20_000), pa.int64())}).to_batches(1000)
    )
    digest = "xxh3_128:" + "a" * 32
    patches = CellPatches([(digest, row, row, (("label", 7),)) for row in patched_rows])
    out = patches.apply(digest, table)
    assert [b.num_rows for b in out.to_batches()] == [1000] * 20  # the file's record batches, numbered as before
    expected = list(labels)
    for row in patched_rows:
        expected[row] = 7
    assert out.column("label").to_pylist() == expected
    assert out.column("x").to_pylist() == list(range(20_000))
    assert patches.apply("xxh3_128:" + "b" * 32, table) is table  # another shard: untouched
