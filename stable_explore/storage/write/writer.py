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
import operator
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import pyarrow as pa
from filelock import FileLock

from stable_explore._canonical import unencodable_text
from stable_explore.errors import (
    CacheWriteError,
    DuplicateKeyError,
    EncodingError,
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
    KEY_TYPES,
    METADATA_DIGEST_FIELD,
    METADATA_FILE,
    PATCHES_FORMAT_REVISION,
    PLAIN_FORMAT_REVISION,
    SEGMENTED_FORMAT_VERSION,
    ShardedCacheMeta,
    meta_from_dict,
    metadata_digest,
)
from stable_explore.storage.format.content_runs import content_runs_field
from stable_explore.storage.format.hashing import ContentDigest, row_hashes
from stable_explore.storage.read.shard_file import read_shard_batches
from stable_explore.storage.write.key_check import KeyCheck, key_hashes
from stable_explore.storage.write.shards import BatchCallback, ShardList, ShardWriter

if TYPE_CHECKING:
    from stable_explore.schema import Features

__all__ = [
    "ShardFields",
    "check_unique_keys",
    "shard_metadata",
    "write_metadata",
    "write_shards",
    "write_sharded_arrow_cache",
]


def _key_type_of(key: Any, index: int) -> str:
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return "int64"
    if isinstance(key, str):
        return "string"
    msg = f"keys must be int or str, got {type(key).__name__} {key!r}"
    raise EncodingError(msg, index=index)


class _BatchEncoder:
    """Turns buffered Python columns into one Arrow record batch with key and row-hash columns."""

    def __init__(self, features: Features) -> None:
        self.features = features
        self.names = list(features)
        self.key_type: str | None = None
        self.schema: pa.Schema | None = None
        self.content = ContentDigest()

    def encode(self, columns: list[list[Any]], keys: list[Any], first_index: int) -> pa.RecordBatch:
        arrays = []
        hashable: list[list[Any] | None] = []  # per column, the values whose bytes were stored as they are
        for name, values in zip(self.names, columns, strict=True):
            try:
                array, as_given = self.features[name].encode_batch(values)
            except EncodingError as exc:
                position = exc.index if exc.index is not None else 0
                raise EncodingError(
                    exc.reason, field=name, index=first_index + position, key=keys[position]
                ) from exc.__cause__
            arrays.append(array)
            hashable.append(values if as_given else None)
        hashes = row_hashes(arrays, hashable)
        arrays.append(self._key_array(keys, first_index))
        self.content.update(arrays[-1], hashes)
        arrays.append(pa.array(hashes, type=pa.uint64()))
        if self.schema is None:
            key_type = KEY_TYPES[self.key_type or "int64"]
            self.schema = self.features.to_arrow_schema(with_row_columns=True, key_type=key_type)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _key_array(self, keys: list[Any], first_index: int) -> pa.Array:
        if self.key_type is None:
            self.key_type = _key_type_of(keys[0], first_index)
        try:
            return pa.array(keys, type=KEY_TYPES[self.key_type])
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            for position, key in enumerate(keys):
                if _key_type_of(key, first_index + position) != self.key_type:
                    msg = (
                        f"key {key!r} is a {type(key).__name__}, but earlier keys were "
                        f"{'ints' if self.key_type == 'int64' else 'strings'}; use one key type for all rows"
                    )
                    raise EncodingError(msg, index=first_index + position, key=key) from None
                problem = _key_problem(key)
                if problem:
                    raise EncodingError(problem, index=first_index + position, key=key) from exc
            msg = f"keys of rows {first_index}-{first_index + len(keys) - 1} cannot be stored: {exc}"
            raise EncodingError(msg, index=first_index) from exc


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _key_problem(key: Any) -> str | None:
    """Why one key cannot be stored (outside int64, or text UTF-8 cannot encode), or None."""
    if isinstance(key, str):
        problem = unencodable_text(key)
        return f"the key cannot be stored as UTF-8 ({problem}); clean the key" if problem else None
    if not _INT64_MIN <= int(key) <= _INT64_MAX:
        return f"int keys must fit in int64 ([-2**63, 2**63 - 1]), got {int(key)}; use smaller ints or string keys"
    return None


def _confirm_duplicates(out_dir: Path, written: ShardList, candidates: np.ndarray) -> None:
    """Raise DuplicateKeyError for the first key that repeats among those whose hash repeats (read back)."""
    if not len(candidates):
        return
    first: dict[Any, int] = {}
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


def _field_error(example: Any, features: Features, index: int, key: Any) -> EncodingError:
    """The error for an example whose fields do not match the features (or that is not a dict)."""
    if not isinstance(example, Mapping):
        msg = f"expected a dict of field -> value, got {type(example).__name__}"
        return EncodingError(msg, index=index, key=key)
    return EncodingError(features.check_columns(example) or "fields differ from the features", index=index, key=key)


