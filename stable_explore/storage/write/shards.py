"""Shard files: writing record batches into numbered Arrow IPC shards, digested as they are written.

Examples
--------
>>> import tempfile, pathlib, pyarrow as pa
>>> batch = pa.record_batch({"x": pa.array([1, 2, 3])})
>>> writer = ShardWriter(pathlib.Path(tempfile.mkdtemp()), batch.schema)
>>> writer.write(batch)
>>> shards = writer.finish()
>>> shards.names, shards.rows
(['shard-00000.arrow'], [3])
"""

from __future__ import annotations

import errno
import itertools
import os
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from stable_explore.errors import CacheNotFoundError, CacheWriteError
from stable_explore.storage.backends.fsutil import (
    fsync_path,
    start_writeback,
    version_gone,
    write_error,
    writeback_supported,
    writing,
)
from stable_explore.storage.format.cache_meta import DEFAULT_SHARD_SIZE_BYTES, SHARD_NAME_FMT
from stable_explore.storage.format.file_ref import FileRef
from stable_explore.storage.format.hashing import format_digest, hash_file, new_file_hasher
from stable_explore.storage.format.sidecars import batches_file_name
from stable_explore.storage.read.batches import BatchDigests
from stable_explore.storage.read.shard_file import open_shard, read_shard_batches
from stable_explore.storage.write.small_files import link_small_file, write_batches_file

__all__ = ["BatchCallback", "ShardList", "ShardWriter"]

BatchCallback = Callable[[int, int], None]
"""Called after each written batch with (rows in the batch, bytes written so far)."""


_WRITEBACK_STEP = 8 * 1024 * 1024  # ask the kernel to start writing each shard to disk in steps of this size

WritebackRequest = Callable[[Path, int, int], None]
"""Called with (file, offset, length) when a stretch of a shard is ready to be written back."""


class _DigestingFile:
    """A raw output file that digests every byte on its way to the file.

    The IPC writer hands it Arrow buffers without copying them, so each byte is
    hashed while it is still in the CPU cache.
    """

    def __init__(self, path: Path, on_writeback: WritebackRequest) -> None:
        self.path = path
        with writing(path):
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
        try:  # not writing(): this runs for every buffer of every batch
            while done < len(view):
                count = os.write(self.fd, view[done:])
                if count == 0:  # never for a regular file; some FUSE file systems could loop forever
                    raise OSError(errno.EIO, "the file system accepted no bytes")
                done += count
        except OSError as exc:  # a full disk, a quota: say which file could not be written
            raise write_error(exc, self.path) from exc
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


def batch_digests_of(path: Path) -> BatchDigests:
    """The record batch digests of a finished shard, from the file as a reader maps it (see storage.batches).

    The file was just written, so this reads the page cache, one batch at a time (a mapping of
    the whole file would keep up to a shard's size resident); it runs on the helper thread,
    beside the writing of the next shard.
    """
    batches = read_shard_batches(path)
    first = next(batches, None)
    if first is None:
        return BatchDigests.of_batches(open_shard(path, validate=False).schema.names, [])
    return BatchDigests.of_batches(first.schema.names, itertools.chain([first], batches))


Sealed = tuple[str, FileRef | None]
"""A finished shard's file digest and the file beside it that holds its record batch digests."""


def _fsync_returning(path: Path, digest: str) -> Sealed:
    batches = write_batches_file(path.parent, path.name, batch_digests_of(path))
    with writing(path):  # a delayed allocation or a network file system may report a full disk only here
        fsync_path(path)
    return digest, batches


def _seal_copy(path: Path, batches: FileRef | None) -> Sealed:
    """Digest a copied shard (read back from the page cache) and fsync it; its batch digests are the source's."""
    digest = hash_file(path)
    with writing(path):
        fsync_path(path)
    return digest, batches


