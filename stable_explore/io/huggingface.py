"""Hugging Face ``datasets`` in and out: ``ds.to_hf()`` and the rows of a ``datasets.Dataset`` for a build.

``to_hf`` hands ``datasets`` our Arrow columns (memory-mapped shards, image bytes never copied
through Python) in its own layout, with its features: class names, ``Image``, ``Array3D`` and
lists. :class:`HFRows` reads a ``datasets.Dataset`` as Arrow (images undecoded: the bytes are
kept as they are) and gives the rows a build encodes. ``datasets`` is imported inside functions.

Examples
--------
>>> import tempfile, stable_explore as se
>>> ds = se.build([{"label": "dog"}, {"label": "cat"}], se.Features(label=se.ClassLabel(names=["cat", "dog"])),
...               name="pets", home=tempfile.mkdtemp(), progress=False)
>>> hf = to_hf(ds)
>>> hf.features["label"].names, list(hf["label"])
(['cat', 'dog'], [1, 0])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from stable_explore._canonical import fingerprint as _fingerprint
from stable_explore._optional import require
from stable_explore.dataset._export import row_keys
from stable_explore.errors import InvalidArgumentTypeError, SchemaError
from stable_explore.schema import KEY_COLUMN, RESERVED_COLUMNS, Array3D, Boxes, Features, Sequence
from stable_explore.schema.hf_boxes import box_layout
from stable_explore.schema.huggingface import (
    features_from_hf,
    from_hf_layout,
    hf_features_dict,
    is_hf_features,
    row_values,
)

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["HFRows", "hf_source_features", "is_hf_dataset", "our_features", "to_hf"]

_EXTRA = "hf"


def is_hf_dataset(value: object) -> bool:
    """Whether ``value`` is a ``datasets.Dataset`` (checked without importing ``datasets``)."""
    return any(cls.__module__.startswith("datasets.") and cls.__name__ == "Dataset" for cls in type(value).__mro__)


def our_features(features: object) -> Any:
    """``features`` as ours when they are Hugging Face ``datasets.Features``; anything else as it is."""
    return features_from_hf(features) if is_hf_features(features) else features


def hf_source_features(
    hf: Any, features: Any = None, *, box_format: str | None = "xywh", box_normalized: bool = False
) -> Features:
    """The features ``se.from_hf`` builds ``hf`` with.

    Converted from ``hf.features`` (or the ``datasets.Features`` given), a detection column read as
    :class:`~stable_explore.Boxes` of ``box_format`` (None: not); our own ``Features`` as given, a
    ``Boxes`` of them over a detection column keeping that column's feature for the way out.
    """
    spec = {name: f for name, f in hf.features.to_dict().items() if name not in RESERVED_COLUMNS}
    if features is None or is_hf_features(features):
        wanted = spec if features is None else features.to_dict()
        return features_from_hf(wanted, box_format=box_format, box_normalized=box_normalized)
    if not isinstance(features, Features):
        return cast("Features", features)  # HFRows names what it is
    out = Features(features)
    for name, feature in features.items():
        if isinstance(feature, Boxes) and feature.hf_feature is None and box_layout(spec.get(name)) is not None:
            out[name] = dataclasses.replace(feature, hf_feature=spec[name])
    return out


def to_hf(ds: CachedDataset, *, with_keys: bool = True) -> Any:
    """``ds.to_hf()``: a ``datasets.Dataset`` over the same Arrow data, with ``datasets``' features.

    With ``with_keys``, each row's key is in a last column, ``__key__`` (``Value("string")`` or
    ``Value("int64")``), which :class:`HFRows` keys the rows by.
    """
    datasets = require("datasets", _EXTRA, "ds.to_hf()")
    features = ds.features
    spec = hf_features_dict(features, arrays=True)
    table = ds.to_arrow(layout="huggingface")
    if with_keys:
        keys = row_keys(ds)
        table = table.append_column(KEY_COLUMN, keys)
        spec[KEY_COLUMN] = {"_type": "Value", "dtype": "string" if pa.types.is_string(keys.type) else "int64"}
    hf_features = datasets.Features.from_dict(spec)
    table = _with_array_extensions(table, features, hf_features.arrow_schema)
    metadata = ds.metadata
    info = datasets.DatasetInfo(
        description=metadata.get("description") or "",
        license=metadata.get("license") or "",
        features=hf_features,
        dataset_name=ds.name,
        citation=str(metadata.get("citation") or ""),
        homepage=str(metadata.get("homepage") or ""),
    )
    # the fingerprint datasets would hash the whole table for: what identifies these rows already
    fingerprint = _fingerprint({"token": ds.__stable_token__(), "features": spec, "columns": table.column_names})
    return datasets.Dataset(table.replace_schema_metadata(None), info=info, fingerprint=fingerprint)


def _with_array_extensions(table: pa.Table, features: Features, schema: pa.Schema) -> pa.Table:
    """Top-level Array3D columns wrapped in ``datasets``' extension type (the only type it reads them as)."""
    for name, feature in features.items():
        if isinstance(feature, Array3D) and name in table.column_names:
            kind = schema.field(name).type
            chunks = [pa.ExtensionArray.from_storage(kind, chunk) for chunk in table.column(name).chunks]
            index = table.column_names.index(name)
            table = table.set_column(index, pa.field(name, kind), pa.chunked_array(chunks, type=kind))
        elif isinstance(feature, Sequence) and _holds_arrays(feature):
            table = table.set_column(
                table.column_names.index(name), schema.field(name), table.column(name).cast(schema.field(name).type)
            )
    return table


