"""Signals kept in the home, as maps are: a result is found again by (version, signal, parameters, rows).

A signal that decodes every image (perceptual hashes, image statistics, pixel embeddings) writes its
result beside the dataset's versions, under ``<home>/<name>/signals/<version>/``, one Arrow file per
signal and parameters (for a bucket home: in this machine's mirror folder of it). The next call with
the same version, parameters and rows reads that file, in this kernel or a new one; another version
(an edit saved, a rebuild), other parameters or another view of the rows compute afresh. A file is
written to a temp name and renamed when whole, so an interrupted signal leaves nothing half-written.

The key names the version (its id is a hash of its content), the signal with its algorithm's
revision (bumped when the computation changes, so an older result is never taken for a newer one),
its parameters, and for a view a digest of the rows it holds. :data:`COUNTS` counts reads and
writes, for a test that asserts the cache was used.

Examples
--------
>>> signal_file_name("phash", {"method": "phash"}, None)[:6]
'phash-'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

    from stable_explore.dataset import CachedDataset

__all__ = ["COUNTS", "SIGNALS_DIR", "cached_signal", "signal_file_name", "signal_path"]

SIGNALS_DIR = "signals"
"""The folder of a dataset (beside ``versions``) that holds its signals, one folder per version."""

COUNTS: Counter[str] = Counter()
"""``read`` and ``written``: signal files this process took from the cache, and wrote to it."""


def signal_file_name(signal: str, params: dict[str, Any], rows_digest: str | None) -> str:
    """``<signal>-<digest>.arrow``: the digest of the parameters (and of a view's rows)."""
    text = json.dumps({"params": params, "rows": rows_digest}, sort_keys=True, default=str)
    return f"{signal}-{hashlib.blake2b(text.encode(), digest_size=12).hexdigest()}.arrow"


def signal_path(ds: CachedDataset, signal: str, params: dict[str, Any]) -> Path | None:
    """Where the result of ``signal`` with ``params`` on ``ds`` is kept, or None (a cache opened by its folder)."""
    if ds.home is None or not ds.name:
        return None
    from stable_explore.catalog import open_catalog

    rows_digest = None
    if ds.is_view:
        rows = np.ascontiguousarray(ds.base_rows(), dtype=np.int64)
        rows_digest = hashlib.blake2b(rows.tobytes(), digest_size=16).hexdigest()
    folder = open_catalog(ds.home).dataset_dir(ds.name) / SIGNALS_DIR / ds.version
    return folder / signal_file_name(signal, params, rows_digest)


def _read(path: Path) -> pa.Table | None:
    import pyarrow as pa

    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid):  # absent, or unreadable: computed again and written over
        return None
    COUNTS["read"] += 1
    return table


def _write(path: Path, table: pa.Table) -> None:
    import pyarrow as pa

    from stable_explore.storage.backends.fsutil import replacing

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with (
            replacing(path, durable=False) as tmp,
            pa.OSFile(str(tmp), "wb") as sink,
            pa.ipc.new_file(sink, table.schema) as writer,
        ):
            writer.write_table(table)
    except OSError:  # a read-only home still gives the result; it is only not kept
        with contextlib.suppress(OSError):
            path.parent.rmdir()
        return
    COUNTS["written"] += 1


def cached_signal(
    ds: CachedDataset, signal: str, params: dict[str, Any], compute: Callable[[], pa.Table], *, cache: bool
) -> pa.Table:
    """``compute()``'s table for ``ds``, read from the home when kept there, else computed and kept.

    ``cache=False`` computes and keeps nothing.
    """
    path = signal_path(ds, signal, params) if cache else None
    if path is not None:
        found = _read(path)
        if found is not None and found.num_rows == len(ds):
            return found
    table = compute()
    if path is not None:
        _write(path, table)
    return table
