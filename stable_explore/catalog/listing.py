"""Listings of a catalog as plain rows: every dataset, every version of one dataset (the display layer renders them).

Examples
--------
>>> import tempfile, stable_explore as se
>>> from stable_explore.catalog import Catalog
>>> home = tempfile.mkdtemp()
>>> _ = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=home, progress=False)
>>> [(row["name"], row["rows"]) for row in dataset_rows(Catalog(home))]
[('one', 1)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stable_explore.catalog.names import LATEST
from stable_explore.errors import CacheCorruptionError, CacheNotFoundError, StableExploreError

if TYPE_CHECKING:
    from stable_explore.catalog.catalog import Catalog

__all__ = ["DATASET_COLUMNS", "VERSION_COLUMNS", "dataset_columns", "dataset_rows", "version_rows"]

VERSION_COLUMNS = ["version", "created", "rows", "bytes", "parent", "message", "tags"]
DATASET_COLUMNS = ["name", "latest", "rows", "bytes", "versions", "created", "tags"]


def version_rows(catalog: Catalog, name: str) -> list[dict[str, Any]]:
    """Every version of ``name``, newest first, with lineage and tags (an unreadable one says why)."""
    tags_of: dict[str, list[str]] = {}
    for tag, version_id in catalog.refs(name).items():
        tags_of.setdefault(version_id, []).append(tag)
    rows: list[dict[str, object]] = []
    for version_id in catalog.version_ids(name):
        try:
            meta = catalog.version_meta(name, version_id)
        except (CacheCorruptionError, CacheNotFoundError) as exc:
            rows.append({"version": version_id, "created": "", "message": f"unreadable: {exc}"})
            continue
        record = meta.version_metadata
        rows.append(
            {
                "version": version_id,
                "created": record.created_at or "",
                "rows": meta.num_rows,
                "bytes": meta.nbytes,
                "parent": record.parent,
                "message": record.message or "",
                "tags": sorted(tags_of.get(version_id, [])),
            }
        )
    rows.sort(key=lambda r: (r.get("created") or "", r["version"]), reverse=True)
    return rows


def dataset_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """Every dataset: its latest version, rows, bytes, number of versions and tags."""
    rows = []
    for name in catalog.names():
        row: dict[str, object] = {"name": name}
        try:
            _describe_dataset(catalog, name, row)
        except (StableExploreError, OSError, ValueError, RecursionError) as exc:
            # one broken dataset is reported in its own row; the others are still listed
            where = getattr(exc, "path", None) or getattr(exc, "filename", None) or catalog.store.local_path(name)
            row["problem"] = f"{where}: {getattr(exc, 'reason', None) or exc}"
        rows.append(row)
    return rows


def dataset_columns(rows: list[dict[str, object]]) -> list[str]:
    """:data:`DATASET_COLUMNS`, plus ``problem`` when a dataset could not be read."""
    return [*DATASET_COLUMNS, "problem"] if any("problem" in row for row in rows) else DATASET_COLUMNS


def _describe_dataset(catalog: Catalog, name: str, row: dict[str, object]) -> None:
    row["versions"] = len(catalog.version_ids(name))
    latest = row["latest"] = catalog.read_ref(name, LATEST)
    if latest:
        try:
            meta = catalog.version_meta(name, latest)
            row.update(rows=meta.num_rows, bytes=meta.nbytes, created=meta.version_metadata.created_at or "")
        except (CacheCorruptionError, CacheNotFoundError) as exc:
            row["created"] = "unreadable"
            row["problem"] = str(exc)
    row["tags"] = sorted(t for t in catalog.refs(name) if t != LATEST)
