"""Issue 39 (second pass): a save reads what it needs once, and never reads back what it has just written.

The files a real save opens are recorded with an audit hook (Python's own ``open`` event: every
file opened, by any means, is seen; nothing is replaced), and what the saved version holds is
compared with what a fresh read of its files gives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.storage.read.open_meta import read_sharded_cache_meta

FEATURES = se.Features(label=se.ClassLabel(names=["a", "b", "c"]), x=se.Value("int64"))

_OPENED: list[str] | None = None  # the files opened while a recording is on


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and _OPENED is not None and isinstance(args[0], (str, Path)):
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)  # hooks cannot be removed: this one records only inside ``_opened_files``


@contextmanager
def _opened_files() -> Iterator[list[str]]:
    global _OPENED
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None


def _build(home: Path, n: int = 3000) -> se.CachedDataset:
    rows = ((f"k{i:05d}", {"label": i % 3, "x": i}) for i in range(n))
    return se.build(rows, FEATURES, name="p", home=home, progress=False, batch_size=250)


def test_a_saved_version_holds_its_runs_and_patches_from_the_save_not_read_back(tmp_path: Path) -> None:
    ds = _build(tmp_path)
    first = ds.relabel({5: "b", 1700: "c"}).save(progress=False)
    with _opened_files() as opened:
        saved = first.relabel({10: "c", 2900: "a"}).save(progress=False)
    mine = [path for path in opened if Path(path).parent == saved.cache_dir]
    assert not [p for p in mine if p.endswith(("cell-patches.json", "content-runs.json"))], mine

    fresh = read_sharded_cache_meta(saved.cache_dir)  # a new value: reads the files
    held = saved.cache_meta
    assert held.content_runs == fresh.content_runs
    assert held.runs_file == fresh.runs_file
    assert held.cell_patches is not None
    assert fresh.cell_patches is not None
    assert held.cell_patches.entries == fresh.cell_patches.entries
    assert held.patches_file == fresh.patches_file
    # the next save splices against what the save held: the same version as from the files read afresh
    again = saved.relabel({11: "b"}).save(progress=False, set_latest=False)
    loaded = se.load(f"p@{saved.version}", home=tmp_path).relabel({11: "b"}).save(progress=False, set_latest=False)
    assert again.version == loaded.version
    assert again.cache_meta.to_dict()["cell_patches"] == loaded.cache_meta.to_dict()["cell_patches"]
    assert se.load(f"p@{again.version}", home=tmp_path)["label"][10:12] == [2, 1]  # c, b


@pytest.mark.parametrize("chain", [1, 30])
def test_a_chain_of_saves_reads_back_as_the_saves_returned_it(tmp_path: Path, chain: int) -> None:
    ds = _build(tmp_path)
    latest = ds
    for i in range(chain):  # past the rebase limit the patches and runs files are written anew, not linked
        latest = latest.relabel({(97 * i) % 3000: (i + 1) % 3, (31 * i + 7) % 3000: i % 3}).save(progress=False)
    fresh = read_sharded_cache_meta(latest.cache_dir)
    assert latest.cache_meta.content_runs == fresh.content_runs
    assert latest.cache_meta.runs_file == fresh.runs_file
    assert latest.cache_meta.patches_file == fresh.patches_file
    assert latest.to_arrow().equals(se.load("p", home=tmp_path).to_arrow())


def test_a_relabel_and_its_save_read_the_edited_rows_twice_not_four_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stable_explore.storage.read.sharded import ShardedReader

    ds = _build(tmp_path)
    edited = {5: "b", 1700: "c", 2999: "a"}
    base_rows = set(edited)
    reads: list[list[str]] = []
    real_take = ShardedReader.take

    def take(self: ShardedReader, indices: object, columns: object = None) -> object:  # the real read, recorded
        if base_rows & {int(i) for i in indices}:  # type: ignore[attr-defined]
            reads.append(list(columns) if columns is not None else ["*"])  # type: ignore[call-overload]
        return real_take(self, indices, columns)  # type: ignore[arg-type]

    monkeypatch.setattr(ShardedReader, "take", take)
    draft = ds.relabel(edited).drop([7])
    saved = draft.save(progress=False)
    # the relabel reads the rows' keys with their classes; the save reads their cells once, to hash them
    assert len(reads) == 2, reads
    assert saved.metadata["operations"] == [
        {"op": "drop", "keys": ["k00007"]},
        # row 1700 has class c already: no edit
        {"op": "relabel", "column": "label", "changes": [["k00005", "c", "b"], ["k02999", "c", "a"]]},
    ]


_CHECKOUT = str(Path(__file__).resolve().parents[2])
_MEASURE_A_FEW_ROWS = """
import json, sys, tracemalloc
import pyarrow as pa
import stable_explore as se

