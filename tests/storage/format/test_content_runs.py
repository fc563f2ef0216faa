"""Format revision 4: content runs and batch digests in small files beside the metadata, linked by saves."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.format.splices import apply_splices, rebase_limit, splices_between

FEATURES = se.Features(label=se.ClassLabel(names=["a", "b", "c"]), x=se.Value("int64"))


def _run(i: int) -> tuple[int, str]:
    return (1 + i % 7, f"{i:032x}")


@pytest.mark.parametrize("seed", range(40))
def test_splices_turn_a_base_into_any_edit_of_it(seed: int) -> None:
    rng = random.Random(seed)
    base = [_run(i) for i in range(rng.randrange(0, 60))]
    runs = list(base)
    fresh = 1000
    for _ in range(rng.randrange(0, 8)):  # replace, insert or delete a few stretches
        at = rng.randrange(0, len(runs) + 1)
        removed = rng.randrange(0, 3)
        inserted = [_run(fresh + k) for k in range(rng.randrange(0, 3))]
        fresh += 3
        runs[at : at + removed] = inserted
    splices = splices_between(base, runs)
    assert apply_splices(base, splices, "m.json") == runs
    if runs == base:
        assert splices == []
    assert all(a[0] + a[1] <= b[0] for a, b in itertools.pairwise(splices))


def test_out_of_order_splices_are_refused() -> None:
    base = [_run(i) for i in range(5)]
    with pytest.raises(CacheCorruptionError, match="out of order or past"):
        apply_splices(base, [(3, 1, ()), (1, 1, ())], "m.json")
    with pytest.raises(CacheCorruptionError, match="out of order or past"):
        apply_splices(base, [(4, 2, ())], "m.json")


def test_the_rebase_limit_grows_like_a_square_root_of_the_file_and_the_saves_changes() -> None:
    assert rebase_limit(10, 5) == 10  # never more than the file
    assert rebase_limit(400, 1) == 32
    assert rebase_limit(400, 20) == 126
    assert rebase_limit(10_000, 20) == 632


def _many(home: Path, rows: int = 60_000) -> se.CachedDataset:
    examples = ((f"k{i:06d}", {"label": i % 3, "x": i}) for i in range(rows))
    return se.build(examples, FEATURES, name="m", home=home, progress=False, batch_size=2000, shard_size="300KB")


def test_a_save_links_the_runs_file_and_batch_files_and_records_only_its_splices(home: Path) -> None:
    ds = _many(home)
    saved = ds.set(5, "x", -5).set(40_000, "x", -4).save(progress=False)  # two rows written anew
    raw = json.loads((saved.cache_dir / "_metadata.json").read_text())
    assert raw["format_revision"] == 4
    runs = raw["content_runs"]
    assert 0 < len(runs["splices"]) <= 4
    assert (saved.cache_dir / runs["file"]).samefile(ds.cache_dir / runs["file"])  # linked, not rewritten
    linked = [e for e in raw["batch_digests"] if (saved.cache_dir / e["file"]).stat().st_nlink > 1]
    assert len(linked) >= len(raw["batch_digests"]) - 2  # only the new shard's digests were written
    assert (
        saved.cache_meta.content_runs
        == se.build(
            zip(saved.keys(), saved.to_arrow().select(["label", "x"]).to_pylist(), strict=True),
            FEATURES,
            name="again",
            home=home,
            progress=False,
        ).cache_meta.content_runs
    )
    assert saved.verify().num_rows == len(ds)


def test_a_chain_of_saves_rebases_the_runs_file_and_keeps_every_version_whole(home: Path) -> None:
    ds = _many(home)
    versions = [ds]
    rng = random.Random(3)
    for step in range(12):
        edits = {rng.randrange(len(ds)): rng.choice(["a", "b", "c"]) for _ in range(10)}
        versions.append(versions[-1].relabel(edits).save(progress=False))
        raw = json.loads((versions[-1].cache_dir / "_metadata.json").read_text())
        spliced = sum(removed + len(inserted) for _, removed, inserted in raw["content_runs"]["splices"])
        assert spliced <= raw["content_runs"]["runs"], step  # never more than a new file would hold
    files = {(v.cache_dir / "content-runs.json").stat().st_ino for v in versions}
    assert 1 < len(files) < len(versions)  # some saves wrote a new runs file, most linked their parent's
    se.gc("m", keep=1, home=home)  # parents deleted: the last version keeps its own links
    last = se.load("m", home=home)
    assert last.version == versions[-1].version
    assert last.verify().num_rows == len(ds)
    assert last.cache_meta.content_runs == versions[-1].cache_meta.content_runs


def test_a_damaged_runs_file_or_splice_is_named(home: Path) -> None:
    saved = _many(home).relabel({5: "c"}).save(progress=False)
    runs_file = saved.cache_dir / "content-runs.json"
    data = bytearray(runs_file.read_bytes())
    data[10] ^= 1
    runs_file.unlink()  # a hard link: the parent's copy stays whole
    runs_file.write_bytes(bytes(data))
    again = se.load("m", home=home)
    with pytest.raises(CacheCorruptionError, match=r"content-runs\.json.*damaged or replaced"):
        again.relabel({6: "b"}).save(progress=False)
    runs_file.unlink()
    with pytest.raises(CacheCorruptionError, match=r"content-runs\.json.*missing"):
        se.load("m", home=home)


def test_long_row_segments_go_to_a_file_that_later_saves_splice(home: Path) -> None:
    ds = _many(home, rows=300_000)  # compaction leaves rows / 1000 pieces: more than stay inline
    keys = ds.keys()
    rng = random.Random(5)
    seen_file = seen_linked = False
    for step in range(12):
        parent = ds
        if step % 4 == 3:  # new values now and then: a new small file, renumbered shards
            draft = ds
            for row in rng.sample(range(len(ds)), 10):
                draft = draft.set(row, "x", -1)
            ds = draft.save(progress=False)
        else:  # drops cut pieces and write no file
            dropped = rng.sample(range(len(ds)), 10)
            ds = ds.drop(dropped).save(progress=False)
            gone = set(dropped)
            keys = [k for i, k in enumerate(keys) if i not in gone]
        raw = json.loads((ds.cache_dir / "_metadata.json").read_text())
        field = raw.get("row_segments")
        if isinstance(field, dict):
            seen_file = True
            mine, theirs = ds.cache_dir / field["file"], parent.cache_dir / field["file"]
            if theirs.exists() and mine.samefile(theirs):
                seen_linked = True
                assert field["splices"], step  # linked, with this save's own changes as splices
        assert ds.keys() == keys, step
    assert seen_file
    assert seen_linked
    fresh = se.load("m", home=home)
    assert fresh.cache_meta.segments == ds.cache_meta.segments
    assert fresh.verify().num_rows == len(keys)


def test_a_row_segment_naming_a_shard_the_version_does_not_keep_is_refused(home: Path) -> None:
    ds = _many(home, rows=300_000)
    rng = random.Random(6)
    for _ in range(6):
        draft = ds
        for row in rng.sample(range(len(ds)), 10):
            draft = draft.set(row, "x", -1)  # rows written anew: their files are cut into segments
        ds = draft.save(progress=False)
    path = ds.cache_dir / "_metadata.json"
    raw = json.loads(path.read_text())
    assert isinstance(raw["row_segments"], dict)
    raw["row_segments"]["shards"] = [-1] * len(raw["row_segments"]["shards"])
    path.write_text(json.dumps(raw))
    with pytest.raises(CacheCorruptionError, match=r"does not keep|edited or damaged"):
        se.load("m", home=home)
