"""Drafts: drop, relabel, set; saving new versions that reuse unchanged shards; lineage."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import CachedDataset, EncodingError, Features
from tests.conftest import NAMES, write_seed_v1_cache


def test_drafts_are_lazy_and_chainable(pets: CachedDataset) -> None:
    draft = pets.drop([3, 17]).relabel({42: "dog"}).set(44, "name", "renamed")
    assert len(draft) == 298
    edits = draft.pending_edits
    assert edits.dropped == {3, 17}
    assert edits.relabelled == {(42, "label"): 1}
    assert edits.values == {(44, "name"): "renamed"}
    assert "drop 2, relabel 1, set 1 value(s)" in repr(draft)
    assert not pets.pending_edits
    assert len(se.versions("pets", home=pets.cache_dir.parents[2])) == 1  # nothing written
    # each call returns a new draft; the earlier one is unchanged
    first = pets.drop([1])
    first.drop([2])
    assert first.pending_edits.dropped == {1}


def test_a_relabel_to_the_class_a_row_has_is_no_pending_edit(pets: CachedDataset) -> None:
    current = pets[7]["label"]  # a dog
    same = pets.relabel({7: current})
    assert not same.pending_edits
    assert "relabel" not in repr(same)
    changed = same.relabel({7: "bird", 8: pets[8]["label"]})
    assert changed.pending_edits.relabelled == {(7, "label"): pets.features["label"].encode_value("bird")}
    assert "relabel 1" in repr(changed)
    back = changed.relabel({7: current})  # back to its class: the earlier edit is undone
    assert not back.pending_edits
    assert back.save(message="nothing").version == pets.version


def test_drop_then_relabel_equals_relabel_then_drop(pets: CachedDataset) -> None:
    one = pets.drop([3, 17]).relabel({42: "dog"}).save(message="a")
    two = pets.relabel({42: "dog"}).drop([3, 17]).save(message="a")
    assert one.version == two.version
    assert len(one) == 298
    keys = one.keys()
    assert "pet-00003" not in keys
    assert "pet-00017" not in keys
    assert one[keys.index("pet-00042")]["label"] == 1


def test_save_records_parent_operations_and_lineage(pets: CachedDataset) -> None:
    home = pets.cache_dir.parents[2]
    clean = pets.drop([3]).relabel({6: "bird", 7: "dog"}).save(message="remove blurry, fix 6", tag="clean")
    meta = clean.metadata
    assert meta["parent"] == pets.version
    assert meta["message"] == "remove blurry, fix 6"
    assert meta["operations"] == [
        {"op": "drop", "keys": ["pet-00003"]},
        {"op": "relabel", "column": "label", "changes": [["pet-00006", "cat", "bird"]]},
    ]  # row 7 was a dog already: not an edit
    assert se.load("pets@clean", home=home).version == clean.version
    assert se.load("pets", home=home).version == clean.version
    table = se.versions("pets", home=home)
    assert table[0]["version"] == clean.version
    assert table[0]["parent"] == pets.version
    assert table[0]["message"] == "remove blurry, fix 6"
    # loading the parent is the undo
    undo = se.load(f"pets@{meta['parent']}", home=home)
    assert len(undo) == 300
    assert undo[6]["label"] == 0
    assert se.verify(clean).num_rows == 299


def test_unchanged_shards_are_reused_not_rewritten(pets: CachedDataset) -> None:
    clean = pets.set(120, "score", -1.0).set(121, "score", -2.0).save(message="two values")
    assert "wrote 1 new shard(s)" in clean.build_info
    assert "reused 6 of the parent's" in clean.build_info  # shard 2 too: its other rows are read from it
    old_files = pets.cache_dir
    new_files = clean.cache_meta.shard_paths
    for i in range(6):  # hard links (the new file's place among them is the writer's choice)
        assert any(new.samefile(old_files / f"shard-{i:05d}.arrow") for new in new_files)
    written = [p for p in new_files if p.stat().st_nlink == 1]
    assert [clean.cache_meta.shard_row_counts[new_files.index(p)] for p in written] == [2]  # the two edited rows
    assert clean[120]["score"] == -1.0
    assert clean.HASHES["shards"]["shard-00000.arrow"] == pets.HASHES["shards"]["shard-00000.arrow"]
    # gc of the parent frees only what the child does not share
    home = pets.cache_dir.parents[2]
    freed = se.gc("pets", keep=0, home=home)
    assert 0 < freed < pets.nbytes / 3
    assert se.load("pets", home=home)[120]["score"] == -1.0


def test_set_changes_a_scalar_and_checks_it(pets: CachedDataset) -> None:
    saved = pets.set(5, "score", 99.5).set(6, "label", "bird").save()
    assert saved[5]["score"] == 99.5
    assert saved[6]["label"] == 2
    with pytest.raises(EncodingError, match=r"row 5, field 'score': expected float32"):
        pets.set(5, "score", "high")
    with pytest.raises(EncodingError, match=r"row 5, field 'image'"):  # any field, checked as a build checks it
        pets.set(5, "image", b"x")
    with pytest.raises(KeyError, match="no column"):
        pets.set(5, "nope", 1)
    with pytest.raises(EncodingError, match=r"field 'label'.*unknown class 'cow'"):
        pets.relabel({1: "cow"})
    with pytest.raises(IndexError, match="out of range"):
        pets.drop([300])


def test_a_view_saves_its_own_rows_in_its_order(pets: CachedDataset) -> None:
    birds = pets.filter(label="bird")
    saved = birds.drop([0]).save(message="birds but the first")
    assert len(saved) == 99
    assert saved.label_counts() == {"cat": 0, "dog": 0, "bird": 99}
    assert saved.keys()[0] == "pet-00005"
    reordered = pets[[10, 5, 0]].save(message="three")
    assert reordered.keys() == ["pet-00010", "pet-00005", "pet-00000"]
    assert reordered.metadata["parent"] == pets.version


def test_no_edits_gives_the_same_version(pets: CachedDataset) -> None:
    same = pets.relabel({1: "dog"}).save()  # row 1 is a dog already
    assert same.version == pets.version
    assert "nothing to save: no edits" in same.build_info  # and no version was published


def test_dropping_everything_and_negative_rows(pets: CachedDataset) -> None:
    last = pets.drop([-1]).save()
    assert len(last) == 299
    assert last.keys()[-1] == "pet-00298"
    empty = pets.drop(range(300)).save(message="nothing left")
    assert len(empty) == 0
    assert empty.num_shards == 0


def test_drop_takes_a_boolean_mask_as_indexing_does(pets: CachedDataset) -> None:
    """drop(mask) dropped rows 0 and 1 (each True and False read as a row number), whatever the mask said."""
    labels = np.asarray(pets["label"])
    mask = labels == 2
    assert len(pets[mask]) == int(mask.sum()) == 100
    kept = pets.drop(mask).save(message="no birds")
    assert len(kept) == 200
    assert kept.label_counts()["bird"] == 0
    assert len(pets.drop(mask.tolist())) == 200  # a list of flags too
    frame = pets.to_pandas(images="drop")
    assert pets.drop(frame["label"] == "bird").save(message="no birds").version == kept.version  # pandas' mask too
    with pytest.raises(se.RowIndexError, match=r"a boolean mask needs one flag per row: 300 for pets@\w+, got 299"):
        pets.drop(mask[:-1])


@pytest.mark.parametrize("row", ["pet-00003", 2.5, True, None])
def test_a_row_that_is_no_row_number_is_named(pets: CachedDataset, row: object) -> None:
    """Keys, fractions and flags were read with int(): 'pet-00003' raised int()'s ValueError, 2.5 edited row 2."""
    words = r"rows are row numbers \(ints\) of pets@\w+, got .*; to edit a row by its key, use ds\.keys\(\)\.index"
    edits = [lambda: pets.relabel({row: "dog"}), lambda: pets.set(row, "label", "dog")]  # type: ignore[dict-item]
    if not isinstance(row, bool):  # drop([True]) is a mask, of one flag
        edits.append(lambda: pets.drop([row]))  # type: ignore[list-item]
    for edit in edits:
        with pytest.raises(se.InvalidArgumentTypeError, match=words):
            edit()
    assert len(pets.drop([3.0])) == 299  # a whole float is that row


