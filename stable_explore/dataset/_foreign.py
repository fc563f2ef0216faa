"""Opening folders that other tools wrote: stable-datasets' caches (its three layouts) and Lance datasets.

``se.load(path)`` asks :func:`open_foreign` first; it returns None for a stable-explore cache.

- stable-datasets' ``arrow-shards`` layout is stable-datasets' format version 1 plus two names: opened in place.
- stable-datasets' ``lance-rows`` layout, and any Lance dataset, are opened through their Arrow
  mirror (:mod:`stable_explore.storage.read.lance_rows`); the Lance folder is only read.
- stable-datasets' ``lance-video-frames`` layout opens as one row per frame
  (:mod:`stable_explore.dataset._video_frames`).

Neither stable-datasets layout stores class names: pass ``features=`` (the builder's features,
written with our types) and they are checked against the cache's ``schema_fingerprint`` exactly as
stable-datasets' own reader checks them. Without ``features=``, each column's type comes from the
field metadata its writer leaves (``Image`` stays an image; a ``ClassLabel`` is read as its int
codes, ``Value("int64")``, since the names are not on disk). A Lance dataset written by
``ds.to_lance`` carries our features in its schema and needs nothing.

Examples
--------
>>> import tempfile, pathlib, pyarrow as pa, lance, stable_explore as se
>>> home = pathlib.Path(tempfile.mkdtemp())
>>> folder = home / "numbers.lance"
>>> _ = lance.write_dataset(pa.table({"x": [1, 2, 3]}), str(folder))
>>> ds = se.load(folder, home=home)
>>> len(ds), ds[2]
(3, {'x': 3})
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.ipc as ipc

from stable_explore._optional import require
from stable_explore.dataset._video_frames import has_frame_columns, open_video_frames
from stable_explore.errors import CacheCorruptionError, NotACacheError, SchemaError
from stable_explore.schema import Feature, Features, Image
from stable_explore.schema.columns import FEATURES_SCHEMA_KEY
from stable_explore.storage.format.cache_meta import METADATA_FILE
from stable_explore.storage.format.stable_datasets import (
    ARROW_LAYOUT,
    FEATURE_FIELD_KEY,
    LANCE_LAYOUT,
    VIDEO_FRAMES_LAYOUT,
    candidate_fingerprints,
    layout_of,
)
from stable_explore.storage.read.lance_rows import is_lance_dataset, lance_mirror
from stable_explore.storage.read.open_meta import read_sharded_cache_meta

if TYPE_CHECKING:
    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["open_foreign"]


def _raw_metadata(folder: Path) -> dict[str, Any] | None:
    path = folder / METADATA_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent, or damaged: the stable-explore reader says which, naming the file
    return raw if isinstance(raw, dict) else None


def open_foreign(path: Path, features: Features | None = None, home: Path | None = None) -> CachedDataset | None:
    """A dataset over ``path`` when another tool wrote it (see the module), else None.

    A Lance dataset's mirror goes under ``home/.foreign`` (default: the local home's).
    """
    from stable_explore.dataset.cached_dataset import CachedDataset

    raw = _raw_metadata(path)
    layout = layout_of(raw) if raw is not None else None
    foreign_root = None if home is None else home / ".foreign"
    if layout == VIDEO_FRAMES_LAYOUT and raw is not None:
        return open_video_frames(path, raw, root=foreign_root)
    if raw is None and is_lance_dataset(path):
        _refuse_frames_without_metadata(path)
        mirror = lance_mirror(path, root=None if home is None else home / ".foreign")
    elif layout == LANCE_LAYOUT:
        if not is_lance_dataset(path):
            msg = f"its {METADATA_FILE} names the 'lance-rows' layout, but no Lance dataset is here (no _versions/)"
            raise NotACacheError(path, msg)
        mirror = lance_mirror(path, root=None if home is None else home / ".foreign")
    elif layout == ARROW_LAYOUT:
        mirror = path
    else:
        return None  # ours (or another layout, which the stable-explore reader names)
    meta = read_sharded_cache_meta(mirror)
    if layout is not None and raw is not None:
        _check_fingerprint(raw, features, path)
    if features is None:
        features = _features_of(meta.shard_paths)
    return CachedDataset(meta, features=features)


def _refuse_frames_without_metadata(path: Path) -> None:
    """A Lance dataset with the video-frames columns but no ``_metadata.json``: its videos are unknown."""
    lance = require("lance", "lance", "opening a Lance dataset")
    try:
        schema = lance.dataset(str(path)).schema
    except (OSError, ValueError, RuntimeError):
        return  # opening it as a Lance dataset says what is wrong
    if has_frame_columns(schema):
        msg = (
            f"its columns are those of stable-datasets' 'lance-video-frames' layout ({schema.names}), but "
            f"{METADATA_FILE} is missing: it lists each video's path, frame count T, size H and W and first row "
            "(start_row), without which the frames cannot be told apart into videos (stable-datasets' reader "
            f"refuses it too); put the {METADATA_FILE} its writer wrote back beside the Lance files, or rebuild the "
            "cache"
        )
        raise NotACacheError(path, msg)


def _check_fingerprint(raw: dict[str, object], features: Features | None, path: Path) -> None:
    """The features given must be those the cache was built with, as stable-datasets' reader checks."""
    recorded = raw.get("schema_fingerprint")
    if features is None or not recorded:
        return
    if recorded not in candidate_fingerprints(features):
        msg = (
            f"{path / METADATA_FILE}: schema_fingerprint {recorded!r} is not that of the features given "
            f"({sorted(candidate_fingerprints(features))}): the cache was built with other columns, types or class "
            "names; pass the builder's features (same column order and class names)"
        )
        raise SchemaError(msg)


def _features_of(shard_paths: list[Path]) -> Features | None:
    """Features from the first shard's schema: ours if stored there, else from stable-datasets' field metadata."""
    if not shard_paths:
        return None
    try:
        with pa.memory_map(str(shard_paths[0])) as source:
            schema = ipc.open_file(source).schema  # the footer only: the rows are checked when read
    except (OSError, pa.ArrowInvalid) as exc:
        raise CacheCorruptionError(shard_paths[0], f"not a readable Arrow IPC file: {exc}") from exc
    if (schema.metadata or {}).get(FEATURES_SCHEMA_KEY):
        return Features.from_arrow_schema(schema)
    inferred = Features.from_arrow_schema(pa.schema([f.remove_metadata() for f in schema]))
    columns: dict[str, Feature] = {}
    for arrow_field in schema:
        if arrow_field.name not in inferred:
            continue
        kind = (arrow_field.metadata or {}).get(FEATURE_FIELD_KEY)
        columns[arrow_field.name] = Image() if kind == b"Image" else inferred[arrow_field.name]
    return Features(columns)
