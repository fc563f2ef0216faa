"""Generator -> directory of Arrow IPC shards, and reading that directory back safely.

A cache directory holds ``shard-NNNNN.arrow`` files and ``_metadata.json``.
The metadata keeps every field of seed 000's format version 1 (so that reader
lists and reads our shards; its schema-fingerprint check differs) and adds the full ``features``, one content digest and
byte size per shard, the key type and the compression. Every shard also stores
two row columns: ``__key__`` (the generator's key, or the running index) and
``__row_hash__`` (a 64-bit content hash), so versions can be diffed row by row
without decoding images.

Example
-------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.cache import write_sharded_arrow_cache, read_sharded_cache_meta
>>> home = pathlib.Path(tempfile.mkdtemp())
>>> meta = write_sharded_arrow_cache(({"x": i} for i in range(5)), Features(x=Value("int64")), home / "c")
>>> meta.num_rows, meta.num_shards
(5, 1)
>>> read_sharded_cache_meta(home / "c").shard_filenames
['shard-00000.arrow']
"""

from __future__ import annotations

import contextlib
import errno
import json
import operator
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
from filelock import FileLock

from stable_explore._fsutil import fsync_path, publish_dir, start_writeback, temp_dir_beside, writeback_supported
from stable_explore._hashing import (
    FILE_HASH_ALGORITHM,
    ContentDigest,
    format_digest,
    hash_file,
    new_file_hasher,
    row_hashes,
)
from stable_explore.errors import (
    CacheCorruptionError,
    CacheNotFoundError,
    CacheWriteError,
    EncodingError,
    SchemaError,
    UnsafePathError,
)
from stable_explore.schema import HASH_COLUMN, KEY_COLUMN, Features

__all__ = [
    "DEFAULT_SHARD_SIZE_BYTES",
    "ShardedCacheMeta",
    "VerifyReport",
    "open_shard",
    "read_shard",
    "read_sharded_cache_meta",
    "validate_sharded_cache",
    "verify",
    "write_sharded_arrow_cache",
]

CACHE_FORMAT_VERSION = 1
SEGMENTED_FORMAT_VERSION = 2  # only for versions whose rows are runs of shards (see ShardedCacheMeta.segments)
FORMAT_NAME = "stable-explore"
FORMAT_REVISION = 1
SHARD_NAME_FMT = "shard-{:05d}.arrow"
METADATA_FILE = "_metadata.json"
DEFAULT_SHARD_SIZE_BYTES = 256 * 1024 * 1024
COMPRESSIONS = (None, "lz4", "zstd")
_KEY_TYPES = {"int64": pa.int64(), "string": pa.string()}

BatchCallback = Callable[[int, int], None]
"""Called after each written batch with (rows in the batch, bytes written so far)."""


@dataclass
class ShardedCacheMeta:
    """What ``_metadata.json`` says about a cache directory.

    The first six fields are seed 000's; the rest are empty for a cache that
    seed 000's writer produced.
    """

    cache_dir: Path
    num_rows: int
    num_shards: int
    shard_filenames: list[str]
    shard_row_counts: list[int]
    schema_fingerprint: str
    shard_hashes: list[str] | None = None
    shard_sizes: list[int] | None = None
    features: Features | None = None
    key_type: str = "int64"
    compression: str | None = None
    raw: dict[str, Any] | None = None
    row_segments: list[tuple[int, int, int]] | None = None

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """The rows in order, as (shard index, first row in that shard, row count) runs.

        Format version 1 reads every shard whole; version 2 (an edited version that reuses
        parts of its parent's shards) lists the runs explicitly.
        """
        if self.row_segments is not None:
            return list(self.row_segments)
        return [(i, 0, count) for i, count in enumerate(self.shard_row_counts)]

    @property
    def shard_paths(self) -> list[Path]:
        """Absolute paths of the shard files, in row order."""
        return [self.cache_dir / name for name in self.shard_filenames]

    @property
    def is_seed_v1(self) -> bool:
        """True for a cache written by seed 000 (no row keys, hashes or features)."""
        return self.shard_hashes is None

    @property
    def nbytes(self) -> int:
        """Bytes of shard files on disk."""
        if self.shard_sizes is not None:
            return sum(self.shard_sizes)
        return sum(p.stat().st_size for p in self.shard_paths)


