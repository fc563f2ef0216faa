"""Evaluations kept in the home: the same version, columns and parameters give the kept answer at once.

An evaluation of a dataset in a catalog is written to ``<home>/<name>/evaluations/<version>/<digest>.npz``
(numpy arrays only, read back without pickle). The digest is of what decides the answer: the version id,
the rows of a view, each column's stored name and feature, the evaluation's parameters and this module's
format. A relabel and save makes a new version, so the evaluation of the new version is computed afresh;
gc removes a deleted version's evaluations with it. A bucket home keeps them in this machine's mirror
folder of that home.

Examples
--------
>>> import tempfile, stable_explore as se
>>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]), pred=se.ClassLabel(names=["cat", "dog"]))
>>> ds = se.build([{"label": 0, "pred": 1}, {"label": 1, "pred": 1}], features, name="pets",
...               home=tempfile.mkdtemp(), progress=False)
>>> se.evaluate(ds, predictions="pred").cache_info
'computed: first evaluation of pred against label on this version'
>>> se.evaluate(ds, predictions="pred").cache_info
'reused: same version, columns and parameters'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.catalog.names import EVALUATIONS_DIR
from stable_explore.schema import Features

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["EVALUATIONS_DIR", "CacheEntry", "cache_entry"]

_FORMAT = 2  # raise when what is kept, or how it is computed, changes: older entries are then never read
_log = logging.getLogger("stable_explore")


class CacheEntry:
    """Where one evaluation is kept, and reading and writing its arrays."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, np.ndarray] | None:
        """The kept arrays, or None when there are none (or they cannot be read: then they are computed again)."""
        if not self.path.is_file():
            return None
        try:
            with np.load(self.path, allow_pickle=False) as kept:
                return {name: kept[name] for name in kept.files}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            _log.info("the kept evaluation %s cannot be read (%s); computing it again", self.path, exc)
            return None

    def store(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Keep ``arrays`` (written beside, then renamed: readers see all or nothing); an unwritable home is left be."""
        temp = self.path.with_name(f".{self.path.stem}.tmp-{os.getpid()}.npz")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with temp.open("wb") as file:
                write: Any = np.savez  # (its stubs type every keyword as allow_pickle's bool)
                write(file, **arrays)
            temp.replace(self.path)
        except OSError as exc:
            _log.info("could not keep the evaluation at %s (%s); it is computed again next time", self.path, exc)
            with contextlib.suppress(OSError):
                temp.unlink()


def cache_entry(
    ds: CachedDataset, kind: str, columns: Mapping[str, str], params: Mapping[str, object]
) -> CacheEntry | None:
    """The entry of evaluating ``ds``'s ``columns`` (role -> column) with ``params``; None outside a catalog."""
    if ds.home is None or not ds.name:
        return None
    from stable_explore.catalog import open_catalog

    rows = None
    if ds.is_view:
        import xxhash

        rows = xxhash.xxh3_128(np.ascontiguousarray(ds.base_rows(), dtype=np.int64).tobytes()).hexdigest()
    described = {
        "format": _FORMAT,
        "kind": kind,
        "version": ds.version,
        "rows": rows,
        "num_rows": len(ds),
        "columns": {
            role: [name, ds.stored_column(name), Features({"f": ds.features[name]}).to_dict()]
            for role, name in sorted(columns.items())
        },
        "params": dict(params),
    }
    digest = hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()[:32]
    home = open_catalog(ds.home).home
    return CacheEntry(Path(home) / ds.name / EVALUATIONS_DIR / ds.version / f"{digest}.npz")
