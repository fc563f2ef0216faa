"""Examples -> encoded record batches -> shards and ``_metadata.json``: the build's writing path.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.storage.write.writer import write_sharded_arrow_cache
>>> meta = write_sharded_arrow_cache(({"x": i} for i in range(5)), Features(x=Value("int64")),
...                                  pathlib.Path(tempfile.mkdtemp()) / "c")
>>> meta.num_rows, meta.shard_filenames
(5, ['shard-00000.arrow'])
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import pyarrow as pa
from filelock import FileLock

from stable_explore.errors import (
    CacheWriteError,
    DuplicateKeyError,
    InvalidOptionError,
    SchemaError,
)
from stable_explore.schema.columns import KEY_COLUMN
from stable_explore.storage.backends.fsutil import publish_dir, temp_dir_beside, writing
from stable_explore.storage.format.cache_meta import (
    CACHE_FORMAT_VERSION,
    COMPRESSIONS,
    DEFAULT_SHARD_SIZE_BYTES,
    FORMAT_NAME,
    METADATA_DIGEST_FIELD,
    METADATA_FILE,
    PATCHES_FORMAT_REVISION,
    PLAIN_FORMAT_REVISION,
    SEGMENTED_FORMAT_VERSION,
    ShardedCacheMeta,
    meta_from_dict,
    metadata_digest,
)
from stable_explore.storage.read.shard_file import read_shard_batches
from stable_explore.storage.read.small_files import SMALL_FILES
from stable_explore.storage.write.encode import BatchEncoder
from stable_explore.storage.write.intake import Intake
from stable_explore.storage.write.key_check import KeyCheck, key_hashes
from stable_explore.storage.write.shards import BatchCallback, ShardList, ShardWriter
from stable_explore.storage.write.small_files import content_runs_field

if TYPE_CHECKING:
    from stable_explore.schema import Features

__all__ = [
    "RowsRead",
    "ShardFields",
    "check_unique_keys",
    "shard_metadata",
    "write_metadata",
    "write_shards",
    "write_sharded_arrow_cache",
]


def _confirm_duplicates(out_dir: Path, written: ShardList, candidates: np.ndarray) -> None:
    """Raise DuplicateKeyError for the first key that repeats among those whose hash repeats (read back)."""
    if not len(candidates):
        return
    first: dict[object, int] = {}
    offset = 0
    for name in written.names:
        for batch in read_shard_batches(out_dir / name):  # a batch at a time: memory stays flat in the rows
            keys = batch.column(KEY_COLUMN)
            for position in np.flatnonzero(np.isin(key_hashes(keys), candidates)).tolist():
                key = keys[position].as_py()
                if key in first:
                    raise DuplicateKeyError(key, first[key], offset + position)
                first[key] = offset + position
            offset += batch.num_rows


def check_unique_keys(out_dir: Path, written: ShardList) -> None:
    """Refuse a key repeated across shards that separate writers wrote (a parallel build's tasks).

    Each writer already refused repeats among its own rows; this compares every shard's keys
    in the same bounded memory as a serial build (:class:`KeyCheck`), and names rows by their
    place in ``written``.
    """
    check = KeyCheck(out_dir)
    try:
        for name in written.names:
            for batch in read_shard_batches(out_dir / name):
                check.add_unique(batch.column(KEY_COLUMN))
        _confirm_duplicates(out_dir, written, check.repeated_hashes())
    finally:
        check.close()


class _ShardFieldsRequired(TypedDict):
    cache_format_version: int
    schema_fingerprint: str
    num_rows: int
    num_shards: int
    shard_row_counts: list[int]
    shard_filenames: list[str]
    shard_size_target_bytes: int
    format: str
    format_revision: int
    features: dict[str, Any]
    shard_hashes: list[str]
    shard_sizes: list[int]
    key_type: str
    compression: str | None
    content_digest: str
    batch_digests: list[dict[str, Any] | None]


class ShardFields(_ShardFieldsRequired, total=False):
    """The ``_metadata.json`` fields that describe a version's shards, as the writer gives them.

    The first seven are stable-datasets' format 1; the rest are ours (``docs/format.md``). A version
    whose rows are runs of shards has ``row_segments``; ``content_runs`` names the file of the
    runs its content digest combines; ``cell_patches`` the file of its patched cells. The
    catalog adds lineage and labels before it seals the file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from stable_explore import Features, Value
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> fields = write_shards(({"x": x} for x in [1, 2, 3]), Features(x=Value("int64")), folder)
    >>> fields["num_rows"], fields["shard_filenames"], "row_segments" in fields
    (3, ['shard-00000.arrow'], False)
    """

    content_runs: dict[str, Any]
    row_segments: list[list[int]] | Mapping[str, Any]
    cell_patches: dict[str, Any]


class RowsRead:
    """How many rows a build's source gave (kept up to date by :func:`write_shards`), for a failed build's note."""

    def __init__(self) -> None:
        self.rows = 0


class _Rebatcher:
    """Record batches of any sizes in, record batches of ``batch_size`` rows out (the last may be shorter).

    Rows come in chunks of ``batch_size`` (then they pass straight through) or as column batches of
    any size, which are sliced (no copy) or, when smaller, gathered into whole batches.
    """

    def __init__(self, batch_size: int) -> None:
        self.batch_size = batch_size
        self._held: list[pa.RecordBatch] = []
        self._rows = 0

    def add(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        if not self._held and batch.num_rows == self.batch_size:
            yield batch
            return
        self._held.append(batch)
        self._rows += batch.num_rows
        if self._rows >= self.batch_size:
            yield from self._release(keep_tail=True)

    def finish(self) -> Iterator[pa.RecordBatch]:
        yield from self._release(keep_tail=False)

    def _release(self, *, keep_tail: bool) -> Iterator[pa.RecordBatch]:
        if not self._held:
            return
        if len(self._held) == 1:
            whole = self._held[0]
        else:
            whole = pa.Table.from_batches(self._held).combine_chunks().to_batches()[0]
        self._held, self._rows = [], 0
        size = self.batch_size
        full = whole.num_rows - whole.num_rows % size if keep_tail else whole.num_rows
        for start in range(0, full, size):
            yield whole.slice(start, min(size, full - start))
        if full < whole.num_rows:
            self._held, self._rows = [whole.slice(full)], whole.num_rows - full


def write_shards(
    examples: Iterable[object],
    features: Features,
    out_dir: Path,
    *,
    shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
    batch_size: int = 1000,
    compression: str | None = None,
    on_batch: BatchCallback | None = None,
    batched: bool = False,
    rows_read: RowsRead | None = None,
) -> ShardFields:
    """Write shards into ``out_dir`` (which must be private to this call); return its shard fields.

    ``examples`` yields example dicts, ``(key, dict)`` pairs, or column batches (see
    :mod:`~stable_explore.storage.write.column_batches`; a dict is a batch of columns only with
    ``batched=True``). Memory stays at about one batch: rows are gathered column-wise, encoded and
    hashed per batch, and the shard is streamed to disk. ``rows_read`` is kept at the number of rows
    the source gave, also when the build fails.
    """
    if compression not in COMPRESSIONS:
        msg = f"compression must be one of {COMPRESSIONS}, got {compression!r}"
        raise InvalidOptionError(msg)
    if batch_size < 1 or shard_size_bytes < 1:
        msg = f"batch_size and shard_size_bytes must be positive, got {batch_size} and {shard_size_bytes}"
        raise InvalidOptionError(msg)
    if not features:
        msg = "features must have at least one column"
        raise SchemaError(msg)
    encoder = BatchEncoder(features)
    key_check = KeyCheck(out_dir)  # spills sorted key hashes into out_dir past 1M rows
    intake = Intake(examples, features, batch_size=batch_size, batched=batched)
    rebatcher = _Rebatcher(batch_size)
    key_column = len(features)
    shards: ShardWriter | None = None  # made at the first batch, when the key type is known

    def write(batch: pa.RecordBatch) -> None:
        nonlocal shards
        if shards is None:
            assert encoder.schema is not None
            shards = ShardWriter(
                out_dir, encoder.schema, shard_size_bytes=shard_size_bytes, compression=compression, on_batch=on_batch
            )
        shards.write(batch)

    try:
        for chunk in intake.chunks():
            batch = encoder.encode(chunk)
            key_check.add(chunk.keys, batch.column(key_column), chunk.first, encoder.key_texts)
            for ready in rebatcher.add(batch):
                write(ready)
        for ready in rebatcher.finish():
            write(ready)
        written = shards.finish() if shards is not None else ShardList([], [], [], [])
    except BaseException:
        key_check.close()
        if shards is not None:
            shards.abort()
        raise
    finally:
        if rows_read is not None:
            rows_read.rows = intake.rows_read
    _confirm_duplicates(out_dir, written, key_check.repeated_hashes())

    return shard_metadata(
        features,
        written,
        num_rows=intake.index,
        shard_size_bytes=shard_size_bytes,
        key_type=encoder.key_type or "int64",
        compression=compression,
        content_digest=encoder.content.hexdigest(),
        content_runs=content_runs_field(out_dir, encoder.content.runs),
    )


def shard_metadata(
    features: Features,
    shards: ShardList,
    *,
    num_rows: int,
    shard_size_bytes: int,
    key_type: str,
    compression: str | None,
    content_digest: str,
    segments: list[list[int]] | Mapping[str, object] | None = None,
    content_runs: Mapping[str, object] | None = None,
    cell_patches: Mapping[str, object] | None = None,
) -> ShardFields:
    """The ``_metadata.json`` fields that describe the shards (the catalog adds lineage and labels).

    Format 1 keeps every field of stable-datasets' format version 1; format 2 adds ``row_segments``,
    for a version whose rows are runs of shards or whose cells are patched (stable-datasets' reader
    refuses it, as it should: it would read other rows, or the old values).
    ``content_runs`` (the field :func:`~stable_explore.storage.write.small_files.content_runs_field`
    gives for the version's runs) lets a later edit rehash only the runs it touches; a version
    without them is hashed whole once. ``cell_patches`` (see :mod:`~stable_explore.storage.format.cell_patches`)
    makes the version format revision 5; without them it is revision 4, which earlier releases read.
    """
    if cell_patches and segments is None:
        # format 1 is what stable-datasets reads, whole shards as they are: it would read the unpatched cells
        msg = "a version with cell patches is format 2: give its row segments (every shard whole, if so)"
        raise CacheWriteError(msg)
    meta: ShardFields = {
        # stable-datasets' format version 1
        "cache_format_version": SEGMENTED_FORMAT_VERSION if segments is not None else CACHE_FORMAT_VERSION,
        "schema_fingerprint": features.fingerprint(),
        "num_rows": num_rows,
        "num_shards": len(shards.names),
        "shard_row_counts": shards.rows,
        "shard_filenames": shards.names,
        "shard_size_target_bytes": shard_size_bytes,
        # stable-explore additions
        "format": FORMAT_NAME,
        "format_revision": PATCHES_FORMAT_REVISION if cell_patches else PLAIN_FORMAT_REVISION,
        "features": features.to_dict(),
        "shard_hashes": shards.hashes,
        "shard_sizes": shards.sizes,
        "key_type": key_type,
        "compression": compression,
        "content_digest": content_digest,
        # format revision 4: per shard, the file beside it holding its record batches' digests (None: not recorded)
        "batch_digests": [b.to_json() if b is not None else None for b in shards.batch_files]
        if len(shards.batch_files) == len(shards.names)
        else [None] * len(shards.names),
    }
    if content_runs is not None:
        # the runs of rows the content digest combines (an edit rehashes only those it touches): their file
        meta["content_runs"] = dict(content_runs)
    if segments is not None:
        meta["row_segments"] = segments
    if cell_patches:
        meta["cell_patches"] = dict(cell_patches)
    return meta


def metadata_text(meta: Mapping[str, object]) -> str:
    """The text of ``_metadata.json``: one field a line, each value as compact JSON.

    Not indented: every save rewrites this file whole, and at millions of rows its lists
    (``batch_digests``, ``content_runs``) indented one element a line made it about a
    third larger. Key order is kept: the order of ``features`` is the column order.

    Examples
    --------
    >>> print(metadata_text({"num_rows": 2, "shard_row_counts": [1, 1]}), end="")
    {
    "num_rows":2,
    "shard_row_counts":[1,1]
    }
    """
    lines = [json.dumps(k) + ":" + json.dumps(v, separators=(",", ":"), allow_nan=False) for k, v in meta.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_metadata(cache_dir: Path, meta: Mapping[str, object], *, durable: bool = True) -> None:
    """Write ``_metadata.json`` (fsynced) into a cache directory being built, sealed with its own digest.

    ``durable=False`` leaves the fsync to the caller, who must flush the file before publishing the
    directory (a publish flushes it together with the directory: see ``fsync_together``).
    """
    path = cache_dir / METADATA_FILE
    sealed = {k: v for k, v in meta.items() if k != METADATA_DIGEST_FIELD}
    sealed[METADATA_DIGEST_FIELD] = metadata_digest(sealed)
    with writing(path), path.open("w", encoding="utf-8") as f:
        f.write(metadata_text(sealed))
        if durable:
            f.flush()
            os.fsync(f.fileno())


def lock_for(target: Path) -> FileLock:
    """The file lock that guards building ``target`` (a file beside it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(target.parent / f".{target.name}.lock"))


def write_sharded_arrow_cache(
    generator: Iterable[object],
    features: Features,
    cache_dir: Path | str,
    *,
    shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
    batch_size: int = 1000,
    compression: str | None = None,
    extra_metadata: Mapping[str, object] | None = None,
    on_batch: BatchCallback | None = None,
) -> ShardedCacheMeta:
    """Consume examples and publish them as a directory of Arrow IPC shards.

    Parameters
    ----------
    generator:
        Yields example dicts, or ``(key, dict)`` pairs; a plain dict's key is
        its running index. Keys are all ints or all strings.
    features:
        The schema; every example must have exactly these fields.
    cache_dir:
        Where the cache is published. An existing cache there is replaced only
        when the new one is complete.
    shard_size_bytes:
        Approximate in-memory bytes per shard before a new shard starts.
    batch_size:
        Rows per record batch; memory use is about one batch.
    compression:
        None, ``"lz4"`` or ``"zstd"`` (Arrow IPC buffer compression).
    extra_metadata:
        More fields for ``_metadata.json``.
    on_batch:
        Progress callback, called with (rows in batch, bytes written so far).

    Returns
    -------
    ShardedCacheMeta

    Raises
    ------
    EncodingError
        A bad example, naming its index, key and field. Nothing is published.

    Notes
    -----
    Shards go to a temp dir beside ``cache_dir``; files and directory are
    fsynced, then renamed into place, all under a file lock. On any error or
    KeyboardInterrupt the temp dir is removed and the old cache is untouched.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from stable_explore import Features, ClassLabel
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "labels"
    >>> rows = [("a", {"label": "cat"}), ("b", {"label": "dog"})]
    >>> meta = write_sharded_arrow_cache(rows, Features(label=ClassLabel(names=["cat", "dog"])), out)
    >>> meta.num_rows, meta.key_type
    (2, 'string')
    """
    cache_dir = Path(cache_dir)
    with lock_for(cache_dir), temp_dir_beside(cache_dir) as tmp:
        fields = write_shards(
            generator,
            features,
            tmp,
            shard_size_bytes=shard_size_bytes,
            batch_size=batch_size,
            compression=compression,
            on_batch=on_batch,
        )
        meta: dict[str, object] = {**fields, **(extra_metadata or {})}
        write_metadata(tmp, meta)
        publish_dir(tmp, cache_dir)
    return meta_from_dict(cache_dir, meta, files=SMALL_FILES)