def _holds_arrays(feature: object) -> bool:
    return isinstance(feature, Array3D) or (isinstance(feature, Sequence) and _holds_arrays(feature.feature))


class HFRows:
    """The rows of a ``datasets.Dataset``, for a build: read as Arrow, images undecoded, bytes kept.

    Iterating gives the rows in the dataset's order (a selection or shuffle of it included): keyed by
    its ``__key__`` column when it has one (``ds.to_hf()`` writes it; a ``webdataset`` load has it),
    else one dict per row, which a build keys by position. ``__key__`` is never a feature. The
    fingerprint is the dataset's own (``datasets`` derives it from its files and the transforms
    applied), so building the same dataset again is a cache hit.
    """

    def __init__(self, hf: Any, features: Features | None = None, *, batch_size: int = 1000) -> None:
        if not is_hf_dataset(hf):
            msg = f"expected a datasets.Dataset, got {type(hf).__name__}"
            raise InvalidArgumentTypeError(msg)
        self.hf = hf
        if features is None:
            spec = {name: f for name, f in hf.features.to_dict().items() if name not in RESERVED_COLUMNS}
            features = features_from_hf(spec)
        self.features = features
        self.batch_size = batch_size
        self.keyed = KEY_COLUMN in hf.column_names

    def __len__(self) -> int:
        return int(self.hf.num_rows)

    def __iter__(self) -> Iterator[dict[str, Any]] | Iterator[tuple[int | str, dict[str, Any]]]:
        names = [name for name in self.hf.column_names if name in self.features]
        return self._keyed(names) if self.keyed else self._rows(names)

    def _rows(self, names: list[str]) -> Iterator[dict[str, Any]]:
        arrow = self.hf.select_columns(names).with_format("arrow")
        for batch in arrow.iter(batch_size=self.batch_size):
            table = from_hf_layout(batch, self.features)
            yield from row_values(self.features, table.to_pylist())

    def _keyed(self, names: list[str]) -> Iterator[tuple[int | str, dict[str, Any]]]:
        arrow = self.hf.select_columns([*names, KEY_COLUMN]).with_format("arrow")
        first = 0
        for batch in arrow.iter(batch_size=self.batch_size):
            keys: list[int | str | None] = batch.column(KEY_COLUMN).to_pylist()  # a key column: ints or strings
            if None in keys:
                msg = (
                    f"row {first + keys.index(None)} of the datasets.Dataset has no key in its {KEY_COLUMN} column; "
                    f"fill it, or remove the column (hf.remove_columns('{KEY_COLUMN}')) to key rows by position"
                )
                raise SchemaError(msg)
            first += len(keys)
            table = from_hf_layout(batch.drop_columns([KEY_COLUMN]), self.features)
            yield from zip(keys, row_values(self.features, table.to_pylist()), strict=True)

    def __stable_token__(self) -> dict[str, object]:
        """What identifies these rows for a build's fingerprint: the dataset's fingerprint and features."""
        fingerprint = getattr(self.hf, "_fingerprint", None)
        return {
            "datasets": fingerprint if fingerprint is not None else self.hf,
            "rows": len(self),
            "features": self.features.to_dict(),
        }
