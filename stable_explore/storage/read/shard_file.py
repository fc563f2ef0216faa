"""Opening one shard file safely: mapped (or read, when small), validated once per process, binary widened.

A shard is an Arrow IPC file. Opening it checks its structure (in full, once per process and file,
for shards without record batch digests), that its schema's JSON metadata parses, and widens
``binary`` columns to ``large_binary`` so gathers past 2 GB cannot overflow 32-bit offsets. The
maps of the last few shards opened are kept for the next open of the same file (see ``_MAPPED``).

Examples
--------
>>> import tempfile, pathlib, pyarrow as pa
>>> path = pathlib.Path(tempfile.mkdtemp()) / "shard-00000.arrow"
>>> with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, pa.schema([("b", pa.binary())])) as writer:
...     writer.write_table(pa.table({"b": pa.array([b"x"], pa.binary())}))
>>> open_shard(path).schema.field("b").type
DataType(large_binary)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from stable_explore.errors import CacheCorruptionError, CacheNotFoundError
from stable_explore.storage.backends.fsutil import version_gone
from stable_explore.storage.kept import FileIdentity, Kept, identity_of, kept
from stable_explore.storage.read.resident import map_file

__all__ = [
    "check_schema_metadata",
    "open_shard",
    "opening",
    "read_shard",
    "read_shard_batches",
    "shard_buffer",
    "widened",
    "widened_array",
    "widened_schema",
]


def _corrupt(path: Path, reason: str) -> CacheCorruptionError:
    return CacheCorruptionError(path, reason)


def _upgrade_binary(table: pa.Table) -> pa.Table:
    """Cast ``binary`` columns to ``large_binary`` so gathers past 2 GB cannot overflow 32-bit offsets."""
    # only those columns are cast: a cast of the whole table runs a kernel per column and record batch
    wide = widened_schema(table.schema)
    for index, found in enumerate(table.schema):
        if found.type == pa.binary():
            table = table.set_column(index, wide.field(index), table.column(index).cast(pa.large_binary()))
    return table


def read_shard_batches(path: Path) -> Iterator[pa.RecordBatch]:
    """A shard's record batches as :func:`open_shard` gives them, read one at a time into memory.

    Not memory-mapped: a writer digesting the shard it just wrote holds one batch at a time,
    not the pages of the whole file (which a mapping would keep resident until it is closed).
    """
    with pa.OSFile(str(path)) as source:
        reader = ipc.open_file(source)
        for index in range(reader.num_record_batches):
            yield widened(reader.get_batch(index))


def widened(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A record batch as every reader hands it out (and its digests are taken): ``binary`` as ``large_binary``."""
    if not any(f.type == pa.binary() for f in batch.schema):
        return batch
    if not batch.num_rows:
        # as the first readers widened an empty batch (through a table: every column made anew), so that its
        # digests, taken that way, still match: a cast keeps an 8-byte data buffer where that made an empty one
        table = _upgrade_binary(pa.Table.from_batches([batch]))
        return pa.RecordBatch.from_arrays([column.combine_chunks() for column in table.columns], schema=table.schema)
    arrays = [widened_array(column) for column in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, schema=widened_schema(batch.schema))


def widened_array(array: pa.Array) -> pa.Array:
    """One column of a batch as :func:`widened` gives it (a ``binary`` one cast, its data buffer shared)."""
    if array.type != pa.binary():
        return array
    if not len(array):  # made anew, as an empty batch's column (see widened)
        empty: pa.Array = widened(pa.record_batch([array], names=["cells"])).column(0)
        return empty
    cast: pa.Array = array.cast(pa.large_binary())
    return cast


def widened_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of :func:`widened` batches: ``binary`` fields as ``large_binary``, metadata kept."""
    for index, found in enumerate(schema):
        if found.type == pa.binary():
            schema = schema.set(index, pa.field(found.name, pa.large_binary(), found.nullable, found.metadata))
    return schema


_READ_WHOLE_BYTES = 1 << 20  # a shard up to this size is read into memory; larger ones are memory-mapped


def shard_buffer(path: Path) -> tuple[pa.Buffer, tuple[int, int, int, int]]:
    """The whole file as one buffer: read (a small shard) or memory-mapped, zero-copy (any other).

    The IPC reader then slices one buffer: reading from the memory-mapped file instead cost a
    system call per record batch (it advises the kernel of each read), and mapping a file of a
    few rows cost more than reading it (a chain of saves adds one such file per save).
    """
    with path.open("rb", buffering=0) as raw:
        stat = os.fstat(raw.fileno())
        identity = identity_of(stat)
        if stat.st_size <= _READ_WHOLE_BYTES:
            return pa.py_buffer(raw.readall()), identity
        return map_file(raw), identity  # a scan lets go of its pages as it passes (see storage.read.resident)


_MAPPED: Kept[FileIdentity, pa.Table] = kept("shard maps", max_entries=16, holds_files=True)
"""The tables of the last memory-mapped shards opened, by file (device, inode, size, mtime), as read.

