"""Shards written apart, joined into one version in order: the last step of a parallel build.

Each task of a parallel build writes its own shards into a folder of the build's staging area
(:class:`TaskShards` says what it wrote). :func:`merge_task_shards` moves them into the staging
folder itself, numbered in task order, refuses a key repeated across tasks, and digests the
rows -- their keys and row hashes, read back from each shard's key and hash columns, in order --
with :class:`~stable_explore.storage.format.hashing.ContentDigest`, the digest the serial writer feeds.
So the same rows in the same order give the serial build's content digest, and its version id,
however the rows were cut into tasks and shards.

A row yielded without a key takes its index as key. A task counts its rows from 0, so once the
rows of the tasks before it are known, :func:`rekey_task_shards` rewrites those keys to the
row's index in the whole build (only the key column changes; the row hashes do not cover it).

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.storage.write.writer import write_shards
>>> features = Features(x=Value("int64"))
>>> staging = pathlib.Path(tempfile.mkdtemp())
>>> parts = []
>>> for task, rows in enumerate([[1, 2], [3]]):
...     folder = staging / f"task-{task}"
...     folder.mkdir()
...     fields = write_shards(({"x": x} for x in rows), features, folder)
...     parts.append(TaskShards.of_fields(folder, fields, default_keys=((0, len(rows)),)))
>>> parts[1] = rekey_task_shards(parts[1], offset=2)
>>> merged = merge_task_shards(staging, parts, features)
>>> merged["shard_filenames"], merged["num_rows"]
(['shard-00000.arrow', 'shard-00001.arrow'], 3)
>>> serial = write_shards(({"x": x} for x in [1, 2, 3]), features, pathlib.Path(tempfile.mkdtemp()))
>>> merged["content_digest"] == serial["content_digest"]
True
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.errors import EncodingError
from stable_explore.schema.columns import HASH_COLUMN, KEY_COLUMN
from stable_explore.storage.format.cache_meta import DEFAULT_SHARD_SIZE_BYTES, METADATA_FILE, SHARD_NAME_FMT
from stable_explore.storage.format.file_ref import FileRef
from stable_explore.storage.format.hashing import ContentDigest
from stable_explore.storage.format.sidecars import batches_file_name
from stable_explore.storage.write.shards import ShardList, ShardWriter
from stable_explore.storage.write.small_files import content_runs_field
from stable_explore.storage.write.writer import ShardFields, check_unique_keys, shard_metadata

if TYPE_CHECKING:
    from stable_explore.schema import Features

__all__ = ["TaskShards", "merge_task_shards", "rekey_task_shards"]

_NEVER_ROTATE = 2**62  # a rewrite keeps the task's shard layout: shards close where the input's did


@dataclass(frozen=True)
class TaskShards:
    """The shards one task wrote into its own folder, in order, and the rows whose key is their index in the task.

    ``default_keys`` are ``(start, stop)`` runs of rows (numbered within the task) that were
    yielded without a key; ``key_offset`` is what :func:`rekey_task_shards` added to their keys
    (0 before). Plain data (str paths, lists, JSON), so it travels back from any worker.
    """

    directory: str
    names: tuple[str, ...]
    rows: tuple[int, ...]
    sizes: tuple[int, ...]
    hashes: tuple[str, ...]
    batches: tuple[Any, ...]
    key_type: str
    default_keys: tuple[tuple[int, int], ...] = ()
    key_offset: int = 0

    @classmethod
    def of_fields(
        cls, directory: str | os.PathLike[str], fields: Mapping[str, Any], *, default_keys: Sequence[tuple[int, int]]
    ) -> TaskShards:
        """What :func:`~stable_explore.storage.write.writer.write_shards` returned for ``directory``."""
        return cls(
            directory=os.fspath(directory),
            names=tuple(fields["shard_filenames"]),
            rows=tuple(fields["shard_row_counts"]),
            sizes=tuple(fields["shard_sizes"]),
            hashes=tuple(fields["shard_hashes"]),
            batches=tuple(fields["batch_digests"]),
            key_type=fields["key_type"],
            default_keys=tuple((int(start), int(stop)) for start, stop in default_keys),
        )

    @property
    def num_rows(self) -> int:
        """Rows the task wrote."""
        return sum(self.rows)


def rekey_task_shards(
    task: TaskShards, offset: int, *, compression: str | None = None, stop_file: str | None = None
) -> TaskShards:
    """Rewrite a task's shards so that its rows without a key are keyed by their index in the whole build.

    ``offset`` is how many rows the tasks before this one wrote. The shards are rewritten beside
    the task's folder (a new folder; the old one is removed), one output shard per input shard.
    A task whose rows all had keys, or the first task, needs no rewrite and is returned as it is.
    Once ``stop_file`` exists (the build stopped), the rewrite stops at its next batch, leaving nothing.
    """
    if offset == 0 or not task.default_keys:
        return task
    source_dir = Path(task.directory)
    out_dir = source_dir.with_name(source_dir.name + "-rekeyed")
    out_dir.mkdir()
    writer: ShardWriter | None = None
    first = 0  # the task's row number of the batch's first row
    try:
        for name in task.names:
            with pa.memory_map(str(source_dir / name)) as source:
                reader = pa.ipc.open_file(source)
                if writer is None:
                    writer = ShardWriter(
                        out_dir, reader.schema, shard_size_bytes=_NEVER_ROTATE, compression=compression
                    )
                for position in range(reader.num_record_batches):
                    if stop_file is not None and Path(stop_file).exists():
                        raise KeyboardInterrupt  # the build stopped: nothing this rewrite writes will be used
                    batch = reader.get_batch(position)
                    writer.write(_shifted_keys(batch, task.default_keys, first, offset))
                    first += batch.num_rows
            writer.close_shard()
        written = writer.finish() if writer is not None else ShardList([], [], [], [])
    except BaseException:
        if writer is not None:
            writer.abort()
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    shutil.rmtree(source_dir, ignore_errors=True)
    return TaskShards(
        directory=os.fspath(out_dir),
        names=tuple(written.names),
        rows=tuple(written.rows),
        sizes=tuple(written.sizes),
        hashes=tuple(written.hashes),
        batches=tuple(b.to_json() if b is not None else None for b in written.batch_files),
        key_type=task.key_type,
        default_keys=task.default_keys,
        key_offset=task.key_offset + offset,
    )


def _shifted_keys(batch: pa.RecordBatch, runs: Sequence[tuple[int, int]], first: int, offset: int) -> pa.RecordBatch:
    """The batch with ``offset`` added to the keys of the rows in ``runs`` (task row numbers)."""
    stop = first + batch.num_rows
    column = batch.schema.get_field_index(KEY_COLUMN)
    keys = batch.column(column).to_numpy(zero_copy_only=False).astype(np.int64, copy=True)
    touched = False
    for run_start, run_stop in runs:
        low, high = max(run_start, first), min(run_stop, stop)
        if low < high:
            keys[low - first : high - first] += offset
            touched = True
    if not touched:
        return batch
    arrays = list(batch.columns)
    arrays[column] = pa.array(keys, type=pa.int64())
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def merge_task_shards(
    staging: Path,
    tasks: Sequence[TaskShards],
    features: Features,
    *,
    shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
    compression: str | None = None,
) -> ShardFields:
    """Move every task's shards into ``staging`` in task order; return the version's shard metadata.

    Keys are checked across tasks (each task checked its own), and the content digest is
    computed over all rows in order, as the serial writer computes it.

    Raises
    ------
    EncodingError
        Tasks yielded keys of different types (ints in one, strings in another).
    DuplicateKeyError
        A key appears in two tasks; the rows are numbered in the whole build.
    """
    key_type = _common_key_type(tasks)
    names: list[str] = []
    rows: list[int] = []
    sizes: list[int] = []
    hashes: list[str] = []
    batches: list[FileRef | None] = []
    for task in tasks:
        folder = Path(task.directory)
        for name, count, size, digest, batch in zip(
            task.names, task.rows, task.sizes, task.hashes, task.batches, strict=True
        ):
            target = SHARD_NAME_FMT.format(len(names))
            (folder / name).replace(staging / target)
            names.append(target)
            rows.append(count)
            sizes.append(size)
            hashes.append(digest)
            batches.append(None if batch is None else _moved_batches_file(batch, folder, staging, target))
        shutil.rmtree(folder, ignore_errors=True)
    written = ShardList(names, rows, sizes, hashes, bytes_written=sum(sizes), batch_files=batches)
    if not _keyed_by_row_index(tasks):
        check_unique_keys(staging, written)
    content = _content_digest(staging, names)
    return shard_metadata(
        features,
        written,
        num_rows=sum(rows),
        shard_size_bytes=shard_size_bytes,
        key_type=key_type,
        compression=compression,
        content_digest=content.hexdigest(),
        content_runs=content_runs_field(staging, content.runs),  # as a serial build records them
    )


def _moved_batches_file(recorded: object, folder: Path, staging: Path, shard_name: str) -> FileRef:
    """Move a task's shard's batch digests file beside the shard's new name; return its new record."""
    ref = FileRef.from_json(recorded, folder / METADATA_FILE, "a task's batch digests")
    moved = ref.renamed(batches_file_name(shard_name))
    (folder / ref.file).replace(staging / moved.file)
    return moved


