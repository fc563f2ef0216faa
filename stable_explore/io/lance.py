"""``ds.to_lance(path)``: a Lance dataset of the rows (the ``lance`` extra); ``se.load(path)`` reads it back.

The Lance dataset holds the feature columns as they are stored (labels as ints, images as their
encoded bytes: no re-encode), plus ``__key__`` (each row's key), and our features JSON in its
schema metadata, so reading it back (``se.load`` / ``se.from_lance``) restores the class names,
shapes and dtypes. Rows stream through in batches: memory stays at about one batch.

:class:`LanceRows` gives the rows of a Lance dataset's read-only mirror to a build
(``se.from_lance``), keyed by its ``__key__`` column when it has one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stable_explore._optional import require
from stable_explore.dataset._export import row_keys
from stable_explore.dataset._export_target import export_folder, is_own_export, write_export_marker
from stable_explore.errors import CacheWriteError, InvalidOptionError, SchemaError
from stable_explore.schema import KEY_COLUMN
from stable_explore.schema.huggingface import row_values
from stable_explore.storage.read.lance_rows import is_lance_dataset

if TYPE_CHECKING:
    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["LANCE_MODES", "LanceRows", "write_lance"]

LANCE_MODES = ("create", "overwrite")


def write_lance(
    ds: CachedDataset, tables: Iterator[pa.Table], path: Path, *, mode: str, with_keys: bool = True
) -> Path:
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
    schema = features.to_arrow_schema()
    keys = row_keys(ds) if with_keys else None
    if keys is not None:
        schema = schema.append(pa.field(KEY_COLUMN, keys.type)).with_metadata(schema.metadata)

    def stream() -> Iterator[pa.RecordBatch]:
        start = 0
        for table in tables:
            if keys is not None:
                table = table.append_column(KEY_COLUMN, keys.slice(start, table.num_rows))
            start += table.num_rows
            yield from table.cast(schema).to_batches()

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


class LanceRows:
    """The rows of a Lance dataset, read from its Arrow mirror (``mirror``, opened by ``se.load``), for a build.

    Keyed by the dataset's ``__key__`` column when it has one (``ds.to_lance`` writes it), else
    by position. Building the same Lance dataset again is a cache hit: the mirror's folder name is
    a digest of what the Lance dataset is now.
    """

    def __init__(self, mirror: CachedDataset, source: Path, *, batch_size: int = 1000) -> None:
        self.mirror = mirror
        self.source = source
        self.features = mirror.features
        self.batch_size = batch_size
        names = require("lance", "lance", "se.from_lance").dataset(str(source)).schema.names
        self.keyed = KEY_COLUMN in names

    def __len__(self) -> int:
        return len(self.mirror)

    def __iter__(self) -> Iterator[dict[str, Any]] | Iterator[tuple[Any, dict[str, Any]]]:
        return self._keyed() if self.keyed else self._rows()

    def _rows(self) -> Iterator[dict[str, Any]]:
        for table in self.mirror.with_format("arrow").iter(batch_size=self.batch_size):
            yield from row_values(self.features, table.to_pylist())

    def _keyed(self) -> Iterator[tuple[Any, dict[str, Any]]]:
        keys = self.mirror.arrow_column(KEY_COLUMN)
        if keys.null_count:
            row = keys.is_null().to_pylist().index(True)
            msg = f"{self.source}: row {row} has no key in its {KEY_COLUMN} column"
            raise SchemaError(msg)
        start = 0
        for table in self.mirror.with_format("arrow").iter(batch_size=self.batch_size):
            chunk = keys.slice(start, table.num_rows).to_pylist()
            start += table.num_rows
            yield from zip(chunk, row_values(self.features, table.to_pylist()), strict=True)

    def __stable_token__(self) -> dict[str, Any]:
        """The mirror (its folder is named by a digest of the Lance dataset's state) and the features."""
        return {"lance": self.mirror.cache_dir.name, "features": self.features.to_dict()}
