"""stable-datasets' cache functions over ours: write its layouts, read and check their metadata, read a shard.

- ``write_sharded_arrow_cache(generator, features, cache_dir, ...)`` checks and encodes rows with our
  writer and lays them out in its ``arrow-shards`` layout (its reader opens them);
  ``write_lance_cache`` in its ``lance-rows`` layout;
- ``read_sharded_cache_meta``, ``validate_sharded_cache`` (its fingerprint check on its layouts),
  ``read_shard``: ours, refusals worded as its reader words them.

Imported from :mod:`stable_explore.compat.stable_datasets`.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore.schema import Features, Value
>>> folder = pathlib.Path(tempfile.mkdtemp()) / "c"
>>> meta = write_sharded_arrow_cache(((i, {"x": i}) for i in range(3)), Features({"x": Value("int32")}), folder)
>>> meta.num_rows, read_sharded_cache_meta(folder).num_shards
(3, 1)
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.dataset import CachedDataset
from stable_explore.errors import CacheCorruptionError, SchemaError
from stable_explore.storage.format.stable_datasets import (
    accept_features,
    candidate_fingerprints,
    fingerprint_text,
    layout_of,
)
from stable_explore.storage.read.open_meta import read_sharded_cache_meta as _read_meta
from stable_explore.storage.read.open_meta import validate_sharded_cache as _validate
from stable_explore.storage.read.shard_file import read_shard
from stable_explore.storage.write.writer import write_sharded_arrow_cache as _write

if TYPE_CHECKING:
    import pyarrow as pa

    from stable_explore.schema import Features as _Features
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta

__all__ = [
    "Example",
    "LanceCacheMeta",
    "read_shard",
    "read_sharded_cache_meta",
    "validate_sharded_cache",
    "write_lance_cache",
    "write_sharded_arrow_cache",
]

Example = tuple[int | str, Mapping[str, object]]
"""One ``(key, row)`` pair a generator yields: the keys all ints or all strings, the row column -> value."""


def _batches(rows: CachedDataset, batch_size: int) -> Iterator[pa.Table]:
    names = list(rows.features)
    for start in range(0, len(rows), batch_size):
        yield rows[start : start + batch_size].to_arrow(names)


def write_sharded_arrow_cache(
    generator: Iterable[Example | Mapping[str, object]],
    features: _Features,
    cache_dir: Path | str,
    *,
    shard_size_bytes: float = float("inf"),
    batch_size: int = 1000,
    compression: str | None = None,
    num_encode_workers: int = 0,
    single_file: bool = False,
    lineage: Mapping[str, object] | None = None,
) -> ShardedCacheMeta:
    """stable-datasets' writer: ``(key, row)`` pairs into its ``arrow-shards`` layout at ``cache_dir``.

    The rows are checked and encoded by our writer into a staging cache beside ``cache_dir``
    (removed afterwards: the data is written twice), then laid out as stable-datasets' writer lays
    them out (what ``ds.export(layout="stable-datasets")`` writes): its ``_metadata.json`` fields
    (``format: "arrow"``, ``layout: "arrow-shards"``, its ``schema_fingerprint``, ``compression``,
    ``lineage``), a shard closed after the batch that passes ``shard_size_bytes`` (``float("inf")``,
    its default, or ``single_file``: one shard). Its reader opens the folder, and so do
    :class:`StableDataset` and ``se.load`` (class names kept). A folder already at ``cache_dir``
    is replaced, as its writer replaces it. ``num_encode_workers`` is accepted and unused (ours
    encodes a column batch at a time).
    """
    del num_encode_workers
    from stable_explore.io.stable_datasets import write_stable_datasets
    from stable_explore.storage.backends.fsutil import publish_dir

    size = None if single_file or shard_size_bytes == float("inf") else int(shard_size_bytes)
    target = Path(cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}-staging-", dir=target.parent) as tmp:
        staged = _write(generator, features, Path(tmp) / "rows", shard_size_bytes=sys.maxsize, batch_size=batch_size)
        rows = CachedDataset(staged)
        out = write_stable_datasets(
            rows, _batches(rows, batch_size), Path(tmp) / "out", shard_size_bytes=size, compression=compression
        )
        if lineage:
            raw = json.loads((out / "_metadata.json").read_text(encoding="utf-8"))
            raw["lineage"] = dict(lineage)
            (out / "_metadata.json").write_text(json.dumps(raw, indent=2), encoding="utf-8")
        publish_dir(out, target)
    return read_sharded_cache_meta(target)


def read_sharded_cache_meta(cache_dir: Path | str) -> ShardedCacheMeta:
    """Our metadata reader; a shard the metadata lists but the folder lacks is named as stable-datasets names it.

    Raises
    ------
    CacheCorruptionError
        A ``ValueError``: "Missing shard file NAME ..." for a listed shard that is absent; else our
        reader's message naming the file.
    """
    try:
        return _read_meta(cache_dir)
    except CacheCorruptionError as exc:
        folder = Path(cache_dir)
        try:
            listed = json.loads((folder / "_metadata.json").read_text(encoding="utf-8")).get("shard_filenames", [])
        except (OSError, ValueError, AttributeError):
            raise exc from None
        absent = [name for name in listed if isinstance(name, str) and not (folder / name).is_file()]
        if not absent:
            raise
        msg = f"Missing shard file {absent[0]!r}, listed in _metadata.json; rebuild the cache ({exc.reason})"
        raise CacheCorruptionError(folder, msg) from exc


def validate_sharded_cache(cache_dir: Path | str, features: _Features) -> ShardedCacheMeta:
    """Our check that a cache was written with ``features``, its refusal worded as stable-datasets words it.

    Raises
    ------
    SchemaError
        A ``ValueError``: "Schema fingerprint mismatch: ..." saying which features the cache holds.
    """
    meta = read_sharded_cache_meta(cache_dir)
    raw = json.loads((Path(cache_dir) / "_metadata.json").read_text(encoding="utf-8"))
    recorded = raw.get("schema_fingerprint")
    if layout_of(raw) is not None and recorded:  # its layout: its check, of the features' fingerprint
        ours = accept_features(features)
        expected = candidate_fingerprints(ours) if ours is not None else set()
        if recorded not in expected:
            msg = (
                f"Schema fingerprint mismatch: {Path(cache_dir) / '_metadata.json'} records {recorded!r}, the "
                f"features given have {sorted(expected)} ({fingerprint_text(ours) if ours else None}); pass the "
                "features the cache was written with (same columns, order, types and class names)"
            )
            raise SchemaError(msg)
        return meta
    try:
        return _validate(cache_dir, features)
    except SchemaError as exc:
        msg = f"Schema fingerprint mismatch: {exc}"
        raise SchemaError(msg) from exc


@dataclass(frozen=True)
class LanceCacheMeta:
    """What :func:`write_lance_cache` wrote: the folder, its row count and the features' fingerprint."""

    cache_dir: Path
    num_rows: int
    schema_fingerprint: str


