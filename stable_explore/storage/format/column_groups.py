"""Column groups: columns a version adds to (or replaces in) its parent's rows, kept in files of their own.

A version made by ``ds.map`` or ``ds.add_columns`` reads its rows from its parent's shard files
(linked, unchanged) and its new columns from **group files** beside them: Arrow IPC files that
hold only those columns, whose rows, file after file, are the version's rows in order. Adding
one float column to a million rows of images writes about 8 MB, not the images. Reads join the
two by position (see :mod:`stable_explore.storage.read.joined`); a group column shadows a
column of the same name in the shards or in an earlier group.

``_metadata.json`` (format revision 6) records them as ``column_groups``::

    {"base_features": {...},                 # the features of the shard files
     "groups": [{"features": {...},          # this group's columns, in file order
                 "row_hash": false,          # true: its files also hold each row's __row_hash__
                 "files": [{"file": "group-001-00000.arrow", "rows": 500,
                            "digest": "xxh3_128:...", "size": 4242,
                            "batches": {"file": ..., "digest": ..., "size": ...}}]}]}

The version's features are ``base_features`` with each group's features applied in order (a
name already there is replaced in place, a new one appended).

Examples
--------
>>> from stable_explore import Features, Value
>>> raw = {
...     "base_features": {"x": {"_type": "Value", "dtype": "int64"}},
...     "groups": [{"features": {"score": {"_type": "Value", "dtype": "float64"}}, "row_hash": False,
...                 "files": [{"file": "group-001-00000.arrow", "rows": 3, "digest": "xxh3_128:" + "a" * 32,
...                            "size": 530, "batches": None}]}],
... }
>>> groups = ColumnGroups.from_json(raw, "_metadata.json", num_rows=3)
>>> list(groups.features()), groups.owner("score"), groups.owner("x")
(['x', 'score'], 0, -1)
>>> ColumnGroups.from_json(groups.to_json(), "_metadata.json", num_rows=3) == groups
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stable_explore.errors import CacheCorruptionError, SchemaError, UnsafePathError
from stable_explore.schema import Features
from stable_explore.storage.format.file_ref import FileRef

__all__ = ["GROUP_NAME_FMT", "ColumnGroup", "ColumnGroups", "GroupFile", "group_file_name"]

GROUP_NAME_FMT = "group-{group:03d}-{index:05d}.arrow"
"""Group files are named by group number (from 1) and file number."""


def group_file_name(group: int, index: int) -> str:
    """The name of file ``index`` of group ``group``: ``group_file_name(1, 0)`` -> ``'group-001-00000.arrow'``."""
    return GROUP_NAME_FMT.format(group=group, index=index)


def _plain_name(name: object, meta_path: str | Path, where: str) -> str:
    separators = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    if not isinstance(name, str) or not name or name in (".", "..") or name.startswith("."):
        raise UnsafePathError(meta_path, f"{where}: file name must be a plain name, found {name!r:.100}")
    if any(s in name for s in separators) or "\x00" in name:
        raise UnsafePathError(meta_path, f"{where}: file name {name!r:.100} is not a plain file name inside the cache")
    return name


@dataclass(frozen=True)
class GroupFile:
    """One file of a column group: its name, rows, digest and size, and its record batch digests file."""

    file: str
    rows: int
    digest: str
    size: int
    batches: FileRef | None = None

    def to_json(self) -> dict[str, Any]:
        """The form ``_metadata.json`` records."""
        batches = self.batches.to_json() if self.batches is not None else None
        return {"file": self.file, "rows": self.rows, "digest": self.digest, "size": self.size, "batches": batches}

    @classmethod
    def from_json(cls, raw: object, meta_path: str | Path, where: str) -> GroupFile:
        """Check and type one recorded file."""
        ok = (
            isinstance(raw, Mapping)
            and type(raw.get("rows")) is int
            and raw["rows"] >= 0
            and isinstance(raw.get("digest"), str)
            and type(raw.get("size")) is int
            and raw["size"] >= 0
        )
        if not ok:
            msg = f"{where} must be an object with 'file', 'rows', 'digest', 'size' and 'batches', found {raw!r:.150}"
            raise CacheCorruptionError(meta_path, msg)
        assert isinstance(raw, Mapping)
        name = _plain_name(raw.get("file"), meta_path, where)
        batches = raw.get("batches")
        ref = None
        if batches is not None:
            ref = FileRef.from_json(batches, meta_path, f"{where} 'batches'")
            _plain_name(ref.file, meta_path, f"{where} 'batches'")
        return cls(name, int(raw["rows"]), str(raw["digest"]), int(raw["size"]), ref)


@dataclass(frozen=True)
class ColumnGroup:
    """Columns kept in files of their own: their features, whether the files hold row hashes, and the files."""

    features: Features
    row_hash: bool
    files: tuple[GroupFile, ...]

    @property
    def columns(self) -> list[str]:
        """The group's feature columns, in file order."""
        return list(self.features)

    @property
    def num_rows(self) -> int:
        """Rows over all its files."""
        return sum(f.rows for f in self.files)

    def to_json(self) -> dict[str, Any]:
        """The form ``_metadata.json`` records."""
        return {
            "features": self.features.to_dict(),
            "row_hash": self.row_hash,
            "files": [f.to_json() for f in self.files],
        }