# --- writing -------------------------------------------------------------------


def _write_error(exc: OSError, path: Path) -> CacheWriteError:
    """The CacheWriteError, naming ``path``, for a file-system failure while writing it."""
    if exc.errno is None:
        return CacheWriteError(f"{path}: {exc}")
    return CacheWriteError(exc.errno, exc.strerror, str(path))


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Turn a file-system failure while writing ``path`` into a CacheWriteError that names it."""
    try:
        yield
    except CacheWriteError:
        raise
    except OSError as exc:
        raise _write_error(exc, path) from exc


_WRITEBACK_STEP = 8 * 1024 * 1024  # ask the kernel to start writing each shard to disk in steps of this size

WritebackRequest = Callable[[Path, int, int], None]
"""Called with (file, offset, length) when a stretch of a shard is ready to be written back."""


class _DigestingFile:
    """A raw output file that digests every byte on its way to the file.

    The IPC writer hands it Arrow buffers without copying them, so each byte is
    hashed while it is still in the CPU cache, and nothing is read back later.
    """

    def __init__(self, path: Path, on_writeback: WritebackRequest) -> None:
        self.path = path
        with _writing(path):
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o644)
        self.hasher = new_file_hasher()
        self.position = 0
        self.requested = 0  # bytes handed to the kernel's writeback so far
        self.on_writeback = on_writeback
        self.closed = False

    def write(self, data: Any) -> int:
        self.hasher.update(data)
        view = memoryview(data).cast("B")
        done = 0
        try:  # not _writing(): this runs for every buffer of every batch
            while done < len(view):
                count = os.write(self.fd, view[done:])
                if count == 0:  # never for a regular file; some FUSE file systems could loop forever
                    raise OSError(errno.EIO, "the file system accepted no bytes")
                done += count
        except OSError as exc:  # a full disk, a quota: say which file could not be written
            raise _write_error(exc, self.path) from exc
        self.position += done
        if self.position - self.requested >= _WRITEBACK_STEP:
            self.on_writeback(self.path, self.requested, self.position - self.requested)
            self.requested = self.position
        return done

    def tell(self) -> int:
        return self.position

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        return None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)


class _ShardSink:
    """The open shard: Arrow's IPC file writer, writing through a :class:`_DigestingFile`."""

    def __init__(self, path: Path, schema: pa.Schema, compression: str | None, on_writeback: WritebackRequest) -> None:
        self.path = path
        self.file = _DigestingFile(path, on_writeback)
        self.stream = pa.PythonFile(self.file, mode="w")
        try:
            self.writer = ipc.new_file(self.stream, schema, options=ipc.IpcWriteOptions(compression=compression))
        except BaseException:
            self.file.close()
            raise
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> int:
        """Append a batch; returns the file's size so far."""
        self.writer.write_batch(batch)
        self.rows += batch.num_rows
        return self.file.position

    def close(self) -> tuple[int, int, str]:
        """Write the footer and close (not yet fsynced); returns (rows, size, digest of the file)."""
        self.writer.close()
        self.stream.close()
        self.file.close()
        size = self.file.position
        on_disk = self.path.stat().st_size
        if on_disk != size:
            msg = f"{self.path} is {on_disk} bytes on disk, but {size} were written"
            raise CacheWriteError(msg)
        return self.rows, size, format_digest(self.file.hasher)

    def abort(self) -> None:
        for closer in (self.writer.close, self.stream.close, self.file.close):
            try:
                closer()
            except BaseException:  # noqa: BLE001, S112 - best effort while already failing
                continue


def _start_writeback_of(path: Path, offset: int, length: int) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # the build was aborted and its files removed; nothing left to write back
    try:
        start_writeback(fd, offset, length)
    finally:
        os.close(fd)


def _fsync_returning(path: Path, digest: str) -> str:
    with _writing(path):  # a delayed allocation or a network file system may report a full disk only here
        fsync_path(path)
    return digest


def _seal_shard(path: Path) -> str:
    """Digest a finished shard (read back from the page cache) and fsync it."""
    digest = hash_file(path)
    return _fsync_returning(path, digest)


@dataclass
class ShardList:
    """The shards a :class:`ShardWriter` produced, in order."""

    names: list[str]
    rows: list[int]
    sizes: list[int]
    hashes: list[str]
    bytes_written: int = 0
    linked: int = 0