def _split_item(item: Any, index: int) -> tuple[Any, Any]:
    """(key, example) from a generator item: a ``(key, dict)`` pair or a plain dict."""
    if isinstance(item, tuple):
        if len(item) != 2:
            msg = f"expected a dict or a (key, dict) pair, got a tuple of length {len(item)}"
            raise EncodingError(msg, index=index)
        return item
    return index, item


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

    The first seven are seed 000's format 1; the rest are ours (``docs/format.md``). A version
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


def write_shards(
    examples: Iterable[Any],
    features: Features,
    out_dir: Path,
    *,
    shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
    batch_size: int = 1000,
    compression: str | None = None,
    on_batch: BatchCallback | None = None,
) -> ShardFields:
    """Write shards into ``out_dir`` (which must be private to this call); return its shard fields.

    Memory stays at about one batch: rows are buffered column-wise, encoded and
    hashed per batch, and the shard is streamed to disk.
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
    encoder = _BatchEncoder(features)
    key_check = KeyCheck(out_dir)  # spills sorted key hashes into out_dir past 1M rows
    names = encoder.names
    field_count = len(names)
    # One C-level call fetches every field of an example; batches are transposed at flush.
    fields_of: Callable[[Any], tuple[Any, ...]] = (
        operator.itemgetter(*names) if field_count > 1 else (lambda example: (example[names[0]],))
    )
    pending: list[tuple[Any, ...]] = []
    keys: list[Any] = []
    shards: ShardWriter | None = None  # made at the first batch, when the key type is known
    index = 0

    def flush() -> None:
        nonlocal shards
        columns = [list(column) for column in zip(*pending, strict=True)] if field_count else []
        batch = encoder.encode(columns, keys, index - len(keys))
        key_check.add(keys, batch.column(field_count), index - len(keys))
        pending.clear()
        keys.clear()
        if shards is None:
            assert encoder.schema is not None
            shards = ShardWriter(
                out_dir, encoder.schema, shard_size_bytes=shard_size_bytes, compression=compression, on_batch=on_batch
            )
        shards.write(batch)

    try:
        for item in examples:
            if item.__class__ is tuple and len(item) == 2:
                key, example = item
            else:
                key, example = _split_item(item, index)
            try:
                if len(example) != field_count:
                    raise KeyError
                pending.append(fields_of(example))
            except (KeyError, TypeError, AttributeError):
                raise _field_error(example, features, index, key) from None
            keys.append(key)
            index += 1
            if len(keys) >= batch_size:
                flush()
        if keys:
            flush()
        written = shards.finish() if shards is not None else ShardList([], [], [], [])
    except BaseException:
        key_check.close()
        if shards is not None:
            shards.abort()
        raise
    _confirm_duplicates(out_dir, written, key_check.repeated_hashes())

    return shard_metadata(
        features,
        written,
        num_rows=index,
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
    segments: list[list[int]] | Mapping[str, Any] | None = None,
    content_runs: Mapping[str, Any] | None = None,
    cell_patches: Mapping[str, Any] | None = None,
) -> ShardFields:
    """The ``_metadata.json`` fields that describe the shards (the catalog adds lineage and labels).

    Format 1 keeps every field of seed 000's version 1; format 2 adds ``row_segments``,
    for a version whose rows are runs of shards or whose cells are patched (seed 000's reader
    refuses it, as it should: it would read other rows, or the old values).
    ``content_runs`` (the field :func:`~stable_explore.storage.format.content_runs.content_runs_field`
    gives for the version's runs) lets a later edit rehash only the runs it touches; a version
    without them is hashed whole once. ``cell_patches`` (see :mod:`~stable_explore.storage.format.cell_patches`)
    makes the version format revision 5; without them it is revision 4, which earlier releases read.
    """
    if cell_patches and segments is None:
        # format 1 is what seed 000 reads, whole shards as they are: it would read the unpatched cells
        msg = "a version with cell patches is format 2: give its row segments (every shard whole, if so)"
        raise CacheWriteError(msg)
    meta: ShardFields = {
        # seed 000, format version 1
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


def metadata_text(meta: Mapping[str, Any]) -> str:
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


def write_metadata(cache_dir: Path, meta: Mapping[str, Any]) -> None:
    """Write ``_metadata.json`` (fsynced) into a cache directory being built, sealed with its own digest."""
    path = cache_dir / METADATA_FILE
    sealed = {k: v for k, v in meta.items() if k != METADATA_DIGEST_FIELD}
    sealed[METADATA_DIGEST_FIELD] = metadata_digest(sealed)
    with writing(path), path.open("w", encoding="utf-8") as f:
        f.write(metadata_text(sealed))
        f.flush()
        os.fsync(f.fileno())


def lock_for(target: Path) -> FileLock:
    """The file lock that guards building ``target`` (a file beside it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(target.parent / f".{target.name}.lock"))


def write_sharded_arrow_cache(
    generator: Iterable[Any],
    features: Features,
    cache_dir: Path | str,
    *,
    shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
    batch_size: int = 1000,
    compression: str | None = None,
    extra_metadata: Mapping[str, Any] | None = None,
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
        meta: dict[str, Any] = {**fields, **(extra_metadata or {})}
        write_metadata(tmp, meta)
        publish_dir(tmp, cache_dir)
    return meta_from_dict(cache_dir, meta)
