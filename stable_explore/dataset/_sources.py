"""Parquet files and pandas DataFrames as build sources: their rows, and their features when none are given.

Features come, in this order, from what the data says of itself: our features JSON (a file we
exported), the ``huggingface`` schema key (a file ``datasets`` or the Hub wrote), then the column
types: scalars and lists map to ``Value`` and ``Sequence``, a pandas ``Categorical`` to a
``ClassLabel`` of its categories, an image struct (``bytes``, ``path``) or a bytes column whose every
value is an image file to ``Image``. A column that fits none is a :class:`SchemaError` naming it.

Examples
--------
>>> import pandas as pd
>>> frame_features(pd.DataFrame({"label": pd.Categorical(["cat", "dog"]), "x": [1.5, 2.0]}))
Features(label=ClassLabel(names=['cat', 'dog']), x=Value(dtype='float64'))
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import xxhash

from stable_explore._arrays import complex_refusal, duplicate_names, holds_complex
from stable_explore.errors import CacheNotFoundError, SchemaError
from stable_explore.schema import (
    FEATURES_SCHEMA_KEY,
    KEY_COLUMN,
    RESERVED_COLUMNS,
    ClassLabel,
    Features,
    Image,
    Sequence,
    Value,
    feature_from_dict,
)
from stable_explore.schema.base import is_missing_mark
from stable_explore.schema.fields import Fields
from stable_explore.schema.huggingface import HF_SCHEMA_KEY, features_from_hf, from_hf_layout, row_values
from stable_explore.schema.image_formats import sniff

if TYPE_CHECKING:
    import pandas as pd

    from stable_explore.schema import Feature

__all__ = ["FrameRows", "ParquetRows", "frame_features", "schema_features", "source_key"]

_BATCH = 1000


class _KnowsContent(Protocol):
    """Rows that give a token of their content (what the build's fingerprint hashes)."""

    def __stable_token__(self) -> dict[str, object]: ...


def source_key(rows: _KnowsContent) -> str | None:
    """A build key for rows that know their content (``__stable_token__``): equal data, equal key.

    None when some part cannot be hashed by content (a cell holding an arbitrary object): then
    the build runs every time, as for any plain iterable.
    """
    from stable_explore._canonical import fingerprint
    from stable_explore.catalog.fingerprints.fingerprint import Tokenizer

    tokens = Tokenizer()
    token = tokens.value(rows.__stable_token__(), "source")
    if tokens.unstable:
        return None
    return f"{type(rows).__name__}:{fingerprint(token, 32)}"


def schema_features(schema: pa.Schema, sample: pa.Table | None = None) -> Features:
    """Features of an Arrow schema: from its metadata (ours, then ``datasets``'), else from its types."""
    metadata = schema.metadata or {}
    columns = [name for name in schema.names if name not in RESERVED_COLUMNS]
    if FEATURES_SCHEMA_KEY in metadata:
        ours = Features.from_dict(json.loads(metadata[FEATURES_SCHEMA_KEY]))
        if all(name in ours for name in columns):
            return Features({name: ours[name] for name in columns})
    if HF_SCHEMA_KEY in metadata:
        info = json.loads(metadata[HF_SCHEMA_KEY]).get("info") or {}
        spec = info.get("features") or {}
        if all(name in spec for name in columns):
            return features_from_hf({name: spec[name] for name in columns})
    return Features({name: _feature_of(name, schema.field(name).type, sample) for name in columns})


def _feature_of(name: str, arrow_type: pa.DataType, sample: pa.Table | None) -> Feature:
    """The feature a column of ``arrow_type`` holds (``sample`` tells image bytes from other bytes)."""
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_struct(arrow_type) and {f.name for f in arrow_type} == {"bytes", "path"}:
        return Image()
    binary = pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)
    if binary and sample is not None and name in sample.column_names and _all_images(sample.column(name)):
        return Image()
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        length = arrow_type.list_size if pa.types.is_fixed_size_list(arrow_type) else -1
        item = arrow_type.value_type
        if pa.types.is_struct(item) and item.num_fields and {f.name for f in item} != {"bytes", "path"}:
            # a list of dicts: each item's fields, typed as columns are (a dict inside one is refused, naming it)
            fields = {f.name: _feature_of(f"{name}.{f.name}", f.type, None) for f in item}
            return Sequence(Fields.of(fields), length=length)
        return Sequence(_feature_of(name, item, None), length=length)
    text = {"date32[day]": "date32", "date64[ms]": "date64"}.get(str(arrow_type), str(arrow_type))
    try:
        value = Value(text)
    except SchemaError:
        value = None
    if pa.types.is_struct(arrow_type) or pa.types.is_map(arrow_type):
        msg = (
            f"column {name!r} holds dicts (Arrow type {arrow_type}), which no feature type stores: split it into "
            f"columns of their own (pandas.json_normalize) or store it as JSON text (json.dumps each value, "
            f"with Value('string'))"
        )
        raise SchemaError(msg)
    if value is None or value.arrow_type != arrow_type:
        msg = (
            f"cannot infer a feature type for column {name!r} (Arrow type {arrow_type}); "
            "pass features= with a type for it (se.Features(...))"
        )
        raise SchemaError(msg)
    return value


