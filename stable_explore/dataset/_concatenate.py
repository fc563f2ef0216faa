"""The rows of several datasets one after another, as a build source: ``se.concatenate_datasets``.

The datasets must have the same features (a differing column is named); the rows are handed to
the build as Arrow batches, images as their stored bytes, never decoded. Each row keeps its key,
so rows stay matched across versions; keys are checked before anything is written:

- ``keys="keep"`` (default): every key as it is. Datasets built without keys have their running
  index as keys (0, 1, ...): when every input's keys are its running index, the result's keys are
  its own running index. Any other key found in two inputs is a :class:`DuplicateKeyError` naming
  it, both inputs and their rows.
- ``keys="index"``: the rows are numbered 0, 1, ... in the result.
- ``keys="prefix"``: each key becomes ``"<i>/<key>"``, ``i`` the input's position in the list.

Examples
--------
>>> import tempfile, stable_explore as se
>>> home = tempfile.mkdtemp()
>>> a = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="a", home=home, progress=False)
>>> b = se.build([{"x": 2}], se.Features(x=se.Value("int64")), name="b", home=home, progress=False)
>>> rows = ConcatRows([a, b], "keep")
>>> len(rows), rows.keys
(2, 'index')
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.errors import DuplicateKeyError, InvalidArgumentTypeError, InvalidOptionError, SchemaError
from stable_explore.schema import HASH_COLUMN, KEY_COLUMN, Array3D
from stable_explore.schema.huggingface import row_values

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.schema import Features

__all__ = ["KEY_MODES", "ConcatRows", "concatenated_name"]

KEY_MODES = ("keep", "index", "prefix")
_BATCH = 10_000  # rows handed to the build at a time (Arrow, images as bytes)


def _check_features(parts: Sequence[CachedDataset]) -> Features:
    """The features all ``parts`` share (the first's column order); else a SchemaError naming the column."""
    first = parts[0].features
    for position, part in enumerate(parts[1:], start=1):
        features = part.features
        for name in [*first, *(n for n in features if n not in first)]:
            here, there = first.get(name), features.get(name)
            if here is None or there is None:
                held, lacks = (0, position) if there is None else (position, 0)
                msg = (
                    f"concatenate_datasets needs the same columns: column {name!r} is in dataset {held} "
                    f"({parts[held].ref}) but not in dataset {lacks} ({parts[lacks].ref}); "
                    "remove_columns or select_columns make them match"
                )
                raise SchemaError(msg)
            if here != there:
                msg = (
                    f"concatenate_datasets needs the same features: column {name!r} is {here!r} in dataset 0 "
                    f"({parts[0].ref}) and {there!r} in dataset {position} ({part.ref}); "
                    f"cast_column({name!r}, ...) makes them match"
                )
                raise SchemaError(msg)
    return first


def _keys_of(part: CachedDataset) -> pa.Array:
    if part.cache_meta.is_seed_v1:  # no stored keys: the running index
        return pa.array(part.base_rows(), type=pa.int64())
    return part.arrow_column(KEY_COLUMN)


def _is_running_index(keys: pa.Array) -> bool:
    if not pa.types.is_integer(keys.type) or keys.null_count:
        return False
    values = keys.to_numpy(zero_copy_only=False)
    return bool(np.array_equal(values, np.arange(len(values))))


def _find_repeat(parts: Sequence[CachedDataset], keys: list[pa.Array]) -> None:
    """Raise a DuplicateKeyError naming a key two rows share (in one input or two), with both inputs and rows."""
    types = {str(k.type) for k in keys if len(k)}
    if len({"int" if t.startswith(("int", "uint")) else t for t in types}) > 1:
        msg = (
            f"concatenate_datasets: the inputs' keys are of different types ({sorted(types)}); "
            "keys='prefix' makes them text ('<i>/<key>'), keys='index' numbers the rows"
        )
        raise SchemaError(msg)
    if not keys:
        return
    joined = pa.chunked_array([k.cast(pa.int64()) if pa.types.is_integer(k.type) else k for k in keys])
    joined = joined.combine_chunks()
    counts = pc.value_counts(joined)
    repeated = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
    if len(repeated) == 0:
        return
    key = repeated[0].as_py()
    where = np.flatnonzero(pc.equal(joined, repeated[0]).to_numpy(zero_copy_only=False))[:2]
    starts = np.cumsum([0, *(len(k) for k in keys)])
    places = []
    for index in where:
        part = int(np.searchsorted(starts, index, side="right") - 1)
        places.append(f"row {int(index - starts[part])} of dataset {part} ({parts[part].ref})")
    error = DuplicateKeyError(key, int(where[0]), int(where[1]))
    add_note = getattr(error, "add_note", None)  # Python 3.11+; the message alone on 3.10
    if add_note is not None:
        add_note(
            f"concatenate_datasets: key {key!r} is the key of {places[0]} and of {places[1]}; keys='prefix' keeps "
            "each key as '<i>/<key>' (i: the dataset's position in the list), keys='index' numbers the rows 0, 1, ..."
        )
    raise error


def concatenated_name(parts: Sequence[CachedDataset]) -> str:
    """The default name of a concatenation: the inputs' names joined by ``-``, then ``-concatenated``."""
    names = "-".join(dict.fromkeys(part.name or part.cache_dir.name for part in parts))
    return f"{names[:100].rstrip('-._')}-concatenated"


class ConcatRows:
    """The rows of ``parts``, one after another, with their keys (see the module's docstring for ``keys``)."""

    def __init__(self, parts: Sequence[CachedDataset], keys: str = "keep") -> None:
        from stable_explore.dataset import CachedDataset

        parts = list(parts) if not isinstance(parts, (str, bytes)) else []
        if not parts or not all(isinstance(part, CachedDataset) for part in parts):
            kinds = sorted({type(part).__name__ for part in parts}) if parts else ["nothing"]
            msg = f"concatenate_datasets needs a list of one or more datasets, got {kinds}"
            raise InvalidArgumentTypeError(msg)
        if keys not in KEY_MODES:
            msg = f"keys must be one of {KEY_MODES}, got {keys!r}"
            raise InvalidOptionError(msg)
        self.features = _check_features(parts)
        self.parts = parts
        if keys == "keep":
            found = [_keys_of(part) for part in parts]
            if all(_is_running_index(k) for k in found):
                keys = "index"  # datasets built without keys: the result's keys are its running index too
            else:
                _find_repeat(parts, found)
        self.keys = keys
        self._arrays = any(isinstance(feature, Array3D) for feature in self.features.values())

    def __len__(self) -> int:
        return sum(len(part) for part in self.parts)

    def __iter__(self) -> Iterator[pa.Table | tuple[Any, dict[str, Any]]]:
        columns = list(self.features)
        first = 0
        for position, part in enumerate(self.parts):
            for start in range(0, len(part), _BATCH):
                piece = part[start : start + _BATCH]
                table = piece.to_arrow(columns, with_row_columns=True)
                if HASH_COLUMN in table.column_names:
                    table = table.drop_columns([HASH_COLUMN])
                table = table.replace_schema_metadata(None)
                count = table.num_rows
                if self.keys == "index" or KEY_COLUMN not in table.column_names:
                    keys: pa.Array = pa.array(np.arange(first, first + count), type=pa.int64())
                elif self.keys == "prefix":
                    own = table.column(KEY_COLUMN).cast(pa.string())
                    keys = pc.binary_join_element_wise(f"{position}", own, "/").combine_chunks()
                else:
                    keys = table.column(KEY_COLUMN).combine_chunks()
                if KEY_COLUMN in table.column_names:
                    table = table.drop_columns([KEY_COLUMN])
                first += count
                if not self._arrays:
                    yield table.append_column(KEY_COLUMN, keys)
                    continue
                # an array's stored bytes are no value a build takes: rows, arrays read from their bytes
                values = row_values(self.features, table.to_pylist())
                yield from zip(keys.to_pylist(), values, strict=True)

    def __stable_token__(self) -> dict[str, Any]:
        """The inputs (version, rows and columns of each) and how the keys are made: equal inputs, equal version."""
        return {"concatenate": [part.__stable_token__() for part in self.parts], "keys": self.keys}
