"""ds.map and ds.add_columns: a new version that writes only the new columns, cached like a build."""

from __future__ import annotations

import json
import pickle
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.storage.format.cache_meta import GROUPS_FORMAT_REVISION, SEGMENTED_FORMAT_VERSION

FEATURES = se.Features(blob=se.Value("binary"), x=se.Value("int64"), label=se.ClassLabel(names=["cat", "dog"]))
OFFSET = 100  # a global a mapped function reads: changing it must recompute the map


def _rows(n: int) -> list[tuple[str, dict[str, object]]]:
    return [(f"k{i:06d}", {"blob": bytes([i % 251]) * 200, "x": i, "label": i % 2}) for i in range(n)]


def _build(home: Path, n: int = 3000, name: str = "pets") -> se.CachedDataset:
    return se.build(_rows(n), FEATURES, name=name, home=home, shard_size="64KB", batch_size=250, progress=False)


def _new_bytes(ds: se.CachedDataset) -> dict[str, int]:
    """Files of the version written for it (not hard links to its parent's), by name, without the metadata."""
    out = {}
    for path in ds.cache_dir.iterdir():
        if path.name != "_metadata.json" and path.stat().st_nlink == 1:
            out[path.name] = path.stat().st_size
    return out


def _scored(i: int) -> float:
    return i / 7


def score(row: dict) -> dict:
    return {"score": _scored(row["x"])}


def shifted(batch: dict) -> dict:
    return {"shifted": [x + OFFSET for x in batch["x"]]}


# -- what is written ------------------------------------------------------------------------


def test_adding_a_float_column_writes_about_8_bytes_a_row(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=20_000)
    more = ds.add_columns({"score": np.arange(20_000) / 3}, progress=False)
    written = _new_bytes(more)
    groups = {name: size for name, size in written.items() if name.endswith(".arrow")}
    assert groups
    assert all(name.startswith("group-001-") for name in groups)
    assert 8 * 20_000 <= sum(groups.values()) <= 8 * 20_000 * 1.05 + 1024 * len(groups)
    # the rest are small: batch digests of the group files and the runs of the new content digest
    assert sum(written.values()) - sum(groups.values()) < 16 * 1024
    # every shard file (and its batch digests) is the parent's, linked
    for name in more.cache_meta.shard_filenames:
        assert (more.cache_dir / name).stat().st_ino == (ds.cache_dir / name).stat().st_ino
    assert more.nbytes == ds.nbytes + sum(groups.values())  # the shards, as before, and the group files
    meta = json.loads((more.cache_dir / "_metadata.json").read_text())
    assert meta["format_revision"] == GROUPS_FORMAT_REVISION
    assert meta["cache_format_version"] == SEGMENTED_FORMAT_VERSION  # seed readers refuse it, as they should
    assert list(meta["features"]) == ["blob", "x", "label", "score"]
    assert meta["column_groups"]["base_features"] == FEATURES.to_dict()
    (group,) = meta["column_groups"]["groups"]
    assert [f["rows"] for f in group["files"]] == ds.cache_meta.shard_row_counts  # one file per shard
    assert more.build_info.startswith("saved: added score; wrote 40 group file(s)")


def test_the_version_id_is_the_one_a_build_of_the_same_rows_gives(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=800)
    added = ds.add_columns({"score": [i / 7 for i in range(800)]}, progress=False)
    features = se.Features({**FEATURES, "score": se.Value("float64")})
    rows = [(k, {**row, "score": row["x"] / 7}) for k, row in _rows(800)]
    built = se.build(rows, features, name="direct", home=tmp_path, progress=False)
    assert added.version == built.version
    # a replaced column (mid-row) too: its group stores the rows' hashes
    replaced = added.add_columns({"x": np.arange(800) * 2}, progress=False)
    assert replaced.features["x"] == se.Value("int64")
    assert replaced.cache_meta.column_groups is not None
    assert [g.row_hash for g in replaced.cache_meta.column_groups.groups] == [False, True]
    rows = [(k, {**row, "x": row["x"] * 2}) for k, row in rows]
    assert replaced.version == se.build(rows, features, name="direct2", home=tmp_path, progress=False).version
    assert replaced[5]["x"] == 10
    assert replaced.row_hashes().tolist() == se.load("direct2", home=tmp_path).row_hashes().tolist()
    assert se.verify(replaced).num_rows == 800