def _all_images(column: pa.ChunkedArray) -> bool:
    values = [v for v in column.to_pylist() if v is not None]
    return bool(values) and all(sniff(v) is not None for v in values)


class ParquetRows:
    """The rows of a Parquet file, read in batches, in the layout our features encode (image structs too)."""

    def __init__(self, path: str | Path, features: Features | None = None) -> None:
        import pyarrow.parquet as pq

        self.path = Path(path)
        if not self.path.is_file():
            msg = f"no Parquet file at {self.path}"
            raise CacheNotFoundError(msg)
        self._file = pq.ParquetFile(self.path)
        repeated = duplicate_names(self._file.schema_arrow.names)
        if repeated:
            msg = (
                f"{self.path} has more than one column named {', '.join(map(repr, repeated))}; a dataset's columns "
                f"need distinct names: rename them where the file is written (or read it with pyarrow, "
                f"table.rename_columns([...]), and pass the table to se.build)"
            )
            raise SchemaError(msg)
        if features is None:
            sample = next(self._file.iter_batches(batch_size=100), None)
            features = schema_features(
                self._file.schema_arrow, None if sample is None else pa.Table.from_batches([sample])
            )
        self.features = features

    def __len__(self) -> int:
        return int(self._file.metadata.num_rows)

    def __iter__(self) -> Iterator[tuple[int | str, dict[str, Any]]] | Iterator[dict[str, Any]]:
        names = list(self.features)
        missing = [name for name in names if name not in self._file.schema_arrow.names]
        if missing:
            msg = f"{self.path} has no column(s) {missing}; its columns are {self._file.schema_arrow.names}"
            raise SchemaError(msg)
        if KEY_COLUMN in self._file.schema_arrow.names and KEY_COLUMN not in names:
            return self._keyed(names)  # a file written with its rows' keys (to_parquet(with_row_columns=True))
        return self._rows(names)

    def _rows(self, names: list[str]) -> Iterator[dict[str, Any]]:
        for batch in self._file.iter_batches(batch_size=_BATCH, columns=names):
            table = from_hf_layout(pa.Table.from_batches([batch]), self.features)
            yield from row_values(self.features, table.to_pylist())

    def _keyed(self, names: list[str]) -> Iterator[tuple[int | str, dict[str, Any]]]:
        first = 0
        for batch in self._file.iter_batches(batch_size=_BATCH, columns=[*names, KEY_COLUMN]):
            table = pa.Table.from_batches([batch])
            keys: list[int | str | None] = table.column(KEY_COLUMN).to_pylist()  # int64 or string, as we write
            if None in keys:
                msg = f"{self.path}: row {first + keys.index(None)} has no key in its {KEY_COLUMN} column"
                raise SchemaError(msg)
            first += len(keys)
            values = row_values(
                self.features, from_hf_layout(table.drop_columns([KEY_COLUMN]), self.features).to_pylist()
            )
            yield from zip(keys, values, strict=True)

    def __stable_token__(self) -> dict[str, object]:
        """The file's content digest and the features: a changed file builds anew."""
        digest = xxhash.xxh3_128()
        with self.path.open("rb") as handle:
            while block := handle.read(1 << 22):
                digest.update(block)
        return {"parquet": digest.hexdigest(), "features": self.features.to_dict()}


