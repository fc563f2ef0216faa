"""Garbage collection: delete versions nothing points at, and what dead builds left behind.

Examples
--------
>>> import tempfile, stable_explore as se
>>> from stable_explore.catalog import Catalog
>>> home = tempfile.mkdtemp()
>>> for n in (1, 2):
...     _ = se.build([{"x": i} for i in range(n)], se.Features(x=se.Value("int64")), name="t", home=home,
...                  progress=False)
>>> collect_garbage(Catalog(home), "t", keep=0) > 0   # the first version: no ref points at it
True
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from stable_explore.catalog.publish import remove_version_dir
from stable_explore.catalog.remote import RemoteCatalog, collect_remote_garbage
from stable_explore.errors import CacheNotFoundError, InvalidOptionError
from stable_explore.storage.format import METADATA_FILE
from stable_explore.storage.fsutil import bytes_freed_by_removing, sweep_stale_temp_dirs

if TYPE_CHECKING:
    from stable_explore.catalog.catalog import Catalog

__all__ = ["collect_garbage"]


def collect_garbage(catalog: Catalog, name: str | None = None, *, keep: int = 1) -> int:
    """Delete versions that no ref points at, beyond the ``keep`` newest; return bytes freed.

    Tagged versions (``latest`` included) are never deleted. Temp dirs of
    dead builds are swept too.
    """
    if keep < 0:
        msg = f"keep must be >= 0, got {keep}"
        raise InvalidOptionError(msg)
    if isinstance(catalog, RemoteCatalog):
        return collect_remote_garbage(catalog, name, keep=keep)
    freed = 0
    for dataset in [name] if name is not None else catalog.names():
        versions = catalog.versions_dir(dataset)
        if not versions.is_dir():
            msg = f"no dataset named {dataset!r} in {catalog.home}"
            raise CacheNotFoundError(msg)
        freed += sweep_stale_temp_dirs(versions)
        protected = set(catalog.refs(dataset).values())
        by_age = sorted(catalog.version_ids(dataset), key=lambda v: (_created_at(catalog, dataset, v), v), reverse=True)
        protected.update(by_age[:keep])
        for version_id in by_age:
            if version_id in protected:
                continue
            target = catalog.version_dir(dataset, version_id)
            freed += bytes_freed_by_removing(target)
            remove_version_dir(target)
        _drop_dangling_sources(catalog, dataset)
    return freed


def _created_at(catalog: Catalog, name: str, version_id: str) -> str:
    """When a version was made, read leniently: a damaged version must not stop gc of the others."""
    try:
        raw = json.loads((catalog.version_dir(name, version_id) / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(raw.get("created_at", "")) if isinstance(raw, dict) else ""


def _drop_dangling_sources(catalog: Catalog, name: str) -> None:
    root = catalog.sources_dir(name)
    if not root.is_dir():
        return
    live = set(catalog.version_ids(name))
    for path in root.iterdir():
        if path.name.startswith("."):
            continue
        if path.read_text(encoding="utf-8").strip() not in live:
            path.unlink(missing_ok=True)
