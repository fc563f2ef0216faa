"""``ds.export(path, layout="stable-datasets")``: a copy that stable-datasets' current reader opens.

Its reader (``open_cache`` -> ``validate_sharded_cache``) asks of an ``arrow-shards`` folder:
``format == "arrow"``, ``layout == "arrow-shards"``, ``cache_format_version == 1``, shard names,
row counts and ``num_rows`` that agree, every shard file present, and a ``schema_fingerprint``
equal to the one it computes from the builder's features. Every one of these can be met without
claiming anything untrue: the shards hold exactly the columns and Arrow types its writer gives
those features (each field tagged with its type's name, as its writer does), and the fingerprint
is computed from the features of the rows written (:mod:`stable_explore.storage.format.stable_datasets`).
Our features JSON rides along in each shard's schema metadata (its reader ignores schema
metadata), so ``se.load`` of the copy keeps class names without ``features=``. What the layout
cannot carry is left out: row keys and row hashes (it has no place for them; ``se.load`` numbers
the rows), versions and lineage.

One shard is written unless ``shard_size_bytes`` is given (its writer's default is one file per split).
``layout="stable-datasets-lance"`` writes its ``lance-rows`` layout instead (:func:`write_stable_datasets_lance`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.ipc as ipc

from stable_explore._optional import require
from stable_explore.dataset._export_target import export_folder, write_export_marker
from stable_explore.errors import InvalidOptionError
from stable_explore.schema import Features, Video
from stable_explore.schema.columns import FEATURES_SCHEMA_KEY
from stable_explore.schema.video import video_path_array
from stable_explore.storage.backends.fsutil import publish_dir, temp_dir_beside
from stable_explore.storage.format.cache_meta import METADATA_FILE, SHARD_NAME_FMT
from stable_explore.storage.format.stable_datasets import (
    ARROW_LAYOUT,
    LANCE_LAYOUT,
    schema_fingerprint,
    stable_datasets_schema,
)

if TYPE_CHECKING:
    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["write_stable_datasets", "write_stable_datasets_lance"]


def write_stable_datasets(
    ds: CachedDataset,
    tables: Iterator[pa.Table],
    path: Path,
    *,
    shard_size_bytes: int | None = None,
    compression: str | None = None,
    image_encoding: str = "PNG",
    overwrite: bool = False,
) -> Path:
    """Write ``ds``'s rows at ``path`` in stable-datasets' ``arrow-shards`` layout (see :func:`export_folder`)."""
    if shard_size_bytes is not None and shard_size_bytes < 1:
        msg = f"shard_size_bytes must be positive (or None: one shard), got {shard_size_bytes}"
        raise InvalidOptionError(msg)
    if compression not in (None, "lz4", "zstd"):
        msg = f"compression must be None, 'lz4' or 'zstd', got {compression!r}"
        raise InvalidOptionError(msg)
    path = export_folder(path, layout="stable-datasets", ds=ds, overwrite=overwrite)
    features = ds.features
    fingerprint = schema_fingerprint(features, image_encoding)  # raises first on a type it has no counterpart for
    schema = stable_datasets_schema(features).with_metadata({FEATURES_SCHEMA_KEY: features.to_json().encode()})
    options = ipc.IpcWriteOptions(compression=compression) if compression else None
    names: list[str] = []
    counts: list[int] = []
    with temp_dir_beside(path) as tmp:
        sink: pa.OSFile | None = None
        writer: ipc.RecordBatchFileWriter | None = None
        shard_bytes = 0
        for table in _with_video_paths(tables, features):
            batch = table.cast(schema).combine_chunks().to_batches()[0]
            if writer is None:
                names.append(SHARD_NAME_FMT.format(len(names)))
                counts.append(0)
                sink = pa.OSFile(str(tmp / names[-1]), "wb")
                writer = ipc.new_file(sink, schema, options=options)
                shard_bytes = 0
            writer.write_batch(batch)
            counts[-1] += batch.num_rows
            shard_bytes += batch.nbytes
            if shard_size_bytes is not None and shard_bytes >= shard_size_bytes:  # its writer's rule, after a batch
                writer.close()
                assert sink is not None
                sink.close()
                writer = sink = None
        if writer is not None and sink is not None:
            writer.close()
            sink.close()
        meta = {
            "cache_format_version": 1,
            "format": "arrow",
            "layout": ARROW_LAYOUT,
            "schema_fingerprint": fingerprint,
            "num_rows": sum(counts),
            "num_shards": len(names),
            "shard_row_counts": counts,
            "shard_filenames": names,
            "shard_size_target_bytes": shard_size_bytes,
        }
        if compression:
            meta["compression"] = compression
        (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=2))
        write_export_marker(tmp, layout="stable-datasets", ds=ds)
        publish_dir(tmp, path)
    return path


def write_stable_datasets_lance(
    ds: CachedDataset,
    tables: Iterator[pa.Table],
    path: Path,
    *,
    image_encoding: str = "PNG",
    overwrite: bool = False,
) -> Path:
    """Write ``ds``'s rows at ``path`` in stable-datasets' ``lance-rows`` layout (the ``lance`` extra).

    Its reader (``open_cache`` -> ``read_lance_cache_meta``) asks for ``format == "lance"`` and
    ``num_rows``, then opens the Lance dataset in the folder; the shards' columns, field tags and
    ``schema_fingerprint`` are those of the ``arrow-shards`` copy above.
    """
    lance = require("lance", "lance", "ds.export(layout='stable-datasets-lance')")
    path = export_folder(path, layout="stable-datasets-lance", ds=ds, overwrite=overwrite)
    features = ds.features
    fingerprint = schema_fingerprint(features, image_encoding)
    schema = stable_datasets_schema(features).with_metadata({FEATURES_SCHEMA_KEY: features.to_json().encode()})
    counted = [0]

    def stream() -> Iterator[pa.RecordBatch]:
        for table in _with_video_paths(tables, features):
            counted[0] += table.num_rows
            yield from table.cast(schema).to_batches()

    with temp_dir_beside(path) as tmp:
        lance.write_dataset(pa.RecordBatchReader.from_batches(schema, stream()), str(tmp), schema=schema)
        meta = {
            "cache_format_version": 1,
            "format": "lance",
            "layout": LANCE_LAYOUT,
            "schema_fingerprint": fingerprint,
            "num_rows": counted[0],
        }
        (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=2))
        write_export_marker(tmp, layout="stable-datasets-lance", ds=ds)
        publish_dir(tmp, path)
    return path


def _with_video_paths(tables: Iterator[pa.Table], features: Features) -> Iterator[pa.Table]:
    """The tables with each ``Video`` column as its paths (its layout's ``Video``); a bytes-only row is named."""
    videos = [name for name, feature in features.items() if isinstance(feature, Video)]
    first_row = 0
    for table in tables:
        for name in videos:
            paths = video_path_array(table.column(name), column=name, first_row=first_row)
            table = table.set_column(table.schema.get_field_index(name), name, paths)
        first_row += table.num_rows
        yield table
