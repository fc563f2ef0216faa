"""A dataset as a reference: what a build fingerprints (``__stable_token__``) and what a pickle holds.

A mixin of ``CachedDataset``. A pickled dataset carries its version's folder, name, home, rows,
format, a view's columns and transform, never its data: unpickling (in a DataLoader worker, on
a Dask worker) opens the version again, from the bucket if the folder is not on that machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from stable_explore.dataset._columns import ColumnMap
from stable_explore.dataset._members import DatasetMembers
from stable_explore.schema import Features
from stable_explore.storage.read.open_meta import read_sharded_cache_meta

__all__ = ["Pickling"]


class Pickling(DatasetMembers):
    """``CachedDataset``'s identity for fingerprints and its pickled state (references only)."""

    def __stable_token__(self) -> dict[str, Any]:
        """What identifies this data for a build fingerprint: version, rows, and a view's columns and transform.

        A transform is fingerprinted by its code, as a generator is.
        """
        from stable_explore._canonical import fingerprint

        rows = None if self._rows is None else fingerprint(self.base_rows().tolist())
        token: dict[str, object] = {"version": self._version, "rows": rows}
        if self._columns is not None:
            token["columns"] = self._columns.to_json()
        if self._transform is not None:
            token["transform"] = self._transform
        return token

    def __getstate__(self) -> dict[str, Any]:
        rows = self._rows
        if isinstance(rows, np.ndarray):
            rows = rows.astype(np.int64)
        return {
            "cache_dir": str(self.cache_dir),
            "name": self._name,
            "version": self._version,
            "home": str(self._home) if self._home else None,
            "features": self._features.to_dict() if self._features_given else None,
            "rows": rows,
            "format": self._format,
            "columns": self._columns.to_json() if self._columns is not None else None,
            "transform": self._transform,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        home = _home_of(state["home"])
        cache_dir = state["cache_dir"]
        if isinstance(home, str) and state["name"] and not Path(cache_dir).is_dir():
            # a bucket's version unpickled on another machine: mirror its metadata there first
            from stable_explore.catalog import open_catalog

            cache_dir = open_catalog(home).version_dir(state["name"], state["version"])
        meta = read_sharded_cache_meta(cache_dir)
        features = Features.from_dict(state["features"]) if state["features"] else None
        self.__init__(  # type: ignore[misc]
            meta,
            name=state["name"],
            version=state["version"],
            home=home,
            features=features,
            rows=state["rows"],
            format=state["format"],
        )
        if state.get("columns") is not None:
            self._columns = ColumnMap.from_json(state["columns"])
            self._features = self._columns.features
        self._transform = state.get("transform")


def _home_of(text: str | None) -> Path | str | None:
    """A pickled home: a bucket's URL stays text (it carries no credentials), a folder becomes a path."""
    if not text:
        return None
    return text if "://" in text else Path(text)