Shards never change, and a save hard-links its parent's into the new version, so a chain of saves
opens the same inodes again and again, each time through a new dataset. A fresh map of a 64 MB
shard faults in a page per record batch (227 batches: 2 ms, 4 ms with the binary columns widened)
and unmapping it costs about as much again; 10 relabels at 2M rows open about 8 shards. Only the
maps are kept, no copies (a widened column is made again per open); what a reader touched through
them stays resident while they are kept, so they are few. gc lets go of them (:func:`..kept.forget`)."""


def _read_table(path: Path) -> tuple[pa.Table, tuple[int, int, int, int]]:
    """The shard's table as the IPC reader gives it (a kept map's, when there is one), and the file's identity."""
    identity = identity_of(path.stat())
    table = _MAPPED.get(identity)
    if table is not None:
        return table, identity
    buffer, identity = shard_buffer(path)
    table = ipc.open_file(pa.BufferReader(buffer)).read_all()
    if identity[2] > _READ_WHOLE_BYTES:  # mapped, not read: keeping it holds no copy of its bytes
        _MAPPED.put(identity, table)
    return table, identity


_VALIDATED: Kept[tuple[int, int, int, int, tuple[str, ...] | None], bool] = kept("validated shards", max_entries=65536)
"""Files (device, inode, size, mtime) whose columns (None: all) this process validated in full.

Shards are immutable and a save hard-links its parent's, so a chain of saves would otherwise
validate the same 64 MB shard again for every version it opens (6 ms and every page of the
file resident, per save at 2M rows)."""


def _validated_before(identity: FileIdentity, columns: list[str] | None) -> bool:
    return (*identity, None) in _VALIDATED or (columns is not None and (*identity, tuple(columns)) in _VALIDATED)


@contextmanager
def opening(path: Path) -> Iterator[None]:
    """Errors while a shard file is opened, as users read them: a missing file, or one that is not Arrow, named."""
    try:
        yield
    except FileNotFoundError:
        gone = version_gone(path.parent)
        if gone:
            raise CacheNotFoundError(gone) from None
        raise _corrupt(path, "shard file is missing") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _corrupt(path, f"not a readable Arrow shard: {exc}") from exc


def open_shard(path: Path, *, validate: bool = True, columns: list[str] | None = None) -> pa.Table:
    """Open one shard and return its table: memory-mapped and zero-copy (a shard of up to 1 MiB is read).

    With ``validate`` (the default) the Arrow structure is checked in full
    (offsets, lengths, UTF-8) so a damaged file raises instead of crashing a
    compute kernel later. ``binary`` columns come back as ``large_binary``.
    ``columns`` opens only those columns (the others are neither checked nor read).

    Raises
    ------
    CacheCorruptionError
        The file is not a readable Arrow IPC file; the message names it.
    """
    path = Path(path)
    with opening(path):
        table, identity = _read_table(path)
        if columns is not None:  # only these are checked and upgraded: the others' pages are never touched
            table = table.select(columns)
        if validate and not _validated_before(identity, columns):
            table.validate(full=True)
            _VALIDATED.put((*identity, None if columns is None else tuple(columns)), True)
        else:  # lengths and buffer counts only (no data read), and names as text: a damaged footer raises here
            table.validate()
            _ = table.schema.names
    check_schema_metadata(table.schema, path)
    return _upgrade_binary(table)


_JSON_SCHEMA_KEYS = (b"pandas", b"stable_explore.features", b"huggingface")


def check_schema_metadata(schema: pa.Schema, path: Path) -> None:
    """The JSON that pandas, we and Hugging Face keep in a shard's schema must be UTF-8 JSON (they parse it later)."""
    for key, value in (schema.metadata or {}).items():
        if key not in _JSON_SCHEMA_KEYS:
            continue
        try:
            json.loads(value.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            msg = f"the shard's {key.decode()!r} schema metadata is not UTF-8 JSON ({exc}); the file is damaged"
            raise _corrupt(path, msg) from exc


def read_shard(shard_path: Path | str) -> pa.Table:
    """Memory-map a single shard file and return its (validated) table."""
    return open_shard(Path(shard_path))