@dataclass
class ShardList:
    """The shards a :class:`ShardWriter` produced, in order."""

    names: list[str]
    rows: list[int]
    sizes: list[int]
    hashes: list[str]
    bytes_written: int = 0
    linked: int = 0
    batch_files: list[FileRef | None] = field(default_factory=list)
    """Per shard, the file beside it that holds its record batches' digests (None for a linked shard of a
    cache that has none)."""


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
        name_format: str = SHARD_NAME_FMT,
    ) -> None:
        self.out_dir = out_dir
        self.name_format = name_format  # files are named name_format.format(index): shards, or a column group's
        self.schema = schema
        self.shard_size_bytes = shard_size_bytes
        self.compression = compression
        self.on_batch = on_batch
        self.bytes_written = 0
        self.linked = 0
        self._names: list[str] = []
        self._shards: dict[int, tuple[int, int, Future[Sealed] | Sealed]] = {}  # index -> (rows, size, digests)
        self._sink: _ShardSink | None = None
        self._sink_index = -1
        self._sink_bytes = 0
        self._sink_rows = 0
        self._sealer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stable-explore-seal")

    def _next_name(self) -> int:
        self._names.append(self.name_format.format(len(self._names)))
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

    def _carried_batches(
        self, name: str, batches: BatchDigests | FileRef | None, source_dir: Path | None
    ) -> FileRef | None:
        """The batch digests file of a reused shard.

        The source's file, linked (or, for ``source_dir`` None, referred to by digest), or a new
        file for digests its cache recorded inline.
        """
        if isinstance(batches, FileRef):
            if source_dir is None:
                return batches.renamed(batches_file_name(name))
            return link_small_file(source_dir, batches, self.out_dir, batches_file_name(name))
        if batches is not None:
            return write_batches_file(self.out_dir, name, batches)
        return None

    def link(
        self, source: Path, *, rows: int, size: int, digest: str, batches: BatchDigests | FileRef | None = None
    ) -> int:
        """Add an existing shard file, unchanged, as another shard; returns its index.

        The open shard stays open: rows written later keep filling it. ``batches`` are the
        file's batch digests, carried over: the file beside it that holds them (linked too),
        the digests themselves (written to a file), or None when its cache recorded none.
        """
        index = self._next_name()
        target = self.out_dir / self._names[index]
        carried = self._carried_batches(self._names[index], batches, source.parent)
        try:
            os.link(source, target)
        except FileNotFoundError:
            gone = version_gone(source.parent)  # gc took the version this one reuses while it was being written
            if gone:
                raise CacheNotFoundError(gone) from None
            raise
        except OSError:
            with writing(target):
                shutil.copyfile(source, target)
            self.bytes_written += size
            self._shards[index] = (rows, size, self._sealer.submit(_seal_copy, target, carried))
        else:
            self.linked += 1
            self._shards[index] = (rows, size, (digest, carried))
        return index

    def refer(self, *, rows: int, size: int, digest: str, batches: BatchDigests | FileRef | None = None) -> int:
        """Add a shard the home already holds (by digest), without a local file; returns its index.

        For a home in a bucket: publishing copies it there inside the store instead of uploading it
        (its batch digests file too, when ``batches`` names one).
        """
        index = self._next_name()
        self.linked += 1
        self._shards[index] = (rows, size, (digest, self._carried_batches(self._names[index], batches, None)))
        return index

    def finish(self) -> ShardList:
        """Close the last shard and wait for every digest and fsync."""
        try:
            self.close_shard()
            entries = [self._shards[i] for i in range(len(self._names))]
            sealed = [h if isinstance(h, tuple) else h.result() for _, _, h in entries]
        finally:
            self._sealer.shutdown(wait=True, cancel_futures=True)  # after a failure, queued fsyncs are moot
        return ShardList(
            names=list(self._names),
            rows=[rows for rows, _, _ in entries],
            sizes=[size for _, size, _ in entries],
            hashes=[digest for digest, _ in sealed],
            bytes_written=self.bytes_written,
            linked=self.linked,
            batch_files=[batches for _, batches in sealed],
        )

    def abort(self) -> None:
        """Stop after a failure: close the open file, and let the helper thread finish."""
        if self._sink is not None:
            self._sink.abort()
            self._sink = None
        self._sealer.shutdown(wait=True, cancel_futures=True)
