"""Shards this process has opened, kept for the next reader of the same file (and the same cell patches).

Every ``se.load`` makes a new reader, and a notebook loads the same versions again and again
(a browser paging through versions, a compare, a loop over a chain of saves). Shards never
change once written and saves hard-link them, so an opened shard is kept per file identity
(device, inode, size, modification time): a reader finds it mapped, with its record batches
cut and its cell patches applied, instead of reading its footer and patching its label
column again. Only shards whose record batches have digests come here: each reader still
checks each batch against them before handing out its rows (once per process).

The memory this holds is bounded: maps of files (pages the kernel may drop at any time)
for at most :data:`MAX_FILES` files, and at most :data:`MAX_PATCHED_BYTES` of patched columns.

Examples
--------
>>> import tempfile, pathlib, pyarrow as pa
>>> path = pathlib.Path(tempfile.mkdtemp()) / "shard-00000.arrow"
>>> with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, pa.schema([("x", pa.int64())])) as writer:
...     writer.write_table(pa.table({"x": [1, 2]}))
>>> first = opened(path, "", lambda: pa.table({"x": [1, 2]}), lambda table: table)
>>> opened(path, "", lambda: None, lambda table: table) is first  # the second reader: kept, not reopened
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.storage.read.kept import Kept, file_identity, kept

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["MAX_FILES", "MAX_PATCHED_BYTES", "OpenedFile", "opened"]

MAX_FILES = 64
MAX_PATCHED_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class OpenedFile:
    """One shard as opened: the file's own record batches (what the digests check) and the rows as read."""

    table: pa.Table
    batches: list[pa.RecordBatch]
    read: pa.Table
    read_batches: list[pa.RecordBatch]
    patched_bytes: int


_KEPT: Kept[tuple[object, ...], OpenedFile] = kept(
    "opened shards",
    max_entries=MAX_FILES,
    weight=lambda entry: entry.patched_bytes,
    max_bytes=MAX_PATCHED_BYTES,
    holds_files=True,
)


def opened(
    path: Path,
    patch_key: str,
    open_table: Callable[[], pa.Table | None],
    patch: Callable[[pa.Table], pa.Table],
    patched_columns: Sequence[str] = (),
) -> OpenedFile:
    """The shard at ``path`` with the patches ``patch_key`` names: kept from before, or opened now and kept.

    ``open_table`` opens the file (and raises, naming it, when it is missing or damaged);
    ``patch`` applies the cell patches (``patch_key``: a digest of them, "" for none), which copy
    ``patched_columns``.
    """
    identity = file_identity(path)  # None: open_table says what is wrong
    key = None if identity is None else (*identity, patch_key)
    if key is not None:
        found = _KEPT.get(key)
        if found is not None:
            return found
    table = open_table()
    assert table is not None
    read = patch(table)
    names = read.column_names
    patched_bytes = 0 if read is table else sum(read.column(n).nbytes for n in patched_columns if n in names)
    batches = table.to_batches()
    entry = OpenedFile(table, batches, read, batches if read is table else read.to_batches(), patched_bytes)
    if key is not None:
        _KEPT.put(key, entry)
    return entry