def test_seed_v1_caches_save_as_full_versions(tmp_path: Path, jpegs: list[bytes]) -> None:
    write_seed_v1_cache(
        tmp_path / "seed",
        [pa.table({"image": pa.array(jpegs[:5], pa.binary()), "label": pa.array([0, 1, 2, 1, 0], pa.int64())})],
    )
    features = Features(image=se.Image(), label=se.ClassLabel(names=NAMES))
    seed = se.load(tmp_path / "seed", features=features)
    with pytest.raises(ValueError, match="dataset name"):
        seed.drop([0]).save()  # opened by path: it needs a name in a catalog
    saved = seed.drop([0]).save(name="imported", message="import seed cache")
    assert len(saved) == 4
    assert saved.keys() == [1, 2, 3, 4]
    assert saved.label_counts() == {"cat": 1, "dog": 2, "bird": 1}
    assert se.verify(saved).num_rows == 4


def test_interrupted_save_leaves_nothing(pets: CachedDataset, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.versioning import _edit_writer

    def boom(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_edit_writer.EditWriter, "_edited_arrays", boom)  # relabels and rewrites both read rows
    with pytest.raises(KeyboardInterrupt):
        pets.drop([3]).relabel({5: "dog"}).save()
    versions_dir = pets.cache_dir.parent
    assert sorted(p.name for p in versions_dir.iterdir() if not p.name.startswith(".")) == [pets.version]
    assert [p for p in versions_dir.iterdir() if ".tmp-" in p.name] == []
    assert np.array_equal(se.load("pets", home=pets.cache_dir.parents[2]).base_rows(), np.arange(300))


def _rebuilt(saved: CachedDataset) -> CachedDataset:
    """A build of ``saved``'s rows (keys, labels and x) in the same home."""
    rows = ((k, {"label": r["label"], "x": r["x"]}) for k, r in zip(saved.keys(), saved, strict=True))
    return se.build(rows, saved.features, name="big", home=saved.cache_dir.parents[2], progress=False)


def test_scattered_relabels_patch_cells_and_write_no_rows(big_shards: CachedDataset) -> None:
    saved = big_shards.relabel({10: "bird", 1500: "bird", 1999: "cat"}).save(message="three labels")
    assert "wrote 0 new shard(s)" in saved.build_info
    raw = json.loads((saved.cache_dir / "_metadata.json").read_text())
    assert raw["cache_format_version"] == 2  # every file whole and in order, but patched: seed readers refuse it
    assert raw["row_segments"] == [[i, 0, rows] for i, rows in enumerate(raw["shard_row_counts"])]
    assert raw["format_revision"] == 5
    assert raw["cell_patches"]["entries"] == 3
    assert all((saved.cache_dir / n).stat().st_nlink > 1 for n in raw["shard_filenames"])
    assert [saved[i]["label"] for i in (10, 1500, 1999, 11)] == [2, 2, 0, big_shards[11]["label"]]
    assert saved.to_arrow().column("label").to_pylist()[1999] == 0
    assert saved.label_counts()["bird"] == big_shards.label_counts()["bird"] + 2
    assert se.verify(saved).num_rows == 2000
    assert se.compare(big_shards, saved).rows.changed == ["k0010", "k1500", "k1999"]
    # the version id depends on the rows, not on how they are stored: a build of the same rows has it
    assert _rebuilt(saved).version == saved.version


def test_scattered_sets_write_only_the_changed_rows(big_shards: CachedDataset) -> None:
    assert big_shards.num_shards == 2
    saved = big_shards.set(10, "x", -10).set(1500, "x", -1500).set(1999, "x", -1999).save(message="three values")
    assert "wrote 1 new shard(s)" in saved.build_info
    assert "reused 2 of the parent's" in saved.build_info
    raw = json.loads((saved.cache_dir / "_metadata.json").read_text())
    assert raw["cache_format_version"] == 2  # rows are runs of shards: seed 000's reader must refuse it
    new_files = [n for n in raw["shard_filenames"] if (saved.cache_dir / n).stat().st_nlink == 1]
    assert len(new_files) == 1
    new_rows = raw["shard_row_counts"][raw["shard_filenames"].index(new_files[0])]
    # only the changed rows: every unchanged run is read from the parent's files, however short
    assert new_rows == 3
    assert (saved.cache_dir / new_files[0]).stat().st_size < big_shards.nbytes / 20
    assert saved.keys() == big_shards.keys()
    assert [saved[i]["x"] for i in (10, 1500, 1999)] == [-10, -1500, -1999]
    assert [saved[i]["x"] for i in (0, 9, 11, 1000, 1998)] == [0, 9, 11, 1000, 1998]
    assert saved.label_counts() == big_shards.label_counts()
    assert se.verify(saved).num_rows == 2000
    diff = se.compare(big_shards, saved)
    assert diff.rows.changed == ["k0010", "k1500", "k1999"]
    # the version id depends on the rows, not on how they are stored: a build of the same rows has it
    assert _rebuilt(saved).version == saved.version


def test_a_segmented_version_reads_edits_pickles_and_browses(big_shards: CachedDataset) -> None:
    first = big_shards.relabel({500: "dog"}).save()
    second = first.drop([501, 502]).relabel({1200: "cat"}).save(message="chained")
    assert len(second) == 1998
    keys = second.keys()
    assert "k0501" not in keys
    assert second[keys.index("k0500")]["label"] == 1
    assert second[keys.index("k1200")]["label"] == 0
    assert second.metadata["parent"] == first.version
    frame = second.to_pandas()
    assert frame["x"].tolist()[:5] == [0, 1, 2, 3, 4]
    assert len(frame) == 1998
    clone = pickle.loads(pickle.dumps(second))
    assert clone[1997]["x"] == 1999
    assert sum(second.shard_row_counts) == 1998
    rows = np.random.default_rng(0).integers(0, 1998, 3000)
    assert second.select(rows).to_pandas()["x"].tolist() == frame["x"].to_numpy()[rows].tolist()
    pytest.importorskip("anywidget")
    browser = second.browse(page_size=24)
    assert browser.num_rows == 1998
    browser.shard = second.num_shards - 1
    assert browser.num_rows == second.shard_row_counts[-1]


def test_saving_shows_progress(big_shards: CachedDataset, capsys: pytest.CaptureFixture[str]) -> None:
    big_shards.relabel({10: "bird"}).save(message="with a bar")
    err = capsys.readouterr().err
    assert "saving big" in err
    assert "2.00k" in err or "2000" in err


def test_a_dataset_attribute_of_a_draft_says_to_save_it_first(pets: CachedDataset) -> None:
    from stable_explore import signals

    draft = pets.drop([0])
    with pytest.raises(AttributeError, match=r"a Draft has no 'features'.*draft\.save\(message=\.\.\.\)"):
        signals.image_stats(draft)  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match=r"a Draft has no 'to_pandas'.*draft\.origin\.to_pandas"):
        draft.to_pandas()
    with pytest.raises(AttributeError, match=r"'Draft' object has no attribute 'no_such_thing'"):
        draft.no_such_thing  # noqa: B018
    assert not hasattr(draft, "features")
    assert pickle.loads(pickle.dumps(draft)).pending_edits.dropped == draft.pending_edits.dropped