class ShardWriter:
    """Writes encoded record batches into numbered shards, rotating at a size target.

    Batches are written by the calling thread (Arrow's writer hands its buffers
    to a file object that digests them on the way, so there is no second pass
    over the data), and a helper thread does what waits on the disk: starting
    the writeback of each few megabytes, and fsyncing finished shards. A writer
    thread for the batches was measured slower on 2 cores: the handing over of
    each batch between threads cost more than the write itself. ``link`` adds an
    existing, unchanged shard file (a hard link, or a copy where links are not
    possible) as another shard.
    """

    def __init__(
        self,
        out_dir: Path,
        schema: pa.Schema,
        *,
        shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
        compression: str | None = None,
        on_batch: BatchCallback | None = None,
    ) -> None:
        self.out_dir = out_dir
        self.schema = schema
        self.shard_size_bytes = shard_size_bytes
        self.compression = compression
        self.on_batch = on_batch
        self.bytes_written = 0
        self.linked = 0
        self._names: list[str] = []
        self._shards: dict[int, tuple[int, int, Future[str] | str]] = {}  # index -> (rows, size, digest)
        self._sink: _ShardSink | None = None
        self._sink_index = -1
        self._sink_bytes = 0
        self._sink_rows = 0
        self._sealer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stable-explore-seal")

    def _next_name(self) -> int:
        self._names.append(SHARD_NAME_FMT.format(len(self._names)))
        return len(self._names) - 1

    def _request_writeback(self, path: Path, offset: int, length: int) -> None:
        if writeback_supported():
            self._sealer.submit(_start_writeback_of, path, offset, length)

    def next_row(self) -> tuple[int, int]:
        """(shard index, row in that shard) where the next written row will land."""
        if self._sink is None:
            return len(self._names), 0
        return self._sink_index, self._sink_rows

    def write(self, batch: pa.RecordBatch) -> None:
        """Append a batch (of ``schema``) to the open shard; start a new shard past the size target."""
        if self._sink is None:
            self._sink_index = self._next_name()
            path = self.out_dir / self._names[self._sink_index]
            self._sink = _ShardSink(path, self.schema, self.compression, self._request_writeback)
            self._sink_bytes = 0
            self._sink_rows = 0
        written = self._sink.write(batch)
        self._sink_rows += batch.num_rows
        self._sink_bytes += batch.nbytes
        if self.on_batch is not None:
            self.on_batch(batch.num_rows, self.bytes_written + written)
        if self._sink_bytes >= self.shard_size_bytes:
            self.close_shard()

    def close_shard(self) -> None:
        """Finish the open shard (if any); the next batch starts a new one."""
        if self._sink is None:
            return
        rows, size, digest = self._sink.close()
        self.bytes_written += size
        self._shards[self._sink_index] = (rows, size, self._sealer.submit(_fsync_returning, self._sink.path, digest))
        self._sink = None

    def link(self, source: Path, *, rows: int, size: int, digest: str) -> int:
        """Add an existing shard file, unchanged, as another shard; returns its index.

        The open shard stays open: rows written later keep filling it.
        """
        index = self._next_name()
        target = self.out_dir / self._names[index]
        try:
            os.link(source, target)
        except OSError:
            with _writing(target):
                shutil.copyfile(source, target)
            self.bytes_written += size
            self._shards[index] = (rows, size, self._sealer.submit(_seal_shard, target))
        else:
            self.linked += 1
            self._shards[index] = (rows, size, digest)
        return index

    def finish(self) -> ShardList:
        """Close the last shard and wait for every digest and fsync."""
        try:
            self.close_shard()
            entries = [self._shards[i] for i in range(len(self._names))]
            hashes = [h if isinstance(h, str) else h.result() for _, _, h in entries]
        finally:
            self._sealer.shutdown(wait=True, cancel_futures=True)  # after a failure, queued fsyncs are moot
        return ShardList(
            names=list(self._names),
            rows=[rows for rows, _, _ in entries],
            sizes=[size for _, size, _ in entries],
            hashes=hashes,
            bytes_written=self.bytes_written,
            linked=self.linked,
        )

    def abort(self) -> None:
        """Stop after a failure: close the open file, and let the helper thread finish."""
        if self._sink is not None:
            self._sink.abort()
            self._sink = None
        self._sealer.shutdown(wait=True, cancel_futures=True)


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
            key_type = _KEY_TYPES[self.key_type or "int64"]
            self.schema = self.features.to_arrow_schema(with_row_columns=True, key_type=key_type)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _key_array(self, keys: list[Any], first_index: int) -> pa.Array:
        if self.key_type is None:
            self.key_type = _key_type_of(keys[0], first_index)
        try:
            return pa.array(keys, type=_KEY_TYPES[self.key_type])
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            for position, key in enumerate(keys):
                if _key_type_of(key, first_index + position) != self.key_type:
                    msg = (
                        f"key {key!r} is a {type(key).__name__}, but earlier keys were "
                        f"{'ints' if self.key_type == 'int64' else 'strings'}; use one key type for all rows"
                    )
                    raise EncodingError(msg, index=first_index + position, key=key) from None
            raise


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


