"""The names Hugging Face ``datasets`` users reach for, with the same meaning, on ``CachedDataset``.

A mixin, so cached_dataset.py stays about views, decoding and export: ``num_rows``,
``num_columns``, ``shape``, ``column_names``, ``info``, ``sort`` and ``unique`` (in Arrow),
``train_test_split`` (views, with a seed: the same split ``datasets`` draws for that seed),
``select_columns``, ``remove_columns``, ``rename_column``, ``cast_column``, ``cast`` and ``flatten``
(views over the stored columns, see _columns.py), ``with_transform`` (applied when rows are read),
``to_hf``, and ``to_dict``, ``to_list``, ``to_csv``, ``to_json`` (thin: _text_export.py does the
work). None copies rows into a new version: every result is a view, a Python value or a file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.dataset._members import DatasetMembers
from stable_explore.errors import InvalidArgumentTypeError, InvalidOptionError, SchemaError

if TYPE_CHECKING:
    from typing_extensions import Self

    from stable_explore.schema import Feature, Features

__all__ = ["DatasetInfo", "DatasetsHabits"]


@dataclass(frozen=True)
class DatasetInfo:
    """What ``ds.info`` tells, as ``datasets.DatasetInfo`` does: features, description, license and names."""

    features: Features
    description: str | None
    license: str | None
    dataset_name: str | None
    version: str
    num_rows: int
    citation: str | None = None
    homepage: str | None = None


class DatasetsHabits(DatasetMembers):
    """``datasets``-style names on ``CachedDataset``: mixed into it (only there)."""

    @property
    def num_rows(self) -> int:
        """Rows in this dataset (``len(ds)``), as ``datasets`` names it.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(5)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.num_rows, ds[1:3].num_rows
        (5, 2)
        """
        return len(self)

    @property
    def column_names(self) -> list[str]:
        """The columns, in order (``list(ds.features)``).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1, "y": "a"}], se.Features(x=se.Value("int64"), y=se.Value("string")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.column_names
        ['x', 'y']
        """
        return list(self.features)

    @property
    def info(self) -> DatasetInfo:
        """Features, description, license, name and version in one object, like ``datasets.DatasetInfo``.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="n", home=tempfile.mkdtemp(),
        ...               description="one number", progress=False)
        >>> ds.info.description, ds.info.dataset_name, ds.info.num_rows
        ('one number', 'n', 1)
        """
        metadata = self.metadata
        citation, homepage = metadata.get("citation"), metadata.get("homepage")
        return DatasetInfo(
            features=self.features,
            description=metadata.get("description"),
            license=metadata.get("license"),
            dataset_name=self.name,
            version=self.version,
            num_rows=len(self),
            citation=None if citation is None else str(citation),
            homepage=None if homepage is None else str(homepage),
        )

    @property
    def num_columns(self) -> int:
        """Columns in this dataset (``len(ds.features)``), as ``datasets`` names it.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1, "y": "a"}], se.Features(x=se.Value("int64"), y=se.Value("string")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.num_columns, ds.remove_columns("y").num_columns
        (2, 1)
        """
        return len(self.features)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)``, as ``datasets`` and pandas give it.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(5)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.shape, ds[:2].shape
        ((5, 1), (2, 1))
        """
        return len(self), len(self.features)

    def sort(
        self, column_names: str | Sequence[str], reverse: bool | Sequence[bool] = False, null_placement: str = "at_end"
    ) -> Self:
        """A view of the rows ordered by one or more columns, sorted in Arrow (no row is decoded).

        A stable sort: equal rows keep their order. Labels sort by class index, as in ``datasets``.

        Parameters
        ----------
        column_names:
            A column, or columns (the first decides, the next break ties).
        reverse:
            Descending order: one bool, or one per column.
        null_placement:
            ``"at_end"`` (default) or ``"at_start"``.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": x} for x in [3, 1, 2]], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.sort("x")["x"], ds.sort("x", reverse=True)["x"]
        ([1, 2, 3], [3, 2, 1])
        """
        names = [column_names] if isinstance(column_names, str) else list(column_names)
        flags = [reverse] * len(names) if isinstance(reverse, bool) else list(reverse)
        if not names or len(flags) != len(names):
            msg = f"sort needs one column or more, and one reverse flag per column; got {names} and {reverse!r}"
            raise InvalidOptionError(msg)
        if null_placement not in ("at_end", "at_start"):
            msg = f"null_placement must be 'at_end' or 'at_start', got {null_placement!r}"
            raise InvalidOptionError(msg)
        columns = self._column_map()
        for name in names:
            columns.stored(name)  # a ColumnNotFoundError listing the columns
        keys = {f"k{i}": self._column_arrow(name) for i, name in enumerate(names)}
        order = [
            (key, "descending" if flag else "ascending", null_placement) for key, flag in zip(keys, flags, strict=True)
        ]
        import pyarrow.compute as pc  # here: se.load and se.build need not import it (~20 ms)

        try:
            positions = pc.sort_indices(pa.table(keys), sort_keys=order)
        except pa.ArrowNotImplementedError as exc:
            msg = f"cannot sort by {names}: Arrow cannot order values of {[str(k.type) for k in keys.values()]}"
            raise SchemaError(msg) from exc
        return self._view(self._select(positions.to_numpy()))

    def unique(self, column: str) -> list[Any]:
        """The distinct values of a column, in order of first appearance, found in Arrow.

        Labels are class indices, as in ``datasets`` (``ds.features[column].int2str`` names them).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": x} for x in [3, 1, 3]], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.unique("x")
        [3, 1]
        """
        self._column_map().stored(column)  # a ColumnNotFoundError listing the columns
        values = self._column_arrow(column)
        import pyarrow.compute as pc  # here: se.load and se.build need not import it (~20 ms)

        try:
            found: list[object] = pc.unique(values).to_pylist()
        except pa.ArrowNotImplementedError as exc:
            msg = f"cannot find the distinct values of column {column!r}: Arrow does not compare {values.type} values"
            raise SchemaError(msg) from exc
        return found

    def train_test_split(
        self,
        test_size: float | int | None = None,
        train_size: float | int | None = None,
        *,
        shuffle: bool = True,
        seed: int | None = None,
    ) -> dict[str, Self]:
        """Two views, ``{"train": ..., "test": ...}``, drawn as ``datasets`` draws them (same seed, same rows).

        Parameters
        ----------
        test_size, train_size:
            A fraction in (0, 1) or a number of rows. With neither, a quarter of the rows are test rows;
            with one, the other part is the rest.
        shuffle:
            Draw the rows at random (default), or split in order (train first).
        seed:
            Makes the draw reproducible.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(10)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> parts = ds.train_test_split(test_size=0.2, seed=0)
        >>> len(parts["train"]), len(parts["test"]), sorted(parts["train"]["x"] + parts["test"]["x"]) == list(range(10))
        (8, 2, True)
        """
        n = len(self)
        n_train, n_test = _split_sizes(n, test_size, train_size)
        if shuffle:
            permutation = np.random.default_rng(seed).permutation(n)
            test, train = permutation[:n_test], permutation[n_test : n_test + n_train]
        else:
            train, test = np.arange(n_train), np.arange(n_train, n_train + n_test)
        return {"train": self._view(self._select(train)), "test": self._view(self._select(test))}

    def remove_columns(self, column_names: str | Sequence[str]) -> Self:
        """A view without these columns (nothing is copied; the version keeps them).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1, "y": "a"}], se.Features(x=se.Value("int64"), y=se.Value("string")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.remove_columns("y").column_names, ds.remove_columns(["y"])[0]
        (['x'], {'x': 1})
        """
        names = [column_names] if isinstance(column_names, str) else list(column_names)
        return self._with_columns(self._column_map().remove(names))

    def select_columns(self, column_names: str | Sequence[str]) -> Self:
        """A view with only these columns, in the order given (nothing is copied; the version keeps the others).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1, "y": "a"}], se.Features(x=se.Value("int64"), y=se.Value("string")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.select_columns(["y", "x"])[0], ds.select_columns("x").column_names
        ({'y': 'a', 'x': 1}, ['x'])
        """
        names = [column_names] if isinstance(column_names, str) else list(column_names)
        return self._with_columns(self._column_map().select(names))

    def rename_column(self, original_column_name: str, new_column_name: str) -> Self:
        """A view with one column renamed.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="n", home=tempfile.mkdtemp(),
        ...               progress=False)
        >>> ds.rename_column("x", "n")[0]
        {'n': 1}
        """
        return self._with_columns(self._column_map().rename(original_column_name, new_column_name))

    def rename_columns(self, column_mapping: dict[str, str]) -> Self:
        """A view with several columns renamed (``{old: new}``, applied in order).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1, "y": "a"}], se.Features(x=se.Value("int64"), y=se.Value("string")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.rename_columns({"x": "number", "y": "letter"})[0]
        {'number': 1, 'letter': 'a'}
        """
        columns = self._column_map()
        for old, new in column_mapping.items():
            columns = columns.rename(old, new)
        return self._with_columns(columns)

    def cast_column(self, column: str, feature: Feature | Any) -> Self:
        """A view where one column reads as another feature type (Arrow casts the stored values).

        ``feature`` is one of ours or a ``datasets`` feature (converted). New class names for a label
        column, a wider int, a label column read as its ints: anything Arrow can cast.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="n", home=tempfile.mkdtemp(),
        ...               progress=False)
        >>> ds.cast_column("x", se.ClassLabel(names=["no", "yes"])).features["x"]
        ClassLabel(names=['no', 'yes'])
        >>> ds.cast_column("x", se.Value("float64"))[0]
        {'x': 1.0}
        """
        from stable_explore.schema.base import Feature as FeatureType
        from stable_explore.schema.huggingface import features_from_hf

        ours = feature
        if not isinstance(feature, FeatureType):  # a datasets feature: converted
            ours = features_from_hf({column: _hf_feature_spec(feature)})[column]
        columns = self._column_map()
        return self._with_columns(columns.cast(column, ours, self._stored_column_type(column)))

    def cast(self, features: Features | object) -> Self:
        """A view where every column reads as the feature ``features`` gives it (Arrow casts the stored values).

        As in ``datasets``, ``features`` (ours or ``datasets.Features``) names every column, no
        more and no fewer; the columns come in its order. Each column is cast as :meth:`cast_column`
        casts it.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1, "y": 0}], se.Features(x=se.Value("int64"), y=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.cast(se.Features(x=se.Value("float64"), y=se.ClassLabel(names=["no", "yes"])))[0]
        {'x': 1.0, 'y': 0}
        """
        if not hasattr(features, "items"):
            msg = f"cast needs features (se.Features or datasets.Features), got {type(features).__name__}"
            raise InvalidArgumentTypeError(msg)
        wanted: dict[str, object] = dict(features.items())
        current = self.column_names
        missing, extra = [c for c in current if c not in wanted], [c for c in wanted if c not in current]
        if missing or extra:
            msg = (
                f"cast needs a feature for every column {current} and no other: "
                + "; ".join(
                    part
                    for part in (
                        f"no feature for {missing}" if missing else "",
                        f"no column {extra}" if extra else "",
                    )
                    if part
                )
                + " (cast_column casts one column)"
            )
            raise SchemaError(msg)
        cast: Self = self._with_columns(self._column_map().select(list(wanted)))
        for name, feature in wanted.items():
            cast = cast.cast_column(name, feature)
        return cast

    def flatten(self) -> Self:
        """The same rows with nested columns as dotted top-level ones, as ``datasets``' ``flatten``.

        A dict of features is refused when a dataset is built (see the features table in the docs),
        so every column here is already flat, and ``flatten()`` returns an equal dataset (a view of the
        same rows and columns); it is here so code written for ``datasets`` runs unchanged.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="n", home=tempfile.mkdtemp(),
        ...               progress=False)
        >>> ds.flatten().column_names, ds.flatten()[0]
        (['x'], {'x': 1})
        """
        nested = [name for name in self.column_names if pa.types.is_struct(self._stored_column_type(name))]
        if nested:
            msg = f"flatten of the struct column(s) {nested} is not supported; select the fields you need"
            raise SchemaError(msg)
        return self._view(self.view_rows)

    def with_transform(self, transform: Callable[[dict[str, list[Any]]], Any] | None) -> Self:
        """A view whose rows pass through ``transform`` when read: ``ds[i]``, batches, iteration, DataLoaders.

        As in ``datasets``, ``transform`` takes a batch (a dict of column -> list of values, decoded
        in the current format) and returns a dict of lists; ``ds[i]`` is a batch of one. Nothing is
        computed or stored ahead; ``None`` removes the transform.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(3)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> doubled = ds.with_transform(lambda batch: {"x2": [x * 2 for x in batch["x"]]})
        >>> doubled[2], ds[2]
        ({'x2': 4}, {'x': 2})
        """
        if transform is not None and not callable(transform):
            msg = f"transform must be a function of a batch (dict of lists), got {type(transform).__name__}"
            raise InvalidArgumentTypeError(msg)
        return self._with_transform(transform)

    def to_dict(self, batch_size: int = 1000) -> dict[str, list[Any]]:
        """Every row as ``{column: [values]}``, plain Python values as ``datasets``' ``to_dict`` gives them.

        Labels are class indices, arrays nested lists, dates ``datetime``; an image is its encoded
        file bytes, as ``to_pandas()`` gives it by default (``datasets`` gives ``{"bytes": ..., "path":
        None}``). A view's columns and rows, in its order; a ``with_transform`` is not applied.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"label": "dog"}, {"label": "cat"}], se.Features(label=se.ClassLabel(names=["cat", "dog"])),
        ...               name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> ds.to_dict()
        {'label': [1, 0]}
        """
        from stable_explore.dataset._text_export import plain_batches

        out: dict[str, list[object]] = {name: [] for name in self.features}
        for batch in plain_batches(self, batch_size):
            for name, values in batch.items():
                out[name].extend(values)
        return out

    def to_list(self, batch_size: int = 1000) -> list[dict[str, Any]]:
        """Every row as a dict of plain Python values (as :meth:`to_dict` gives them), as ``datasets``' ``to_list``.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"label": "dog"}, {"label": "cat"}], se.Features(label=se.ClassLabel(names=["cat", "dog"])),
        ...               name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> ds.to_list()
        [{'label': 1}, {'label': 0}]
        """
        from stable_explore.dataset._text_export import plain_batches

        rows: list[dict[str, object]] = []
        for batch in plain_batches(self, batch_size):
            names = list(batch)
            rows.extend(dict(zip(names, values, strict=True)) for values in zip(*batch.values(), strict=True))
        return rows

    def to_csv(self, path: str | os.PathLike[str], *, batch_size: int = 1000) -> Path:
        """Write the rows to a CSV file, as ``datasets``' ``to_csv`` writes them: a header, no index, labels as ints.

        The file appears whole or not at all (written beside it, then renamed). A column of images or
        other bytes is refused (CSV has no bytes): drop it with :meth:`remove_columns`, or use ``to_parquet``.

        Examples
        --------
        >>> import tempfile, pathlib, stable_explore as se
        >>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
        >>> ds = se.build([{"x": i} for i in range(3)], se.Features(x=se.Value("int64")), name="n", home=home,
        ...               progress=False)
        >>> ds.to_csv(out / "n.csv").read_text().split()
        ['x', '0', '1', '2']
        """
        from stable_explore.dataset._text_export import write_text

        return write_text(self, path, "csv", batch_size=batch_size)

    def to_json(self, path: str | os.PathLike[str], *, batch_size: int = 1000) -> Path:
        """Write the rows to a JSON Lines file (one record per line), as ``datasets``' ``to_json`` does by default.

        Values as :meth:`to_csv` writes them; the file appears whole or not at all.

        Examples
        --------
        >>> import tempfile, pathlib, stable_explore as se
        >>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
        >>> ds = se.build([{"x": i} for i in range(2)], se.Features(x=se.Value("int64")), name="n", home=home,
        ...               progress=False)
        >>> ds.to_json(out / "n.jsonl").read_text().splitlines()
        ['{"x":0}', '{"x":1}']
        """
        from stable_explore.dataset._text_export import write_text

        return write_text(self, path, "json", batch_size=batch_size)

    def to_hf(self, *, with_keys: bool = True) -> Any:
        """A Hugging Face ``datasets.Dataset`` of these rows, with its features: class names, images, arrays.

        The Arrow data is handed over, not rows: images keep their bytes (no re-encode), and the
        table reads the memory-mapped shards. Each row's key is in a last column, ``__key__``
        (``with_keys=False`` leaves it out), so :func:`stable_explore.from_hf` keys the rows as they
        were here and the same rows build the same version. Needs ``datasets``
        (``pip install 'stable-explore[hf]'``).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"label": "dog"}], se.Features(label=se.ClassLabel(names=["cat", "dog"])),
        ...               name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> hf = ds.to_hf()
        >>> hf.features["label"].int2str(hf[0]["label"])
        'dog'
        """
        from stable_explore.io.huggingface import to_hf

        return to_hf(self, with_keys=with_keys)  # type: ignore[arg-type]


def _hf_feature_spec(feature: object) -> Any:
    """The ``to_dict()`` form of one ``datasets`` feature (``datasets.Features`` knows how to write it)."""
    import datasets

    return datasets.Features({"_": feature}).to_dict()["_"]


def _split_sizes(n: int, test_size: float | int | None, train_size: float | int | None) -> tuple[int, int]:
    """(train rows, test rows) of ``n``, as ``datasets.Dataset.train_test_split`` counts them."""
    if test_size is None and train_size is None:
        test_size = 0.25
    for label, size in (("test_size", test_size), ("train_size", train_size)):
        if size is None:
            continue
        if isinstance(size, bool) or not isinstance(size, (int, float)):
            msg = f"{label} must be a fraction in (0, 1) or a number of rows, got {size!r}"
            raise InvalidOptionError(msg)
        if (isinstance(size, int) and not 0 < size < n) or (isinstance(size, float) and not 0 < size < 1):
            msg = f"{label}={size} must be a fraction in (0, 1) or a number of rows in (0, {n}) for {n} rows"
            raise InvalidOptionError(msg)
    n_test = None if test_size is None else (math.ceil(test_size * n) if isinstance(test_size, float) else test_size)
    n_train = (
        None if train_size is None else (math.floor(train_size * n) if isinstance(train_size, float) else train_size)
    )
    if n_train is None:
        n_train = n - int(n_test or 0)
    if n_test is None:
        n_test = n - n_train
    if n_train + n_test > n:
        msg = f"train ({n_train}) and test ({n_test}) rows together exceed the {n} rows; make one smaller"
        raise InvalidOptionError(msg)
    if n_train == 0:
        msg = f"with {n} rows, test_size={test_size} and train_size={train_size} leave no train rows"
        raise InvalidOptionError(msg)
    return int(n_train), int(n_test)