def _keyed_by_row_index(tasks: Sequence[TaskShards]) -> bool:
    """Whether every row's key is its index in the whole build, so no key can repeat (the check reads every key).

    True when each task yielded all its rows without keys and its keys were shifted by exactly the
    rows of the tasks before it: the keys are then 0, 1, ..., n - 1 in order, as a serial build's.
    """
    offset = 0
    for task in tasks:
        if task.num_rows and (task.default_keys != ((0, task.num_rows),) or task.key_offset != offset):
            return False
        offset += task.num_rows
    return True


def _common_key_type(tasks: Sequence[TaskShards]) -> str:
    """The key type every task with rows used ("int64" when none has rows, as in a serial build)."""
    offset = 0
    first: tuple[int, str] | None = None
    for index, task in enumerate(tasks):
        if task.num_rows:
            if first is None:
                first = (index, task.key_type)
            elif task.key_type != first[1]:
                kinds = {"int64": "int", "string": "string"}
                msg = (
                    f"task {index} yields {kinds.get(task.key_type, task.key_type)} keys, but task {first[0]} yielded "
                    f"{kinds.get(first[1], first[1])} keys; use one key type for all rows"
                )
                raise EncodingError(msg, index=offset)
        offset += task.num_rows
    return first[1] if first is not None else "int64"


def _content_digest(staging: Path, names: Sequence[str]) -> ContentDigest:
    """The serial writer's content digest, fed each batch's keys and row hashes as read back from the shards."""
    content = ContentDigest()
    for name in names:
        with pa.memory_map(str(staging / name)) as source:
            reader = pa.ipc.open_file(source)
            for position in range(reader.num_record_batches):
                batch = reader.get_batch(position)
                hashes = batch.column(HASH_COLUMN).to_numpy(zero_copy_only=False)
                content.update(batch.column(KEY_COLUMN), np.asarray(hashes, dtype=np.uint64))
    return content