def write_lance_cache(
    generator: Iterable[Example | Mapping[str, object]],
    features: _Features,
    cache_dir: Path | str,
    *,
    batch_size: int = 1000,
    num_encode_workers: int = 0,
) -> LanceCacheMeta:
    """stable-datasets' Lance writer: ``(key, row)`` pairs into its ``lance-rows`` layout at ``cache_dir``.

    The rows are encoded by our writer into a temporary cache beside ``cache_dir``, then written as
    stable-datasets lays them out (what ``ds.export(layout="stable-datasets-lance")`` writes; the
    ``lance`` extra). ``se.load(cache_dir, features=...)`` and :class:`LanceBackend` read it.
    """
    del num_encode_workers  # ours encodes a column batch at a time
    from stable_explore.io.stable_datasets import write_stable_datasets_lance
    from stable_explore.storage.format.stable_datasets import schema_fingerprint

    target = Path(cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".lance-rows-", dir=target.parent) as tmp:
        meta = _write(generator, features, Path(tmp) / "rows", shard_size_bytes=sys.maxsize, batch_size=batch_size)
        rows = CachedDataset(meta)
        write_stable_datasets_lance(rows, _batches(rows, batch_size), target)
    return LanceCacheMeta(target, meta.num_rows, schema_fingerprint(features))
