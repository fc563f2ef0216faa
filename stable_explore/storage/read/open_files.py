"""Shards this process has opened, kept for the next reader of the same file.

Every ``se.load`` makes a new reader, and a notebook loads the same versions again and again
(a browser paging through versions, a compare, a loop over a chain of saves). Shards never
change once written and saves hard-link them, so an opened shard is kept per file identity
(device, inode, size, modification time): a reader finds it mapped, with the record batches
read before, instead of reading its footer again. Only shards whose record batches have digests come
here: each reader still checks each batch against them before handing out its rows (once per
process). A shard patched by a version's cell patches is kept here too, beside the file as
written, by the patches' digest (:mod:`.patching` applies them).

The memory this holds is bounded: maps of files (pages the kernel may drop at any time)
for at most :data:`MAX_FILES` files, and at most :data:`MAX_PATCHED_BYTES` of patched columns.

Examples
--------
>>> import tempfile, pathlib, pyarrow as pa
>>> path = pathlib.Path(tempfile.mkdtemp()) / "shard-00000.arrow"
>>> with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, pa.schema([("x", pa.int64())])) as writer:
...     writer.write_table(pa.table({"x": [1, 2]}))
>>> first = opened(path, lambda: FileBatches.open(path, [2]))
>>> opened(path, lambda: None) is first  # the second reader: kept, not reopened
True
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.storage.kept import FileIdentity, Kept, file_identity, kept
from stable_explore.storage.read.file_batches import FileBatches

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["MAX_FILES", "MAX_PATCHED_BYTES", "OpenedFile", "keep", "kept_as", "opened"]

MAX_FILES = 64
MAX_PATCHED_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class OpenedFile:
    """One shard as opened (or patched): its table, record batches, the file's identity and bytes copied to patch it.

    ``table`` is None for a shard as written: its batches are a :class:`.file_batches.FileBatches`,
    read as asked for.
    """

    table: pa.Table | None
    batches: Sequence[pa.RecordBatch]
    identity: Hashable | None
    patched_bytes: int = 0


_KEPT: Kept[tuple[Hashable, str], OpenedFile] = kept(
    "opened shards",
    max_entries=MAX_FILES,
    weight=lambda entry: entry.patched_bytes,
    max_bytes=MAX_PATCHED_BYTES,
    holds_files=True,
)


def kept_as(identity: Hashable, patch_key: str) -> OpenedFile | None:
    """The shard of file ``identity`` with the patches ``patch_key`` names ("" for none), if it is kept."""
    return _KEPT.get((identity, patch_key))


def keep(patch_key: str, entry: OpenedFile) -> None:
    """Keep ``entry`` (with the patches ``patch_key`` names applied) for the next reader of its file."""
    if entry.identity is not None:
        _KEPT.put((entry.identity, patch_key), entry)


def opened(path: Path, open_batches: Callable[[], FileBatches]) -> FileBatches:
    """The record batches of the shard at ``path``: kept from before, or opened now and kept.

    ``open_batches`` opens the file (and raises, naming it, when it is missing or damaged).
    """
    identity: FileIdentity | None = file_identity(path)  # None: open_batches says what is wrong
    found = kept_as(identity, "") if identity is not None else None
    if found is not None and isinstance(found.batches, FileBatches):
        return found.batches.seen_from(path)  # another version's link to the file: its own path in errors
    batches = open_batches()
    keep("", OpenedFile(None, batches, batches.identity))
    return batches
