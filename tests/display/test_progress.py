"""The progress bar of builds: rows and bytes written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import stable_explore as se
from tests.sources import NUM_FEATURES, numbers

if TYPE_CHECKING:
    import pytest


def test_progress_bar_shows_rows_and_bytes(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    se.build(numbers, NUM_FEATURES, args=(2500,), home=home, batch_size=500)
    err = capsys.readouterr().err
    assert "caching numbers" in err
    assert "2.50k" in err or "2500" in err
    assert "written" in err
