"""Where a saved version keeps its row segments once they are many (format revision 4).

A version saved from edits lists its rows as segments ``[shard, start, count]`` (format 2).
Each save of k scattered edits adds about 2k segments, so after a chain of saves the list is
thousands long and, inline in ``_metadata.json``, every save rewrote it whole. From revision 4
a list longer than :data:`INLINE_SEGMENTS` lives in ``row-segments.json`` beside the metadata:
a save links its parent's file and records only splices (see :mod:`.splices`), until they
pass the rebase limit and it writes a new file.

A save renumbers the shards it keeps, so the file's segments name shards by the file's own
numbering, and ``shards`` maps each of those numbers to this version's shard (-1: a shard this
version does not keep; every segment of it must be spliced out).

Examples
--------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> segments = [(0, 0, 10), (1, 0, 1), (0, 11, 89)] * 30  # long enough to go to a file
>>> field = row_segments_field(folder, segments, num_shards=2)
>>> field["file"], field["segments"], field["shards"], field["splices"]
('row-segments.json', 90, [0, 1], [])
>>> load_row_segments(folder, field, folder / "_metadata.json")[0] == segments
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.format.sidecars import FileRef, link_small_file, read_json_file, write_json_file
from stable_explore.storage.format.splices import (
    Splice,
    apply_splices,
    keeps_splicing,
    parse_splices,
    splices_between,
    splices_to_json,
)

if TYPE_CHECKING:
    from stable_explore.storage.format.remote_location import RemoteLocation

__all__ = ["INLINE_SEGMENTS", "ParentSegments", "SEGMENTS_FILE", "load_row_segments", "row_segments_field"]

SEGMENTS_FILE = "row-segments.json"
INLINE_SEGMENTS = 64
"""Up to this many segments stay inline in ``_metadata.json`` (a file costs more than they do)."""

Segment = tuple[int, int, int]


def _checked_segments(value: Any, where: str, path: str | Path) -> list[Segment]:
    if not isinstance(value, list):
        raise CacheCorruptionError(path, f"{where} must be a list of [shard, start, count], found {value!r:.100}")
    out: list[Segment] = []
    for run in value:
        if not (isinstance(run, list) and len(run) == 3 and all(type(v) is int for v in run)):
            raise CacheCorruptionError(path, f"{where}: row segment {run!r:.100} is not [shard, start, count]")
        out.append((run[0], run[1], run[2]))
    return out


@dataclass(frozen=True)
class SegmentsRecord:
    """The ``row_segments`` object of revision 4: the file, its length, its shard map and the splices."""

    base: FileRef
    count: int
    shards: tuple[int, ...]
    splices: tuple[Splice[Segment], ...]

    def to_json(self) -> dict[str, Any]:
        """The form ``_metadata.json`` records."""
        splices = splices_to_json(self.splices)
        return {**self.base.to_json(), "segments": self.count, "shards": list(self.shards), "splices": splices}

    @classmethod
    def from_json(cls, raw: Any, meta_path: Path) -> SegmentsRecord:
        """Check and type the field (the file itself is read by :func:`load_row_segments`)."""
        base = FileRef.from_json(raw, meta_path, "'row_segments'")
        assert isinstance(raw, Mapping)
        count, shards = raw.get("segments"), raw.get("shards")
        if not (type(count) is int and count >= 0 and isinstance(shards, list)) or not all(
            type(s) is int and s >= -1 for s in shards
        ):
            msg = f"'row_segments' needs a segment count and a shard map, found {raw!r:.150}"
            raise CacheCorruptionError(meta_path, msg)
        splices = parse_splices(raw.get("splices"), "'row_segments'", meta_path, _checked_segments)
        return cls(base, count, tuple(shards), splices)


@dataclass(frozen=True)
class ParentSegments:
    """A version's segments file as a save reuses it: its folder, its record and its segments (file numbering)."""

    directory: Path
    record: SegmentsRecord
    base: list[Segment]


def load_row_segments(
    directory: Path, raw: Any, meta_path: Path, remote: RemoteLocation | None = None
) -> tuple[list[Segment], ParentSegments | None]:
    """The segments a ``row_segments`` field gives: inline (a list), or a file, shard map and splices.

    Segments are returned in this version's shard numbering, not yet checked against the shards.
    """
    if not isinstance(raw, Mapping):
        return _checked_segments(raw, "'row_segments'", meta_path), None
    record = SegmentsRecord.from_json(raw, meta_path)
    path = directory / record.base.file
    base = _checked_segments(read_json_file(directory, record.base, meta_path, remote), SEGMENTS_FILE, path)
    if len(base) != record.count:
        raise CacheCorruptionError(path, f"holds {len(base)} row segments, not {record.count}")
    if any(not 0 <= shard < len(record.shards) for shard, _, _ in base):
        raise CacheCorruptionError(path, "names a shard its version's shard map does not list")
    mapped = [(record.shards[shard], start, count) for shard, start, count in base]
    segments = apply_splices(mapped, record.splices, meta_path)
    if any(shard < 0 for shard, _, _ in segments):
        raise CacheCorruptionError(meta_path, "a row segment names a shard this version does not keep")
    return segments, ParentSegments(directory, record, base)


def row_segments_field(
    out_dir: Path,
    segments: Sequence[Sequence[int]],
    *,
    num_shards: int,
    parent: ParentSegments | None = None,
    parent_to_child: Mapping[int, int] | None = None,
) -> list[list[int]] | dict[str, Any]:
    """Record a saved version's segments (in its own shard numbering): the ``row_segments`` value to store.

    With ``parent`` (the parent's segments file) and ``parent_to_child`` (the parent's shard
    number -> this version's, for every shard kept), the parent's file is linked and only the
    splices are recorded while they stay under the rebase limit. Otherwise a short list is
    kept inline, and a long one is written to a new file.
    """
    if parent is not None and parent_to_child is not None:
        shards = tuple(parent_to_child.get(s, -1) if s >= 0 else -1 for s in parent.record.shards)
        mapped = [(shards[shard], start, count) for shard, start, count in parent.base]
        splices = splices_between(mapped, [(a, b, c) for a, b, c in segments])
        if keeps_splicing(len(parent.base), splices, parent.record.splices):
            base = link_small_file(parent.directory, parent.record.base, out_dir, SEGMENTS_FILE)
            return SegmentsRecord(base, len(parent.base), shards, tuple(splices)).to_json()
    if len(segments) <= INLINE_SEGMENTS:
        return [list(s) for s in segments]
    base = write_json_file(out_dir, SEGMENTS_FILE, [list(s) for s in segments])
    return SegmentsRecord(base, len(segments), tuple(range(num_shards)), ()).to_json()
