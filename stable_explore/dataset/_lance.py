"""``ds.to_lance(path)``: a Lance dataset of the rows (the ``lance`` extra); ``se.load(path)`` reads it back.

The Lance dataset holds the feature columns as they are stored (labels as ints, images as their
encoded bytes: no re-encode), plus ``__key__`` (each row's key), and our features JSON in its
schema metadata, so reading it back (``se.load`` / ``se.from_lance``) restores the class names,
shapes and dtypes. Rows stream through in batches: memory stays at about one batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from stable_explore._optional import require
from stable_explore.dataset._export_target import export_folder, is_own_export, write_export_marker
from stable_explore.errors import CacheWriteError, InvalidOptionError
from stable_explore.schema import KEY_COLUMN
from stable_explore.storage.read.lance_rows import is_lance_dataset

if TYPE_CHECKING:
    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["LANCE_MODES", "write_lance"]

LANCE_MODES = ("create", "overwrite")


def write_lance(ds: CachedDataset, tables: Iterator[pa.Table], path: Path, *, mode: str) -> Path:
    """Write ``ds``'s rows (a view: its rows) as a Lance dataset at ``path``; its path."""
    lance = require("lance", "lance", "ds.to_lance")
    if mode not in LANCE_MODES:
        msg = f"mode must be one of {LANCE_MODES}, got {mode!r}"
        raise InvalidOptionError(msg)
    path = export_folder(
        path, layout="lance", ds=ds, overwrite=mode == "overwrite", overwrite_option="mode='overwrite'"
    )
    if mode == "overwrite" and path.is_dir() and any(path.iterdir()) and not is_lance_dataset(path):
        msg = f"{path} holds an export that is not a Lance dataset; mode='overwrite' only adds a version to one"
        raise InvalidOptionError(msg)
    features = ds.features
    keys = ds.arrow_column(KEY_COLUMN) if not ds.cache_meta.is_seed_v1 else pa.array(ds.base_rows(), pa.int64())
    schema = features.to_arrow_schema()
    schema = schema.append(pa.field(KEY_COLUMN, keys.type)).with_metadata(schema.metadata)

    def stream() -> Iterator[pa.RecordBatch]:
        start = 0
        for table in tables:
            with_keys = table.append_column(KEY_COLUMN, keys.slice(start, table.num_rows))
            start += table.num_rows
            yield from with_keys.cast(schema).to_batches()

    reader = pa.RecordBatchReader.from_batches(schema, stream())
    try:
        lance.write_dataset(reader, str(path), schema=schema, mode=mode)
    except OSError as exc:
        msg = f"Lance could not write {path}: {exc}"
        raise (CacheWriteError(exc.errno, msg, str(path)) if exc.errno else CacheWriteError(msg)) from exc
    except ValueError as exc:  # Lance's word for "exists" (mode="create") and other refusals
        msg = f"Lance could not write {path}: {exc} (mode={mode!r}; mode='overwrite' replaces a dataset)"
        raise InvalidOptionError(msg) from exc
    if not is_own_export(path):
        write_export_marker(path, layout="lance", ds=ds)
    return path