def test_reads_join_by_position_everywhere(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=1200)
    more = ds.add_columns({"score": np.arange(1200) / 2, "emb": np.ones((1200, 3), dtype=np.float32)}, progress=False)
    assert more.features["emb"] == se.Sequence(se.Value("float32"), length=3)
    assert more[7]["score"] == 3.5
    assert more[7]["x"] == 7
    assert more[7]["emb"] == [1.0, 1.0, 1.0]
    view = more[::-3]
    assert [r["score"] for r in view][:2] == [599.5, 598.0]
    assert more.select([3, 1100])["score"] == [1.5, 550.0]
    frame = more.to_pandas()
    assert list(frame.columns) == ["blob", "x", "label", "score", "emb"]
    assert frame["score"].iloc[999] == 499.5
    batches = list(more.iter(batch_size=500))
    assert sum(len(b["score"]) for b in batches) == 1200
    assert batches[2]["score"][0] == 500.0
    assert more.filter(lambda row: row["score"] > 599)["x"] == [1199]
    assert more.arrow_column("score").to_pylist()[:3] == [0.0, 0.5, 1.0]
    assert more.label_counts() == ds.label_counts()
    again = pickle.loads(pickle.dumps(more[10:20]))
    assert again[0]["score"] == 5.0
    assert again.version == more.version
    shard = more.shard(2, 1)
    assert [r["score"] for r in shard] == [r["score"] for r in more if r["x"] in set(shard["x"])]
    assert more.backend.take([0], columns=["__key__", "score"]).to_pydict() == {"__key__": ["k000000"], "score": [0.0]}


def test_compare_shows_the_added_and_the_replaced_columns(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=600)
    more = ds.add_columns({"score": np.zeros(600)}, progress=False)
    diff = se.compare(ds, more)
    assert diff.schema["columns_added"] == ["score"]
    assert "score" in str(diff)
    replaced = more.add_columns({"x": np.arange(600) + 1}, progress=False)
    changed = se.compare(more, replaced)
    assert len(changed.rows.changed) == 600
    assert "x: 0 -> 1" in str(changed)
    assert se.compare(replaced, se.load(f"pets@{replaced.version}", home=tmp_path)).identical


# -- map: a cache decision like a build ----------------------------------------------------


def test_map_again_is_a_hit_and_a_changed_function_or_global_says_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(tmp_path, n=500)
    first = ds.map(score, progress=False)
    assert first.build_info.startswith(f"computed: first map of score on pets@{ds.version}")
    assert first["score"][:3] == [0.0, 1 / 7, 2 / 7]
    hit = ds.map(score, progress=False)
    assert hit.version == first.version
    assert hit.build_info == "reused: same function, parent version and features"
    forced = ds.map(score, force=True, progress=False)
    assert forced.build_info.startswith("recomputed: force=True")
    assert forced.version == first.version
    batched = ds.map(shifted, batched=True, batch_size=64, progress=False)
    assert batched["shifted"][:2] == [100, 101]
    monkeypatch.setattr(f"{__name__}.OFFSET", 1000)
    again = ds.map(shifted, batched=True, batch_size=64, progress=False)
    assert again.build_info.startswith("recomputed: variable 'OFFSET' changed")
    assert again["shifted"][:2] == [1000, 1001]
    # on another parent: the same function maps again
    other = first.map(shifted, batched=True, progress=False)
    assert other.metadata["parent"] == first.version
    assert other.metadata["operations"] == [{"op": "map", "function": "shifted", "columns": ["shifted"]}]
    assert list(other.features)[-2:] == ["score", "shifted"]


def test_a_map_made_batched_says_so_once(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=20)
    ds.map(lambda row: {"double": 2 * row["label"]}, progress=False)
    batched = ds.map(lambda rows: {"double": [2 * v for v in rows["label"]]}, batched=True, progress=False)
    assert batched.build_info.startswith("recomputed: function source changed; batched changed (False -> True);")
    assert batched.build_info.count("batched changed") == 1, batched.build_info


def test_map_in_processes_or_on_an_executor_gives_the_serial_version(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=900)
    serial = ds.map(score, batch_size=100, progress=False)
    parallel = ds.map(score, batch_size=100, num_proc=2, force=True, progress=False)
    with ThreadPoolExecutor(max_workers=3) as pool:
        on_pool = ds.map(score, batch_size=100, executor=pool, force=True, progress=False)
    assert serial.version == parallel.version == on_pool.version
    assert on_pool["score"] == serial["score"]


