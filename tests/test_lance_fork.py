"""pylance's fork warning: left out when DataLoader workers start over our datasets, kept for any other fork."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
from stable_explore._optional import require

pytest.importorskip("lance")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="fork start method")


def _fork_warnings(dataset: Any) -> list[str]:
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=2, num_workers=1, multiprocessing_context="fork", collate_fn=list
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(loader)
    assert sum(len(batch) for batch in batches) == len(dataset)
    return [str(w.message) for w in caught if "fork-safe" in str(w.message)]


def test_dataloader_workers_over_our_dataset_start_without_the_lance_fork_warning(tmp_path: Path) -> None:
    require("lance", "lance", "a test")  # as se.load or ds.export of a Lance folder imports it
    ds = se.build([{"x": i} for i in range(4)], se.Features(x=se.Value("int64")), name="n", home=tmp_path,
                  progress=False)  # fmt: skip
    assert _fork_warnings(ds) == []
    assert _fork_warnings(ds.with_format("numpy")) == []
    assert len(_fork_warnings([1, 2, 3])) == 1, "a fork for anything else keeps pylance's warning"