def frame_features(frame: pd.DataFrame) -> Features:
    """Features of a DataFrame's columns (a ``Categorical`` is a ``ClassLabel`` of its categories)."""
    import pandas as pd

    from stable_explore.dataset._export import FRAME_FEATURES_KEY

    recorded = frame.attrs.get(FRAME_FEATURES_KEY) or {}  # a frame from ds.to_pandas() knows its features
    features: dict[str, Feature] = {}
    check_frame_columns(frame)
    for name in frame.columns:
        if not isinstance(name, str):
            msg = f"column names must be text; column {name!r} is a {type(name).__name__}: rename it"
            raise SchemaError(msg)
        series = frame[name]
        if name in recorded:
            features[name] = feature_from_dict(recorded[name])
            continue
        if isinstance(series.dtype, pd.CategoricalDtype):
            features[name] = ClassLabel(names=[str(c) for c in series.cat.categories])
            continue
        if holds_complex(series):
            raise SchemaError(complex_refusal(name))
        try:
            array = pa.Array.from_pandas(series)
        except (pa.ArrowException, TypeError) as exc:
            msg = f"cannot infer a feature type for column {name!r} ({series.dtype} values: {exc}); pass features="
            raise SchemaError(msg) from exc
        features[name] = _feature_of(name, array.type, pa.table({name: array}))
    return Features(features)


def check_frame_columns(frame: pd.DataFrame) -> None:
    """Refuse a DataFrame with two columns of one name (``frame[name]`` would be a frame, not a column), naming it."""
    repeated = duplicate_names(frame.columns)
    if repeated:
        msg = (
            f"the DataFrame has more than one column named {', '.join(map(repr, repeated))}; a dataset's columns "
            f"need distinct names: rename them first (frame.columns = [...]), or drop the copies "
            f"(frame.loc[:, ~frame.columns.duplicated()])"
        )
        raise SchemaError(msg)


class FrameRows:
    """The rows of a DataFrame, keyed by its index when the index is unique (positions otherwise)."""

    def __init__(self, frame: pd.DataFrame, features: Features | None = None) -> None:
        check_frame_columns(frame)
        self.frame = frame
        self.features = features if features is not None else frame_features(frame)

    def __len__(self) -> int:
        return len(self.frame)

    def _keys(self) -> list[int | str]:
        index = self.frame.index
        if index.is_unique and index.inferred_type in ("integer", "string", "empty"):
            return [int(k) if isinstance(k, (int, np.integer)) else str(k) for k in index.tolist()]
        return list(range(len(self.frame)))

    def __iter__(self) -> Iterator[tuple[int | str, dict[str, Any]]]:
        import pandas as pd

        frame = self.frame
        missing = [name for name in self.features if name not in frame.columns]
        if missing:
            msg = f"the DataFrame has no column(s) {missing}; its columns are {list(frame.columns)}"
            raise SchemaError(msg)
        keys = self._keys()
        for start in range(0, len(frame), _BATCH):
            chunk = frame.iloc[start : start + _BATCH]
            columns = {name: self._column(pd, name, chunk[name]) for name in self.features}
            rows = [{name: values[offset] for name, values in columns.items()} for offset in range(len(chunk))]
            yield from zip(keys[start : start + len(chunk)], row_values(self.features, rows), strict=True)

    def _column(self, pd: ModuleType, name: str, series: pd.Series) -> list[object]:
        feature = self.features[name]
        if isinstance(series.dtype, pd.CategoricalDtype) and isinstance(feature, ClassLabel):
            # by category, not value: categories 0, 1 named "0", "1" must not be taken for class indices
            index_of = [_class_index(feature, name, c) for c in series.cat.categories]
            return [None if code < 0 else index_of[code] for code in series.cat.codes.tolist()]
        values = series.tolist()
        keeps_nan = isinstance(feature, Value) and feature.dtype.startswith("float")
        return [None if is_missing_mark(v, keeps_nan=keeps_nan) else v for v in values]

    def __stable_token__(self) -> dict[str, object]:
        """The frame itself (hashed by content) and the features."""
        return {"frame": self.frame, "features": self.features.to_dict()}


def _class_index(feature: ClassLabel, column: str, category: object) -> int:
    names = list(feature.names or ())
    text = str(category)
    if text not in names:
        msg = f"field {column!r}: the category {text!r} is no class of {feature!r}"
        raise SchemaError(msg)
    return names.index(text)