def write_shards(
    examples: Iterable[Any],
    features: Features,
    out_dir: Path,
    *,
    shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
    batch_size: int = 1000,
    compression: str | None = None,
    on_batch: BatchCallback | None = None,
) -> dict[str, Any]:
    """Write shards into ``out_dir`` (which must be private to this call); return the metadata dict.

    Memory stays at about one batch: rows are buffered column-wise, encoded and
    hashed per batch, and the shard is streamed to disk.
    """
    if compression not in COMPRESSIONS:
        msg = f"compression must be one of {COMPRESSIONS}, got {compression!r}"
        raise ValueError(msg)
    if batch_size < 1 or shard_size_bytes < 1:
        msg = f"batch_size and shard_size_bytes must be positive, got {batch_size} and {shard_size_bytes}"
        raise ValueError(msg)
    if not features:
        msg = "features must have at least one column"
        raise SchemaError(msg)
    encoder = _BatchEncoder(features)
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
        if shards is not None:
            shards.abort()
        raise

    return shard_metadata(
        features,
        written,
        num_rows=index,
        shard_size_bytes=shard_size_bytes,
        key_type=encoder.key_type or "int64",
        compression=compression,
        content_digest=encoder.content.hexdigest(),
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
    segments: list[list[int]] | None = None,
) -> dict[str, Any]:
    """The ``_metadata.json`` fields that describe the shards (the catalog adds lineage and labels).

    Format 1 keeps every field of seed 000's version 1; format 2 adds ``row_segments``,
    for a version whose rows are runs of shards (seed 000's reader refuses it, as it should).
    """
    meta: dict[str, Any] = {
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
        "format_revision": FORMAT_REVISION,
        "features": features.to_dict(),
        "shard_hashes": shards.hashes,
        "shard_sizes": shards.sizes,
        "key_type": key_type,
        "compression": compression,
        "content_digest": content_digest,
    }
    if segments is not None:
        meta["row_segments"] = segments
    return meta


def write_metadata(cache_dir: Path, meta: Mapping[str, Any]) -> None:
    """Write ``_metadata.json`` (fsynced) into a cache directory being built."""
    path = cache_dir / METADATA_FILE
    with _writing(path), path.open("w", encoding="utf-8") as f:
        # key order kept: the order of "features" is the column order
        json.dump(meta, f, indent=2, allow_nan=False)
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
        meta = write_shards(
            generator,
            features,
            tmp,
            shard_size_bytes=shard_size_bytes,
            batch_size=batch_size,
            compression=compression,
            on_batch=on_batch,
        )
        if extra_metadata:
            meta.update(extra_metadata)
        write_metadata(tmp, meta)
        publish_dir(tmp, cache_dir)
    return _meta_from_dict(cache_dir, meta)


# --- reading -------------------------------------------------------------------


def _corrupt(path: Path, reason: str) -> CacheCorruptionError:
    return CacheCorruptionError(path, reason)


def _expect_int_list(raw: Mapping[str, Any], field: str, length: int, path: Path) -> list[int]:
    values = raw.get(field)
    if (
        not isinstance(values, list)
        or len(values) != length
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)
    ):
        msg = f"{field!r} must be a list of {length} non-negative ints, found {values!r:.200}"
        raise _corrupt(path, msg)
    return values