def test_map_in_processes_under_a_main_module_without_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An IPython shell started inside a script leaves a __main__ without __spec__: the workers still start."""
    main = types.ModuleType("__main__")
    del main.__spec__
    monkeypatch.setitem(sys.modules, "__main__", main)
    ds = _build(tmp_path, n=300)
    mapped = ds.map(score, batch_size=50, num_proc=2, progress=False)
    assert mapped["score"] == [i / 7 for i in range(300)]


def test_map_errors_name_the_row_and_the_column_and_save_nothing(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=300)
    before = str(se.versions("pets", home=tmp_path))

    def fails(row: dict) -> dict:
        if row["x"] == 123:
            raise ZeroDivisionError("bad row")
        return {"y": row["x"]}

    with pytest.raises(ZeroDivisionError) as caught:
        ds.map(fails, progress=False)
    assert any("failed on row 123" in note for note in caught.value.__notes__)

    def uneven(row: dict) -> dict:
        return {"y": 1} if row["x"] < 10 else {"z": 1}

    with pytest.raises(se.SchemaError, match="returned columns \\['z'\\] for row 10"):
        ds.map(uneven, progress=False)

    def wrong_type(row: dict) -> dict:
        return {"y": 1 if row["x"] != 42 else "forty-two"}

    with pytest.raises(se.EncodingError) as encoding:
        ds.map(wrong_type, features={"y": se.Value("int64")}, progress=False)
    assert encoding.value.field == "y"
    assert encoding.value.index == 42
    with pytest.raises(se.EncodingError, match="'score' has 3 values, but pets@"):
        ds.add_columns({"score": [1.0, 2.0, 3.0]}, progress=False)
    with pytest.raises(se.SchemaError, match="reserved"):
        ds.add_columns({"__key__": list(range(300))}, progress=False)
    with pytest.raises(ZeroDivisionError):  # on a view: the view's rows saved for the map are taken back
        ds[100:130].map(fails, progress=False)
    assert str(se.versions("pets", home=tmp_path)) == before
    assert not [p for p in (tmp_path / "pets" / "versions").iterdir() if p.name.startswith(".")]


# -- versions of column groups: save, gc, verify, fsck -------------------------------------


def test_a_save_on_top_keeps_the_columns_and_the_id_of_the_same_rows(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=1000)
    more = ds.map(score, progress=False)
    clean = more.drop([0, 500]).relabel({3: "cat"}).set(4, "score", -1.0).save(message="fix", progress=False)
    assert len(clean) == 998
    assert clean[2] == {**more[3], "label": 0}
    assert clean[3]["score"] == -1.0
    rows = [(k, {**row, "score": row["x"] / 7}) for k, row in _rows(1000)]
    rows[3][1]["label"] = 0
    rows[4][1]["score"] = -1.0
    kept = [r for i, r in enumerate(rows) if i not in (0, 500)]
    features = se.Features({**FEATURES, "score": se.Value("float64")})
    assert clean.version == se.build(kept, features, name="direct", home=tmp_path, progress=False).version
    assert "score again" in clean.build_info
    assert se.verify(clean).num_rows == 998
    assert len(clean.cache_meta.column_groups.groups) == 1  # type: ignore[union-attr]
    view = more[::2].save(name="half", progress=False)
    assert view["score"][:2] == [0.0, 2 / 7]
    assert len(view) == 500


def test_gc_fsck_and_verify_know_the_group_files(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=600)
    more = ds.add_columns({"score": np.arange(600) * 1.0}, progress=False)
    report = se.fsck(home=tmp_path)
    assert not report.problems
    se.tag(ds, "raw")
    assert not se.gc("pets", keep=0, home=tmp_path).removed  # both are tagged (latest is the new one)
    se.tag(more, "raw")
    freed = se.gc("pets", keep=0, home=tmp_path)
    assert freed.removed == [f"pets@{ds.version}"]  # the parent goes; its shards live on, linked by the child
    assert se.load("pets", home=tmp_path).version == more.version
    assert se.verify(more).num_rows == 600
    assert se.load("pets", home=tmp_path)[599]["score"] == 599.0
    # a damaged group file is named by verify and fsck; the version's shards stay readable
    group = next(p for p in more.cache_dir.iterdir() if p.name.startswith("group-") and p.suffix == ".arrow")
    data = bytearray(group.read_bytes())
    data[len(data) // 2] ^= 0xFF
    group.write_bytes(bytes(data))
    with pytest.raises(se.CacheCorruptionError) as caught:
        se.verify(more)
    assert caught.value.path.name == group.name
    problems = se.fsck(home=tmp_path).problems
    assert any(Path(str(p.path)).name == group.name for p in problems)
    # the damaged bytes are never handed out as data: a read names the group file
    with pytest.raises(se.CacheCorruptionError) as read:
        se.load("pets", home=tmp_path).arrow_column("score")
    assert group.name in str(read.value)


def test_a_hand_edited_group_list_or_a_missing_group_file_is_named(tmp_path: Path) -> None:
    ds = _build(tmp_path, n=300)
    more = ds.add_columns({"score": np.zeros(300)}, progress=False)
    group = next(p for p in more.cache_dir.iterdir() if p.name.startswith("group-") and p.suffix == ".arrow")
    group.unlink()
    with pytest.raises(se.CacheCorruptionError, match="missing") as caught:
        se.load(f"pets@{more.version}", home=tmp_path)
    assert caught.value.path == group
    meta_path = ds.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    raw["format_revision"] = GROUPS_FORMAT_REVISION + 1
    meta_path.write_text(json.dumps(raw))
    with pytest.raises(se.CacheCorruptionError, match=f"format revision {GROUPS_FORMAT_REVISION + 1} is not one"):
        se.load(f"pets@{ds.version}", home=tmp_path)
