"""Writing a version's small files (format revision 4 on): durably, or linked from the version a save starts from.

The files and their records are values of :mod:`stable_explore.storage.format.sidecars`; this
module writes them into a version's folder while it is being written, and makes the fields of
``_metadata.json`` that name them: a save links its parent's file (or, past the rebase limit,
writes a new one) and records only the splices (see :mod:`stable_explore.storage.format.splices`).
Reading them back is :mod:`stable_explore.storage.read.small_files`'.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore.storage.read.small_files import load_row_segments
>>> first = pathlib.Path(tempfile.mkdtemp())
>>> segments = [(0, 0, 10), (1, 0, 1), (0, 11, 89)] * 30  # long enough to go to a file
>>> field = row_segments_field(first, segments, num_shards=2)
>>> field["file"], field["segments"], field["shards"], field["splices"]
('row-segments.json', 90, [0, 1], [])
>>> loaded, parent = load_row_segments(first, field, first / "_metadata.json")
>>> loaded == segments
True
>>> second = pathlib.Path(tempfile.mkdtemp())
>>> saved = row_segments_field(second, [*segments, (1, 1, 1)], num_shards=2, parent=parent,
...                            parent_to_child={0: 0, 1: 1})
>>> saved["splices"]  # the parent's file is linked: one splice recorded
[[90, 0, [[1, 1, 1]]]]
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from stable_explore.errors import CacheCorruptionError, CacheNotFoundError
from stable_explore.storage.backends.fsutil import fsync_path, version_gone, writing
from stable_explore.storage.format.cell_patches import PATCHES, ParentPatches, PatchEntry
from stable_explore.storage.format.content_runs import RUNS, ParentRuns
from stable_explore.storage.format.file_ref import FileRef, small_file_digest
from stable_explore.storage.format.row_segments import INLINE_SEGMENTS, SEGMENTS_FILE, ParentSegments, SegmentsRecord
from stable_explore.storage.format.row_segments import splices_against as segment_splices
from stable_explore.storage.format.sidecars import batches_file_name
from stable_explore.storage.format.spliced_file import ParentList, SplicedList, SplicedRecord

if TYPE_CHECKING:
    from stable_explore.storage.format.batch_digests import BatchDigests

__all__ = [
    "cell_patches_field",
    "content_runs_field",
    "link_small_file",
    "row_segments_field",
    "spliced_field",
    "write_batches_file",
    "write_json_file",
    "write_small_file",
]

T = TypeVar("T")


def write_small_file(directory: Path, name: str, data: bytes, *, unsynced: list[Path] | None = None) -> FileRef:
    """Write ``data`` as ``directory / name``, durably (fsynced); return how the metadata records it.

    With ``unsynced``, the fsync is left to the caller: the path is added to that list, to be flushed
    before the folder is published (a save's are flushed with its metadata, side by side).
    """
    path = directory / name
    with writing(path):
        path.write_bytes(data)
        if unsynced is None:
            fsync_path(path)
        else:
            unsynced.append(path)
    return FileRef(name, small_file_digest(data), len(data))


def write_json_file(directory: Path, name: str, value: object, *, unsynced: list[Path] | None = None) -> FileRef:
    """Write ``value`` as compact JSON in ``directory / name`` (see :func:`write_small_file`)."""
    return write_small_file(directory, name, json.dumps(value, separators=(",", ":")).encode(), unsynced=unsynced)


def write_batches_file(directory: Path, shard_name: str, digests: BatchDigests) -> FileRef:
    """Write a shard's record batch digests beside it; return how the metadata records the file."""
    return write_json_file(directory, batches_file_name(shard_name), digests.to_json())


def link_small_file(source_dir: Path, ref: FileRef, target_dir: Path, name: str) -> FileRef:
    """Hard-link a version's small file into another version's folder (a copy where links fail)."""
    target = target_dir / name
    try:
        os.link(source_dir / ref.file, target)
    except FileNotFoundError:
        gone = version_gone(source_dir)  # gc took the version this one reuses while it was being written
        if gone:
            raise CacheNotFoundError(gone) from None
        raise CacheCorruptionError(source_dir / ref.file, "listed in _metadata.json but missing") from None
    except OSError:
        with writing(target):
            shutil.copyfile(source_dir / ref.file, target)
            fsync_path(target)
    return ref.renamed(name)


def spliced_field(
    spec: SplicedList[Any],
    out_dir: Path,
    items: Sequence[object],
    parent: ParentList[Any] | None = None,
    *,
    unsynced: list[Path] | None = None,
) -> dict[str, Any]:
    """Record ``items`` of the list ``spec`` for a version being written in ``out_dir``: the field to store.

    With ``parent``, the parent's file is linked and only the splices are recorded, while they
    stay under :func:`~stable_explore.storage.format.splices.rebase_limit`; otherwise a new file is written
    (its fsync left to the caller with ``unsynced``: see :func:`write_small_file`).
    """
    if parent is not None:
        splices = spec.splices_against(parent, items)
        if splices is not None:
            base = link_small_file(parent.directory, parent.record.base, out_dir, spec.file)
            return spec.record_to_json(SplicedRecord(base, len(parent.base), tuple(splices)))
    base = write_json_file(out_dir, spec.file, [spec.item_json(item) for item in items], unsynced=unsynced)
    return spec.record_to_json(SplicedRecord(base, len(items), ()))


def content_runs_field(
    out_dir: Path,
    runs: Sequence[tuple[int, str]],
    parent: ParentRuns | None = None,
    *,
    unsynced: list[Path] | None = None,
) -> dict[str, Any]:
    """Record ``runs`` for a version being written in ``out_dir``: the ``content_runs`` field to store.

    With ``parent``, the parent's runs file is linked and only the splices are recorded, while
    they stay under :func:`~stable_explore.storage.format.splices.rebase_limit`; otherwise a new runs file is written.
    """
    return spliced_field(RUNS, out_dir, runs, parent, unsynced=unsynced)


def cell_patches_field(
    out_dir: Path,
    entries: Sequence[PatchEntry],
    parent: ParentPatches | None = None,
    *,
    unsynced: list[Path] | None = None,
) -> dict[str, Any]:
    """Record a version's entries (sorted) in ``out_dir``: the ``cell_patches`` field to store.

    With ``parent``, the parent's file is linked and only the splices are recorded, while they
    stay under :func:`~stable_explore.storage.format.splices.rebase_limit`; otherwise a new file is written.
    """
    return spliced_field(PATCHES, out_dir, entries, parent, unsynced=unsynced)


def row_segments_field(
    out_dir: Path,
    segments: Sequence[Sequence[int]],
    *,
    num_shards: int,
    parent: ParentSegments | None = None,
    parent_to_child: Mapping[int, int] | None = None,
    unsynced: list[Path] | None = None,
) -> list[list[int]] | dict[str, Any]:
    """Record a saved version's segments (in its own shard numbering): the ``row_segments`` value to store.

    With ``parent`` (the parent's segments file) and ``parent_to_child`` (the parent's shard
    number -> this version's, for every shard kept), the parent's file is linked and only the
    splices are recorded while they stay under the rebase limit. Otherwise a short list is
    kept inline, and a long one is written to a new file.
    """
    if parent is not None and parent_to_child is not None:
        spliced = segment_splices(parent, segments, parent_to_child)
        if spliced is not None:
            shards, splices = spliced
            base = link_small_file(parent.directory, parent.record.base, out_dir, SEGMENTS_FILE)
            return SegmentsRecord(base, len(parent.base), shards, tuple(splices)).to_json()
    if len(segments) <= INLINE_SEGMENTS:
        return [list(s) for s in segments]
    base = write_json_file(out_dir, SEGMENTS_FILE, [list(s) for s in segments], unsynced=unsynced)
    return SegmentsRecord(base, len(segments), tuple(range(num_shards)), ()).to_json()