def _checked_shard_name(name: Any, cache_dir: Path, meta_path: Path) -> str:
    """Reject shard names that could point outside the cache directory."""
    if not isinstance(name, str) or not name:
        raise UnsafePathError(meta_path, f"shard file name must be a non-empty string, found {name!r}")
    separators = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    if name in (".", "..") or any(s in name for s in separators) or "\x00" in name or Path(name).is_absolute():
        raise UnsafePathError(meta_path, f"shard file name {name!r} is not a plain file name inside the cache")
    resolved = (cache_dir / name).resolve()
    if resolved.parent != cache_dir.resolve():
        raise UnsafePathError(meta_path, f"shard file {name!r} resolves to {resolved}, outside {cache_dir}")
    return name


def read_sharded_cache_meta(cache_dir: Path | str) -> ShardedCacheMeta:
    """Read and check ``_metadata.json`` of a cache directory.

    Checks that the file is valid JSON of the expected shape, that counts add
    up, that every shard name is a plain file inside the directory, and that
    every shard exists with the recorded size.

    Raises
    ------
    CacheNotFoundError
        No cache at ``cache_dir``.
    CacheCorruptionError
        The metadata or a shard does not match; the message names the file.
    """
    cache_dir = Path(cache_dir)
    meta_path = cache_dir / METADATA_FILE
    if not meta_path.is_file():
        msg = f"no cache at {cache_dir} (missing {METADATA_FILE})"
        raise CacheNotFoundError(msg)
    try:
        raw = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _corrupt(meta_path, f"not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise _corrupt(meta_path, f"expected a JSON object, found {type(raw).__name__}")
    version = raw.get("cache_format_version")
    if version not in (CACHE_FORMAT_VERSION, SEGMENTED_FORMAT_VERSION):
        expected = f"{CACHE_FORMAT_VERSION} or {SEGMENTED_FORMAT_VERSION}"
        msg = f"unsupported cache_format_version {version!r} (expected {expected})"
        raise _corrupt(meta_path, msg)
    num_shards = raw.get("num_shards")
    num_rows = raw.get("num_rows")
    if not isinstance(num_shards, int) or not isinstance(num_rows, int) or num_shards < 0 or num_rows < 0:
        raise _corrupt(
            meta_path, f"num_shards and num_rows must be non-negative ints, found {num_shards!r}, {num_rows!r}"
        )
    names = raw.get("shard_filenames")
    if not isinstance(names, list) or len(names) != num_shards:
        raise _corrupt(meta_path, f"metadata claims {num_shards} shards but lists {names!r:.200}")
    names = [_checked_shard_name(n, cache_dir, meta_path) for n in names]
    if len(set(names)) != len(names):
        raise _corrupt(meta_path, "a shard file is listed twice")
    counts = _expect_int_list(raw, "shard_row_counts", num_shards, meta_path)
    segments = _checked_segments(raw, counts, meta_path) if version == SEGMENTED_FORMAT_VERSION else None
    total = sum(length for _, _, length in segments) if segments is not None else sum(counts)
    if total != num_rows:
        raise _corrupt(meta_path, f"shard row counts add up to {total}, but num_rows is {num_rows}")

    hashes = raw.get("shard_hashes")
    sizes = None
    features = None
    if hashes is not None:
        if not isinstance(hashes, list) or len(hashes) != num_shards or not all(isinstance(h, str) for h in hashes):
            raise _corrupt(meta_path, f"'shard_hashes' must list {num_shards} digests")
        sizes = _expect_int_list(raw, "shard_sizes", num_shards, meta_path)
        try:
            features = Features.from_dict(raw.get("features"))  # type: ignore[arg-type]
        except SchemaError as exc:
            raise _corrupt(meta_path, f"'features' is not a valid schema: {exc}") from exc
        if raw.get("key_type") not in _KEY_TYPES:
            raise _corrupt(meta_path, f"'key_type' must be one of {list(_KEY_TYPES)}, found {raw.get('key_type')!r}")
        if raw.get("compression") not in COMPRESSIONS:
            raise _corrupt(meta_path, f"'compression' must be one of {COMPRESSIONS}, found {raw.get('compression')!r}")

    for position, name in enumerate(names):
        path = cache_dir / name
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise _corrupt(path, "shard file listed in _metadata.json is missing") from None
        if sizes is not None and size != sizes[position]:
            raise _corrupt(path, f"shard is {size} bytes, but {sizes[position]} were written (truncated or modified)")

    return _meta_from_dict(cache_dir, raw, names=names, features=features, segments=segments)


def _checked_segments(raw: Mapping[str, Any], counts: list[int], meta_path: Path) -> list[tuple[int, int, int]]:
    """Check ``row_segments``: each run names a listed shard and stays inside its rows."""
    segments = raw.get("row_segments")
    if not isinstance(segments, list):
        raise _corrupt(meta_path, f"format version {SEGMENTED_FORMAT_VERSION} needs a 'row_segments' list")
    checked = []
    for run in segments:
        ok = isinstance(run, list) and len(run) == 3 and all(type(v) is int for v in run)
        if not ok or not (0 <= run[0] < len(counts) and run[1] >= 0 and 0 < run[2] <= counts[run[0]] - run[1]):
            raise _corrupt(meta_path, f"row segment {run!r:.100} is not [shard, start, count] inside a listed shard")
        checked.append((run[0], run[1], run[2]))
    return checked


def _meta_from_dict(
    cache_dir: Path,
    raw: Mapping[str, Any],
    *,
    names: list[str] | None = None,
    features: Features | None = None,
    segments: list[tuple[int, int, int]] | None = None,
) -> ShardedCacheMeta:
    if features is None and raw.get("features") is not None:
        features = Features.from_dict(raw["features"])
    return ShardedCacheMeta(
        cache_dir=cache_dir,
        num_rows=raw["num_rows"],
        num_shards=raw["num_shards"],
        shard_filenames=list(names if names is not None else raw["shard_filenames"]),
        shard_row_counts=list(raw["shard_row_counts"]),
        schema_fingerprint=raw.get("schema_fingerprint", ""),
        shard_hashes=raw.get("shard_hashes"),
        shard_sizes=raw.get("shard_sizes"),
        features=features,
        key_type=raw.get("key_type", "int64"),
        compression=raw.get("compression"),
        raw=dict(raw),
        # format 1 reads every shard whole, whatever else the file says
        row_segments=segments if raw.get("cache_format_version") == SEGMENTED_FORMAT_VERSION else None,
    )


def validate_sharded_cache(cache_dir: Path | str, features: Features) -> ShardedCacheMeta:
    """Read a cache's metadata and check that it was written with ``features``.

    For a cache with stored features the schema fingerprints are compared;
    for a seed-v1 cache the shards' Arrow column types are.

    Raises
    ------
    SchemaError
        The cache holds a different schema; the message says how it differs.
    """
    meta = read_sharded_cache_meta(cache_dir)
    if meta.features is not None:
        if meta.features.fingerprint() != features.fingerprint():
            msg = (
                f"cache at {meta.cache_dir} was written with {meta.features!r}, not {features!r}; "
                "rebuild it (force=True) or load it with its own features"
            )
            raise SchemaError(msg)
        return meta
    if meta.num_shards:
        stored = open_shard(meta.shard_paths[0]).schema
        expected = features.to_arrow_schema()
        for arrow_field in expected:
            if arrow_field.name not in stored.names:
                msg = f"cache at {meta.cache_dir} has no column {arrow_field.name!r}; it has {stored.names}"
                raise SchemaError(msg)
            found = stored.field(arrow_field.name).type
            if found != arrow_field.type and not _binary_compatible(found, arrow_field.type):
                msg = (
                    f"column {arrow_field.name!r} of {meta.cache_dir} is {found}, "
                    f"but features expect {arrow_field.type}"
                )
                raise SchemaError(msg)
    return meta


def _binary_compatible(found: pa.DataType, expected: pa.DataType) -> bool:
    binaries = (pa.binary(), pa.large_binary())
    return found in binaries and expected in binaries


def _upgrade_binary(table: pa.Table) -> pa.Table:
    """Cast ``binary`` columns to ``large_binary`` so gathers past 2 GB cannot overflow 32-bit offsets."""
    if not any(f.type == pa.binary() for f in table.schema):
        return table
    schema = pa.schema(
        [pa.field(f.name, pa.large_binary()) if f.type == pa.binary() else f for f in table.schema],
        metadata=table.schema.metadata,
    )
    return table.cast(schema)


def open_shard(path: Path, *, validate: bool = True) -> pa.Table:
    """Memory-map one shard and return its table, zero-copy.

    With ``validate`` (the default) the Arrow structure is checked in full
    (offsets, lengths, UTF-8) so a damaged file raises instead of crashing a
    compute kernel later. ``binary`` columns come back as ``large_binary``.

    Raises
    ------
    CacheCorruptionError
        The file is not a readable Arrow IPC file; the message names it.
    """
    path = Path(path)
    try:
        source = pa.memory_map(str(path), "r")
        table = ipc.open_file(source).read_all()
        if validate:
            table.validate(full=True)
    except FileNotFoundError:
        raise _corrupt(path, "shard file is missing") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _corrupt(path, f"not a readable Arrow shard: {exc}") from exc
    return _upgrade_binary(table)


def read_shard(shard_path: Path | str) -> pa.Table:
    """Memory-map a single shard file and return its (validated) table."""
    return open_shard(Path(shard_path))


# --- verification --------------------------------------------------------------


def content_digest_of(meta: ShardedCacheMeta) -> str:
    """The content digest of a cache's rows in order, read from the key and row-hash columns only."""
    return content_digest_of_files(meta.shard_paths, meta.segments)


def content_digest_of_files(paths: list[Path], segments: Iterable[Iterable[int]]) -> str:
    """The content digest of the rows that ``segments`` (shard, start, count) pick from ``paths``."""
    digest = ContentDigest()
    tables: dict[int, pa.Table] = {}
    for shard, start, count in segments:
        if shard not in tables:
            table = open_shard(paths[shard], validate=False).select([KEY_COLUMN, HASH_COLUMN])
            table.validate(full=True)  # only the two small columns are read here
            tables[shard] = table
        for batch in tables[shard].slice(start, count).to_batches():
            digest.update(batch.column(0), batch.column(1).to_numpy(zero_copy_only=False))
    return digest.hexdigest()


@dataclass(frozen=True, repr=False)
class VerifyReport:
    """What ``verify`` checked: all of it passed, or it would have raised."""

    cache_dir: Path
    num_shards: int
    num_rows: int
    nbytes: int
    seconds: float
    hashed: bool

    def __str__(self) -> str:
        how = f"{FILE_HASH_ALGORITHM} digests match" if self.hashed else "structure valid (seed-v1 cache: no digests)"
        return (
            f"ok: {self.num_shards} shard(s), {self.num_rows} rows, {self.nbytes} bytes; "
            f"{how} ({self.seconds:.2f} s) - {self.cache_dir}"
        )

    def __repr__(self) -> str:
        return str(self)


def verify(target: Any) -> VerifyReport:
    """Re-hash every shard of a cache and check its structure.

    Parameters
    ----------
    target:
        A cache directory, or anything with a ``cache_dir`` attribute (a dataset).

    Returns
    -------
    VerifyReport
        A short report when all is well.

    Raises
    ------
    CacheCorruptionError
        Names the first shard (or metadata file) that does not match.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from stable_explore import Features, Value
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "c"
    >>> _ = write_sharded_arrow_cache(({"x": i} for i in range(3)), Features(x=Value("int64")), out)
    >>> verify(out).num_rows
    3
    """
    cache_dir = Path(getattr(target, "cache_dir", target))
    started = time.perf_counter()
    meta = read_sharded_cache_meta(cache_dir)
    for position, path in enumerate(meta.shard_paths):
        if meta.shard_hashes is not None:
            found = hash_file(path)
            if found != meta.shard_hashes[position]:
                msg = f"content digest {found} does not match the recorded {meta.shard_hashes[position]}"
                raise _corrupt(path, msg)
        table = open_shard(path)
        if table.num_rows != meta.shard_row_counts[position]:
            msg = f"shard holds {table.num_rows} rows, metadata says {meta.shard_row_counts[position]}"
            raise _corrupt(path, msg)
    recorded = (meta.raw or {}).get("content_digest")
    if recorded is not None:
        found = content_digest_of(meta)
        if found != recorded:
            msg = f"the rows (keys and row hashes, in order) give {found}, but {recorded} is recorded"
            raise _corrupt(cache_dir / METADATA_FILE, msg)
    return VerifyReport(
        cache_dir=cache_dir,
        num_shards=meta.num_shards,
        num_rows=meta.num_rows,
        nbytes=meta.nbytes,
        seconds=time.perf_counter() - started,
        hashed=meta.shard_hashes is not None,
    )
