"""Duplicate keys found in bounded memory: sorted runs spilled to the staging dir and merged (issue 12, scale)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore.storage.write.key_check import KeyCheck


def _feed(check: KeyCheck, keys: np.ndarray, batch: int) -> None:
    for first in range(0, len(keys), batch):
        part = keys[first : first + batch]
        check.add(part.tolist(), pa.array(part), first)


@pytest.mark.parametrize("run_rows", [7, 64, 1000, 10**6])
def test_repeats_across_spilled_runs_are_found_and_nothing_else(tmp_path: Path, run_rows: int) -> None:
    rng = np.random.default_rng(run_rows)
    keys = rng.permutation(np.arange(5000, dtype=np.int64) * 3)
    repeated = keys[[10, 2000, 4999]]
    keys = np.concatenate([keys, repeated[::-1], keys[:1]])  # repeats far apart, in other runs
    check = KeyCheck(tmp_path, run_rows=run_rows)
    _feed(check, keys, 5)
    found = check.repeated_hashes()
    assert sorted(found.tolist()) == sorted({*repeated.tolist(), int(keys[0])})
    assert list(tmp_path.iterdir()) == []  # the spill file is gone


def test_no_repeats_in_many_runs(tmp_path: Path) -> None:
    check = KeyCheck(tmp_path, run_rows=100)
    _feed(check, np.random.default_rng(1).permutation(20_000).astype(np.int64), 33)
    assert check.repeated_hashes().tolist() == []


def test_a_build_past_one_run_still_refuses_a_repeated_key_naming_both_rows(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def rows(n: int):  # type: ignore[no-untyped-def]
        for i in range(n):
            yield f"k{i}", {"x": i}
        yield "k17", {"x": -1}

    monkeypatch.setattr(KeyCheck.__init__, "__defaults__", (50,))  # runs of 50 rows: 11 runs spilled
    with pytest.raises(se.DuplicateKeyError, match="k17") as caught:
        se.build(rows, se.Features(x=se.Value("int64")), args=(500,), name="d", home=home, progress=False)
    assert "17" in str(caught.value)
    assert "500" in str(caught.value)
    assert not list((home / "d" / "versions").glob(".*")), "the staging dir and its spill file are removed"
    ok = se.build(
        lambda: ({"x": i} for i in range(500)), se.Features(x=se.Value("int64")), name="ok", home=home, progress=False
    )
    assert len(ok) == 500
    assert not (ok.cache_dir / ".key-hashes.tmp").exists()
