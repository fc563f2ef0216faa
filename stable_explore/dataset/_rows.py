"""The views of some rows of a dataset, by the names ``datasets`` users type: take, select, head, shuffle, filter.

A mixin, so cached_dataset.py stays about views, decoding and export. ``take(n)`` is the first
``n`` rows and ``select(positions)`` the rows at those positions, as in Hugging Face ``datasets``;
``filter`` keeps the rows a function (of a row, or with ``batched=True`` of a batch) or column
values pass. Every result is a view: nothing is copied.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.dataset._members import DatasetMembers
from stable_explore.errors import (
    ColumnNotFoundError,
    EncodingError,
    InvalidArgumentTypeError,
    InvalidOptionError,
)
from stable_explore.schema import ClassLabel, Value

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["RowViews"]

_DATASETS_FILTER_OPTIONS = frozenset(
    {
        "with_indices",
        "with_rank",
        "input_columns",
        "num_proc",
        "fn_kwargs",
        "keep_in_memory",
        "load_from_cache_file",
        "cache_file_name",
        "writer_batch_size",
        "suffix_template",
        "new_fingerprint",
        "desc",
        "function",
    }
)
"""Keywords of ``datasets.Dataset.filter`` that are not columns here: named as unsupported, not as missing columns."""


class RowViews(DatasetMembers):
    """``ds.take``, ``ds.select``, ``ds.head``, ``ds.shuffle`` and ``ds.filter``: mixed into ``CachedDataset`` only."""

    def take(self, n: int) -> Self:
        """A view of the first ``n`` rows, as ``datasets``' ``take`` and Polars' ``head``.

        ``n`` larger than the dataset gives every row; a negative ``n`` is an error. Rows at given
        positions are :meth:`select`'s (``take`` with a list still does that, with a
        ``DeprecationWarning``).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(4)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.take(2)["x"], ds.take(10)["x"], ds[1:].take(1)["x"]
        ([0, 1], [0, 1, 2, 3], [1])
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            if isinstance(n, (Sequence, np.ndarray, range)) and not isinstance(n, (str, bytes)):
                warnings.warn(
                    "ds.take(positions) is deprecated: take(n) is the first n rows, as in datasets; "
                    "use ds.select(positions) for the rows at those positions",
                    DeprecationWarning,
                    stacklevel=2,
                )
                return self.select(n)
            msg = f"take(n) needs a number of rows (an int), got {type(n).__name__}; select(positions) picks rows"
            raise InvalidArgumentTypeError(msg)
        if n < 0:
            msg = f"take(n) needs n >= 0, got {int(n)}; the last rows are ds[-{-int(n)}:]"
            raise InvalidOptionError(msg)
        return self._view(self._select(slice(0, int(n))))

    def select(self, indices: Sequence[int] | np.ndarray | range) -> Self:
        """A view of the rows at ``indices`` (positions in this dataset, negative from the end), in that order.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(4)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.select([3, 0])["x"], ds.select(range(1, 3))["x"]
        ([3, 0], [1, 2])
        """
        return self._view(self._select(indices))

    def head(self, n: int = 5) -> Self:
        """A view of the first ``n`` rows (``take(n)``, with pandas' default of 5)."""
        return self.take(n)

    def shuffle(self, seed: int | None = None) -> Self:
        """A view of the rows in a random order (reproducible with ``seed``)."""
        order = np.random.default_rng(seed).permutation(len(self))
        return self._view(self._select(order))

    def filter(
        self,
        function: Callable[[Any], Any] | None = None,
        /,
        *,
        batched: bool = False,
        batch_size: int = 1000,
        **equals: object,
    ) -> Self:
        """A view of the rows that pass.

        ``filter(label="cat")`` or ``filter(label=["cat", "dog"])`` compares columns with Arrow
        compute (class names allowed for labels) and never decodes images. ``filter(fn)`` calls
        ``fn`` on each decoded row; with ``batched=True``, as in ``datasets``, ``fn`` gets a batch
        of ``batch_size`` rows (a dict of column -> list) and returns one bool per row.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]), x=se.Value("int64"))
        >>> rows = [{"label": "cat", "x": i} for i in range(4)]
        >>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> len(ds.filter(label="cat")), len(ds.filter(label="dog"))
        (4, 0)
        >>> ds.filter(lambda row: row["x"] % 2 == 1)["x"]
        [1, 3]
        >>> ds.filter(lambda batch: [x > 1 for x in batch["x"]], batched=True)["x"]
        [2, 3]
        """
        if batch_size is None or batch_size < 1:
            msg = f"batch_size must be at least 1, got {batch_size}"
            raise InvalidOptionError(msg)
        unsupported = sorted(name for name in equals if name in _DATASETS_FILTER_OPTIONS and name not in self.features)
        if unsupported:
            msg = (
                f"filter does not take datasets' option(s) {unsupported}: filter(fn) gets each row, "
                "filter(fn, batched=True, batch_size=n) a batch; keywords name columns to compare (label='cat')"
            )
            raise InvalidOptionError(msg)
        rows = self.base_rows()
        keep = np.ones(len(rows), dtype=bool)
        for column, wanted in equals.items():
            keep &= self._column_matches(column, wanted, rows)
        if function is None:
            return self._view(rows[keep])
        candidates = self._view(rows[keep])
        if batched:
            mask = _batched_mask(function, candidates, batch_size)
        else:
            mask = np.fromiter((bool(function(row)) for row in candidates), dtype=bool, count=len(candidates))
        return self._view(rows[keep][mask])

    def _column_matches(self, column: str, wanted: object, rows: np.ndarray) -> np.ndarray:
        features = self.features
        if column not in features:
            msg = f"no column {column!r}; columns are {list(features)}"
            raise ColumnNotFoundError(msg)
        feature = features[column]
        values = wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
        if isinstance(feature, ClassLabel) or (isinstance(feature, Value) and feature.is_temporal):
            try:  # a class that does not exist is a mistake to say, not a filter that matches nothing;
                # a date or time may be given in any form its column accepts (ISO text, numpy, pandas)
                values = [feature.encode_value(v) for v in values]
            except EncodingError as exc:
                raise EncodingError(exc.reason, field=column) from None
        data = self._column_arrow(column, rows)
        import pyarrow.compute as pc  # here: se.load and se.build need not import it (~20 ms)

        matches = pc.is_in(data, value_set=pa.array(values, type=data.type)).fill_null(False)
        mask: np.ndarray = matches.to_numpy(zero_copy_only=False)
        return mask


def _batched_mask(function: Callable[[Any], Any], candidates: DatasetMembers, batch_size: int) -> np.ndarray:
    """One bool per row of ``candidates``: ``function`` of each batch, checked to give one per row of it."""
    parts: list[np.ndarray] = []
    first = 0
    name = str(getattr(function, "__qualname__", type(function).__name__))
    for batch in candidates.iter(batch_size=batch_size):
        count = min(batch_size, len(candidates) - first)
        result = function(batch)
        if isinstance(result, (bool, np.bool_)) or np.ndim(result) != 1:
            msg = (
                f"filter(batched=True): {name} returned {type(result).__name__} for the batch of rows "
                f"{first}-{first + count - 1}; a batched filter returns one bool per row (a list or array)"
            )
            raise InvalidArgumentTypeError(msg)
        mask = np.asarray(result, dtype=bool)
        if len(mask) != count:
            msg = (
                f"filter(batched=True): {name} returned {len(mask)} values for the batch of rows "
                f"{first}-{first + count - 1} ({count} rows); it must return one bool per row"
            )
            raise InvalidOptionError(msg)
        parts.append(mask)
        first += count
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
