"""Issue 34 #9: a save reads, edits and writes its rows a few at a time, and gives what an unchunked save gives.

The chunks are made tiny here (a few rows) so that every path that cuts work into chunks runs many
times on small data: the relabels turned into cell patches, the rows written anew, a long run written
anew (compaction, a reordered view), and the column groups of a mapped version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
from stable_explore.versioning import _edit_writer, _group_save

FEATURES = se.Features(blob=se.Value("binary"), x=se.Value("int64"), label=se.ClassLabel(names=["cat", "dog"]))
N = 1200


def _rows(n: int = N) -> list[tuple[str, dict[str, Any]]]:
    return [(f"k{i:06d}", {"blob": bytes([i % 251]) * 200, "x": i, "label": i % 2}) for i in range(n)]


def _build(home: Path) -> se.CachedDataset:
    return se.build(_rows(), FEATURES, name="pets", home=home, shard_size="64KB", batch_size=250, progress=False)


def score(row: dict) -> dict:
    return {"score": row["x"] / 7}


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """About 3 rows a chunk for the shards' rows (230 bytes each) and 4 for the group columns."""
    monkeypatch.setattr(_edit_writer, "_CHUNK_BYTES", 700)
    monkeypatch.setattr(_group_save, "_CHUNK_BYTES", 40)


def _edited(draft: se.Draft) -> se.Draft:
    relabels = {row: 1 - row % 2 for row in range(1, N, 3)}  # 400 relabels: cell patches, in many chunks
    draft = draft.relabel(relabels).drop(list(range(0, N, 7)))
    for row in range(2, 60, 5):  # a dozen rows written anew
        draft = draft.set(row, "x", -row)
    return draft


def _expected(drop_every: int = 7) -> list[tuple[str, dict[str, Any]]]:
    rows = _rows()
    for i in range(1, N, 3):
        rows[i][1]["label"] = 1 - i % 2
    for i in range(2, 60, 5):
        rows[i][1]["x"] = -i
    return [row for i, row in enumerate(rows) if i % drop_every]


def test_a_save_of_many_edits_in_tiny_chunks_gives_the_rows_a_build_of_them_gives(
    tmp_path: Path, tiny_chunks: None
) -> None:
    ds = _build(tmp_path)
    saved = _edited(ds.drop([])).save(message="chunked", progress=False)
    expected = _expected()
    direct = se.build(expected, FEATURES, name="direct", home=tmp_path, progress=False)
    assert saved.version == direct.version  # the same keys and row hashes, in the same order
    assert saved.keys() == [key for key, _ in expected]
    assert list(saved.with_format("python")) == list(direct.with_format("python"))
    assert se.verify(saved).num_rows == len(expected)


def test_long_runs_written_anew_in_tiny_chunks_keep_their_rows_and_order(tmp_path: Path, tiny_chunks: None) -> None:
    ds = _build(tmp_path)
    reversed_rows = ds[::-1].drop([0, 5]).save(name="reversed", progress=False)  # every row written anew
    expected = [row for i, row in enumerate(reversed(_rows())) if i not in (0, 5)]
    assert reversed_rows.keys() == [key for key, _ in expected]
    assert reversed_rows.version == se.build(expected, FEATURES, name="direct", home=tmp_path, progress=False).version
    compacted = ds.drop(list(range(N * 6 // 10))).set(N - 1, "x", -1).save(progress=False)  # rewrites the rest
    kept = _rows()[N * 6 // 10 :]
    kept[-1][1]["x"] = -1
    assert compacted.version == se.build(kept, FEATURES, name="direct2", home=tmp_path, progress=False).version
    assert se.verify(compacted).num_rows == len(kept)


def test_a_save_of_a_mapped_version_in_tiny_chunks_gives_the_rows_a_build_of_them_gives(
    tmp_path: Path, tiny_chunks: None
) -> None:
    more = _build(tmp_path).map(score, progress=False)
    draft = _edited(more.drop([]))
    for row in range(3, 90, 4):  # edits of the group column too
        draft = draft.set(row, "score", -1.0)
    saved = draft.save(message="chunked", progress=False)
    expected = [(key, {**row, "score": int(key[1:]) / 7}) for key, row in _rows()]
    for i in range(1, N, 3):
        expected[i][1]["label"] = 1 - i % 2
    for i in range(2, 60, 5):
        expected[i][1]["x"] = -i
    for i in range(3, 90, 4):
        expected[i][1]["score"] = -1.0
    expected = [row for i, row in enumerate(expected) if i % 7]
    features = se.Features({**FEATURES, "score": se.Value("float64")})
    direct = se.build(expected, features, name="direct", home=tmp_path, progress=False)
    assert saved.version == direct.version
    assert list(saved.with_format("python")) == list(direct.with_format("python"))
    assert se.verify(saved).num_rows == len(expected)