fresh = se.load(sys.argv[1])  # opened anew: its shard is patched as it is read
fresh.select([0]).arrow_column("label")  # the first read's imports, outside the measure (row 0's batch only)
tracemalloc.start()
before = pa.total_allocated_bytes()
labels = fresh.select([397, 20_000, 39_700]).arrow_column("label")
grown = pa.total_allocated_bytes() - before + tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps([labels.to_pylist(), grown]))
"""


def test_a_few_rows_of_a_patched_version_copy_the_batches_that_hold_them_not_whole_columns(tmp_path: Path) -> None:
    n = 40_000
    rows = ((f"k{i:05d}", {"label": i % 3, "x": i}) for i in range(n))
    ds = se.build(rows, FEATURES, name="p", home=tmp_path, progress=False, batch_size=250)
    edits = {row: (row + 1) % 3 for row in range(0, n, 397)}  # a patch in every record batch or so
    saved = ds.relabel(edits).save(progress=False)
    assert saved.cache_meta.cell_patches is not None
    # measured in a process of its own: tracemalloc counts every thread's allocations, and threads that earlier
    # tests left in this one (a Dask client's loop, say) may allocate meanwhile (CI once measured 294 KB, not ~48)
    measured = subprocess.run(
        [sys.executable, "-c", _MEASURE_A_FEW_ROWS, str(saved.cache_dir)],
        capture_output=True, text=True, check=True, timeout=120, env={**os.environ, "PYTHONPATH": _CHECKOUT},
    )  # fmt: skip
    labels, grown = json.loads(measured.stdout.splitlines()[-1])
    assert labels == [(397 + 1) % 3, 20_000 % 3, (39_700 + 1) % 3]
    # three record batches of 250 rows copied (about 50 KB with the take's own), not the label and row-hash
    # columns of 40,000 rows (640 KB; 710 KB in all before): less than half of one such column
    assert grown < 8 * n / 2, grown
    # every other way of reading sees the same patched rows
    expected = [edits.get(i, i % 3) for i in range(n)]
    fresh = se.load(saved.cache_dir)  # opened anew: its shard is patched as it is read
    assert fresh.select([397, 20_000, 39_700]).arrow_column("label").to_pylist() == labels
    assert fresh.arrow_column("label").to_pylist() == expected
    assert se.load(saved.cache_dir).to_arrow().column("label").to_pylist() == expected
    streamed = [
        v for b in se.load(saved.cache_dir).with_format("arrow").iter(batch_size=999) for v in b["label"].to_pylist()
    ]
    assert streamed == expected
    assert se.verify(saved).num_rows == n


@pytest.mark.parametrize("seed", range(4))
def test_the_patches_a_save_carries_and_merges_are_those_of_their_definition(seed: int) -> None:
    import numpy as np

    from stable_explore.versioning._patch_plan import carried_entries, merged_entries
    from stable_explore.versioning._plan import Link

    rng = np.random.default_rng(seed)
    digests = [f"xxh3_128:{i:032x}" for i in range(3)]
    plan = [Link(file_id=f, file_start=s, count=c, position=0) for f, s, c in [(0, 0, 50), (0, 80, 20), (2, 10, 90)]]
    rows = sorted({(int(rng.integers(3)), int(rng.integers(120))) for _ in range(80)})
    entries = [(digests[f], r, int(rng.integers(2**40)), (("label", int(rng.integers(3))),)) for f, r in rows]
    entries[0] = (*entries[0][:3], (("label", 1), ("box", 2)))  # cells out of column order (a hand-made file)

    def linked(entry: tuple[str, int, int, tuple[tuple[str, int], ...]]) -> bool:
        file_id = digests.index(entry[0])
        return any(s.file_id == file_id and s.file_start <= entry[1] < s.file_start + s.count for s in plan)

    carried = carried_entries(entries, plan, digests)
    assert carried == [e for e in entries if linked(e)]
    new = [(digests[0], r, 7, (("label", 0), ("other", 1))) for r in (3, 5, 95)] + [(digests[1], 4, 8, (("a", 2),))]
    expected: dict[tuple[str, int], tuple[int, dict[str, int]]] = {(d, r): (h, dict(c)) for d, r, h, c in carried}
    for d, r, h, c in new:
        expected[(d, r)] = (h, {**expected.get((d, r), (0, {}))[1], **dict(c)})
    assert merged_entries(carried, new) == [
        (d, r, h, tuple(sorted(c.items()))) for (d, r), (h, c) in sorted(expected.items())
    ]


@pytest.mark.parametrize("kept", [1 << 16, 2])  # 2: past the bound, the digest looks at the changed rows itself
def test_edits_at_run_boundaries_give_the_runs_and_id_of_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int
) -> None:
    import numpy as np

    from stable_explore.versioning import _edit_writer

    monkeypatch.setattr(_edit_writer, "_DECIDED_ROWS", kept)
    n = 30_000
    ds = _build(tmp_path, n)
    runs = ds.cache_meta.content_runs or []
    assert len(runs) > 4
    ends = (np.cumsum([rows for rows, _ in runs]) - 1).tolist()
    # a relabel and a new value where rows end runs (whether they still do is decided from the new row),
    # a drop just before a run's end, and plain relabels elsewhere
    edited = ds.relabel({ends[0]: (ends[0] + 1) % 3, ends[2]: (ends[2] + 2) % 3, 17: 1, 20_001: 0})
    edited = edited.set(ends[1], "x", -5).drop([ends[3] - 1])
    saved = edited.save(progress=False)
    table = saved.to_arrow()
    rows = zip(saved.keys(), table.select(["label", "x"]).to_pylist(), strict=True)
    rebuilt = se.build(list(rows), FEATURES, name="re", home=tmp_path, progress=False, batch_size=777)
    assert saved.cache_meta.content_runs == rebuilt.cache_meta.content_runs
    assert saved.version == rebuilt.version


def test_the_saved_version_reads_no_batch_digests_file_its_parent_read(tmp_path: Path) -> None:
    ds = _build(tmp_path)
    first = ds.relabel({5: "b"}).save(progress=False)
    assert first.select([7]).arrow_column("label").to_pylist() == [1]  # the parent's shard read: digests loaded
    with _opened_files() as opened:
        saved = first.relabel({10: "c"}).save(progress=False)
        labels = saved.select([10, 11]).arrow_column("label").to_pylist()
    assert labels == [2, 2]
    mine = [p for p in opened if Path(p).parent == saved.cache_dir and p.endswith(".batches")]
    assert not mine, mine
    fresh = read_sharded_cache_meta(saved.cache_dir).batch_digests
    assert fresh is not None
    assert saved.cache_meta.batch_digests is not None
    assert [saved.cache_meta.batch_digests[i] for i in range(len(fresh))] == [fresh[i] for i in range(len(fresh))]
    assert se.verify(saved).num_rows == len(ds)