def _features(raw: Any, meta_path: str | Path, where: str) -> Features:
    try:
        return Features.from_dict(raw)
    except (SchemaError, TypeError, AttributeError) as exc:
        raise CacheCorruptionError(meta_path, f"{where} is not a valid schema: {exc}") from exc


@dataclass(frozen=True)
class ColumnGroups:
    """A version's column groups, over the features of its shard files (``base_features``)."""

    base_features: Features
    groups: tuple[ColumnGroup, ...]

    def features(self) -> Features:
        """The version's features: the base features with each group's applied in order."""
        out = Features(dict(self.base_features))
        for group in self.groups:
            for name, feature in group.features.items():
                out[name] = feature  # replaced in place, or appended
        return out

    def owner(self, column: str) -> int:
        """The index of the group a column is read from (the last that has it), or -1 for the shard files."""
        for index in range(len(self.groups) - 1, -1, -1):
            if column in self.groups[index].features:
                return index
        return -1

    def files(self) -> list[GroupFile]:
        """Every group file, group after group."""
        return [f for group in self.groups for f in group.files]

    def to_json(self) -> dict[str, Any]:
        """The form ``_metadata.json`` records."""
        return {"base_features": self.base_features.to_dict(), "groups": [g.to_json() for g in self.groups]}

    @classmethod
    def from_json(cls, raw: object, meta_path: str | Path, *, num_rows: int) -> ColumnGroups:
        """Check and type the field: plain file names, every group's files covering ``num_rows`` rows."""
        if not isinstance(raw, Mapping) or not isinstance(raw.get("groups"), list) or not raw["groups"]:
            msg = f"'column_groups' must be an object with 'base_features' and a list of 'groups', found {raw!r:.150}"
            raise CacheCorruptionError(meta_path, msg)
        base = _features(raw.get("base_features"), meta_path, "'column_groups' 'base_features'")
        groups = []
        names: set[str] = set()
        for number, entry in enumerate(raw["groups"]):
            where = f"'column_groups' group {number}"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("files"), list):
                raise CacheCorruptionError(meta_path, f"{where} must list its 'files', found {entry!r:.150}")
            features = _features(entry.get("features"), meta_path, f"{where} 'features'")
            if not features:
                raise CacheCorruptionError(meta_path, f"{where} has no columns")
            if type(entry.get("row_hash")) is not bool:
                raise CacheCorruptionError(meta_path, f"{where} needs 'row_hash' true or false")
            files = tuple(GroupFile.from_json(f, meta_path, f"{where} file {i}") for i, f in enumerate(entry["files"]))
            group = ColumnGroup(features, bool(entry["row_hash"]), files)
            if group.num_rows != num_rows:
                msg = f"{where}'s files hold {group.num_rows} rows, but the version has {num_rows}"
                raise CacheCorruptionError(meta_path, msg)
            for f in files:
                for name in (f.file, f.batches.file if f.batches else None):
                    if name is None:
                        continue
                    if name in names:
                        raise CacheCorruptionError(meta_path, f"{where}: file {name!r} is listed twice")
                    names.add(name)
            groups.append(group)
        return cls(base, tuple(groups))
