"""Progress bars of builds and saves: rows counted, bytes written, quiet when disabled."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import stable_explore as se
from stable_explore.display.progress import progress_bar, saving_bar
from tests.sources import NUM_FEATURES, numbers

if TYPE_CHECKING:
    import pytest


def test_progress_bar_shows_rows_and_bytes(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    se.build(numbers, NUM_FEATURES, args=(2500,), home=home, batch_size=500)
    err = capsys.readouterr().err
    assert "caching numbers" in err
    assert "2.50k" in err or "2500" in err
    assert "written" in err


def test_the_bar_counts_rows_and_shows_the_bytes_written(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_bar("digits", 10) as on_batch:
        on_batch(4, 2048)
        on_batch(6, 4096)
    final = capsys.readouterr().err.split("\r")[-1]
    assert final.startswith("caching digits: 100%")
    assert "10/10" in final  # real counts, not 10.0/10.0 or 1.80k
    assert "4.0 KB written" in final.replace("KiB", "KB")


def test_a_save_says_saving_and_an_unknown_total_ends_known(capsys: pytest.CaptureFixture[str]) -> None:
    with saving_bar("digits", None) as on_batch:
        on_batch(1500, 10)
    final = capsys.readouterr().err.split("\r")[-1]
    assert final.startswith("saving digits: 100%")
    assert "1500/1500" in final  # the count is known once the work is done: not "1500/?"


def test_a_disabled_bar_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_bar("digits", 3, disable=True) as on_batch:
        on_batch(3, 100)
    assert capsys.readouterr().err == ""


def test_a_save_that_rewrites_no_row_says_so_without_a_rate(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = se.build(numbers, NUM_FEATURES, args=(3000,), home=home, progress=False)
    ds.drop([5]).save("drop one", progress=True)
    final = capsys.readouterr().err.strip().split("\r")[-1]
    assert final.startswith("saving numbers: 100%")
    assert "2999/2999 rows" in final
    assert "rows/s" not in final  # kept rows are not copied: a rate would be meaningless
    assert "0 B written" not in final
    assert "none rewritten" in final
