"""The columns a view shows: removed, renamed or cast stored columns, read through Arrow with nothing copied.

``remove_columns``, ``rename_column`` and ``cast_column`` give views whose columns differ from the
stored ones. A :class:`ColumnMap` records, for each column shown, the stored column it reads and
its feature; reading renames the stored columns and casts those whose Arrow type changed.

Examples
--------
>>> import pyarrow as pa
>>> from stable_explore import Features, Value
>>> columns = ColumnMap.of(Features(x=Value("int32"), y=Value("string"))).remove(["y"]).rename("x", "n")
>>> columns = columns.cast("n", Value("int64"), pa.int32())
>>> columns.read(lambda names: pa.table({"x": pa.array([1, 2], pa.int32())}), ["n"]).schema.types
[DataType(int64)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stable_explore.errors import ColumnNotFoundError, SchemaError
from stable_explore.schema import RESERVED_COLUMNS, Array3D, Features, Image, Video, feature_from_dict

if TYPE_CHECKING:
    from stable_explore.schema import Feature

__all__ = ["ColumnMap"]


@dataclass(frozen=True)
class ColumnMap:
    """Each column a view shows, in order: (its name, the stored column it reads, its feature)."""

    columns: tuple[tuple[str, str, Feature], ...]

    @classmethod
    def of(cls, features: Features) -> ColumnMap:
        """The stored columns as they are."""
        return cls(tuple((name, name, feature) for name, feature in features.items()))

    @property
    def features(self) -> Features:
        """The features of the columns shown."""
        return Features({name: feature for name, _, feature in self.columns})

    def stored(self, name: str) -> str:
        """The stored column behind a column shown (the row key and hash columns are their own)."""
        if name in RESERVED_COLUMNS:
            return name
        for shown, stored, _ in self.columns:
            if shown == name:
                return stored
        raise ColumnNotFoundError(self._missing(name))

    def _missing(self, name: str) -> str:
        return f"no column {name!r}; columns are {[shown for shown, _, _ in self.columns]}"

    def remove(self, names: Iterable[str]) -> ColumnMap:
        """Without the columns ``names`` (each must be a column shown)."""
        gone = list(names)
        for name in gone:
            self.stored(name)
        return ColumnMap(tuple(column for column in self.columns if column[0] not in gone))

    def select(self, names: Iterable[str]) -> ColumnMap:
        """Only the columns ``names``, in that order (each must be a column shown, named once)."""
        wanted = list(names)
        for name in wanted:
            self.stored(name)
        repeated = sorted({name for name in wanted if wanted.count(name) > 1})
        if repeated:
            msg = f"column(s) {repeated} are named more than once; name each column once"
            raise SchemaError(msg)
        by_name = {column[0]: column for column in self.columns}
        return ColumnMap(tuple(by_name[name] for name in wanted))

    def rename(self, old: str, new: str) -> ColumnMap:
        """Column ``old`` shown as ``new`` (a name no other column has)."""
        self.stored(old)
        if new != old and any(shown == new for shown, _, _ in self.columns):
            msg = f"cannot rename {old!r} to {new!r}: a column {new!r} exists already"
            raise SchemaError(msg)
        renamed = tuple((new if shown == old else shown, stored, f) for shown, stored, f in self.columns)
        Features({name: feature for name, _, feature in renamed})  # the new name is checked as any column's
        return ColumnMap(renamed)

    def cast(self, name: str, feature: Feature, stored_type: pa.DataType) -> ColumnMap:
        """Column ``name`` read as ``feature``: its stored values (of ``stored_type``) cast by Arrow."""
        self.stored(name)
        current = self.features[name]
        if isinstance(feature, (Image, Array3D)) and type(current) is not type(feature):
            msg = (
                f"column {name!r} is {current!r}, not encoded {type(feature).__name__} values: cast_column keeps the "
                "stored values; to read images from paths or arrays, build a new version with se.build"
            )
            raise SchemaError(msg)
        target = feature.arrow_type
        if target != stored_type:
            try:
                pa.array([], type=stored_type).cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                msg = f"column {name!r} holds {stored_type} values, which cannot be cast to {feature!r} ({target})"
                raise SchemaError(msg) from exc
        return ColumnMap(tuple((shown, stored, feature if shown == name else f) for shown, stored, f in self.columns))

    def read(self, read_stored: Callable[[list[str]], pa.Table], columns: Sequence[str]) -> pa.Table:
        """``read_stored(stored names)``'s table with the names and types of ``columns``."""
        table = read_stored([self.stored(name) for name in columns])
        features = self.features
        arrays = []
        for position, name in enumerate(columns):
            array = table.column(position)
            feature = features.get(name)
            if feature is not None and array.type != feature.arrow_type and not _video_paths(feature, array.type):
                try:
                    array = array.cast(feature.arrow_type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    msg = f"field {name!r}: a stored value cannot be cast to {feature!r}: {exc}"
                    raise SchemaError(msg) from exc
            arrays.append(array)
        return pa.Table.from_arrays(arrays, names=list(columns), metadata=table.schema.metadata)

    def to_json(self) -> list[list[Any]]:
        """JSON-ready form (for pickling a view)."""
        return [[shown, stored, feature.to_dict()] for shown, stored, feature in self.columns]

    @classmethod
    def from_json(cls, data: Sequence[Sequence[Any]]) -> ColumnMap:
        """Inverse of :meth:`to_json`."""
        return cls(tuple((str(shown), str(stored), feature_from_dict(spec)) for shown, stored, spec in data))


def _video_paths(feature: Feature, stored_type: pa.DataType) -> bool:
    """A ``Video`` column of path strings (an older cache's): read as it is, each cell decodes alike."""
    return isinstance(feature, Video) and pa.types.is_string(stored_type)
