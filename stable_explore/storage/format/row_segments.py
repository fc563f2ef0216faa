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

The file is read by :func:`stable_explore.storage.read.small_files.load_row_segments` and written
(or linked) by :func:`stable_explore.storage.write.small_files.row_segments_field`.

Examples
--------
>>> from pathlib import Path
>>> ref = FileRef(SEGMENTS_FILE, "xxh3_128:" + "0" * 32, 40)
>>> record = SegmentsRecord(ref, 2, (1, 0), ())  # the file's shard 0 is this version's shard 1
>>> field = record.to_json()
>>> field["file"], field["segments"], field["shards"]
('row-segments.json', 2, [1, 0])
>>> segments_from(SegmentsRecord.from_json(field, Path("_metadata.json")), [[0, 0, 5], [1, 0, 5]], Path("."),
...               Path("_metadata.json"))[0]
[(1, 0, 5), (0, 0, 5)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.format.file_ref import FileRef
from stable_explore.storage.format.splices import (
    Splice,
    apply_splices,
    keeps_splicing,
    parse_splices,
    splices_between,
    splices_to_json,
)

__all__ = [
    "INLINE_SEGMENTS",
    "SEGMENTS_FILE",
    "ParentSegments",
    "SegmentsRecord",
    "checked_segments",
    "segments_from",
    "splices_against",
]

SEGMENTS_FILE = "row-segments.json"
INLINE_SEGMENTS = 64
"""Up to this many segments stay inline in ``_metadata.json`` (a file costs more than they do)."""

Segment = tuple[int, int, int]


def checked_segments(value: object, where: str, path: str | Path) -> list[Segment]:
    """Check and type segments ``[[shard, start, count], ...]`` (``where`` names the field, for errors)."""
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
    def from_json(cls, raw: object, meta_path: Path) -> SegmentsRecord:
        """Check and type the field (its file is read by :mod:`stable_explore.storage.read.small_files`)."""
        base = FileRef.from_json(raw, meta_path, "'row_segments'")
        assert isinstance(raw, Mapping)
        count, shards = raw.get("segments"), raw.get("shards")
        if not (type(count) is int and count >= 0 and isinstance(shards, list)) or not all(
            type(s) is int and s >= -1 for s in shards
        ):
            msg = f"'row_segments' needs a segment count and a shard map, found {raw!r:.150}"
            raise CacheCorruptionError(meta_path, msg)
        splices = parse_splices(raw.get("splices"), "'row_segments'", meta_path, checked_segments)
        return cls(base, count, tuple(shards), splices)


@dataclass(frozen=True)
class ParentSegments:
    """A version's segments file as a save reuses it: its folder, its record and its segments (file numbering)."""

    directory: Path
    record: SegmentsRecord
    base: list[Segment]


def segments_from(
    record: SegmentsRecord, value: object, directory: Path, meta_path: Path
) -> tuple[list[Segment], ParentSegments]:
    """The segments ``record`` gives from its file's parsed ``value``, in this version's shard numbering.

    The file's segments are checked and mapped by the record's shard map, then the splices applied;
    they are not yet checked against the shards. The second value is the file, for a save to link.
    """
    path = directory / record.base.file
    base = checked_segments(value, SEGMENTS_FILE, path)
    if len(base) != record.count:
        raise CacheCorruptionError(path, f"holds {len(base)} row segments, not {record.count}")
    if any(not 0 <= shard < len(record.shards) for shard, _, _ in base):
        raise CacheCorruptionError(path, "names a shard its version's shard map does not list")
    mapped = [(record.shards[shard], start, count) for shard, start, count in base]
    segments = apply_splices(mapped, record.splices, meta_path)
    if any(shard < 0 for shard, _, _ in segments):
        raise CacheCorruptionError(meta_path, "a row segment names a shard this version does not keep")
    return segments, ParentSegments(directory, record, base)


def splices_against(
    parent: ParentSegments, segments: Sequence[Sequence[int]], parent_to_child: Mapping[int, int]
) -> tuple[tuple[int, ...], list[Splice[Segment]]] | None:
    """How a saved version's ``segments`` splice its parent's file, while a save may link it (None: it may not).

    ``parent_to_child`` maps the parent's shard numbers to this version's, for every shard kept; the
    first value is the file's shard map for this version (-1: a shard it does not keep).
    """
    shards = tuple(parent_to_child.get(s, -1) if s >= 0 else -1 for s in parent.record.shards)
    mapped = [(shards[shard], start, count) for shard, start, count in parent.base]
    splices = splices_between(mapped, [(a, b, c) for a, b, c in segments])
    if keeps_splicing(len(parent.base), splices, parent.record.splices):
        return shards, splices
    return None
