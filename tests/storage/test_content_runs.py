"""Format revision 4: content runs and batch digests in small files beside the metadata, linked by saves."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.content_runs import apply_splices, rebase_limit, splices_between

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
    with pytest.raises(CacheCorruptionError, match="out of order"):
        apply_splices(base, [(3, 1, ()), (1, 1, ())], "m.json")
    with pytest.raises(CacheCorruptionError, match="out of order"):
        apply_splices(base, [(4, 2, ())], "m.json")


def test_the_rebase_limit_grows_like_a_square_root() -> None:
    assert rebase_limit(10) == 10
    assert rebase_limit(400) == 80
    assert rebase_limit(10_000) == 400


def _many(home: Path, rows: int = 60_000) -> se.CachedDataset:
    examples = ((f"k{i:06d}", {"label": i % 3, "x": i}) for i in range(rows))
    return se.build(examples, FEATURES, name="m", home=home, progress=False, batch_size=2000, shard_size="300KB")


def test_a_save_links_the_runs_file_and_batch_files_and_records_only_its_splices(home: Path) -> None:
    ds = _many(home)
    saved = ds.relabel({5: "c", 40_000: "a"}).save(progress=False)
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
        assert spliced <= rebase_limit(raw["content_runs"]["runs"]), step
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
