"""Reading a dataset's rows: its format, decoding, batches, one column, a view's transform.

A mixin of ``CachedDataset``: ``ds[i]``, ``iter(ds)``, ``ds.iter(batch_size)`` and ``ds.column(name)``
read the stored rows (through a view's column map, if any), decode them in the dataset's format
(``with_format``) and pass them through a view's transform (``with_transform``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore._optional import require
from stable_explore.dataset._decoding import FORMATS, decode_table, decode_values, to_torch_values
from stable_explore.dataset._members import DatasetMembers
from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from stable_explore.storage.read.resident import note_read

if TYPE_CHECKING:
    import pyarrow as pa
    from typing_extensions import Self

    from stable_explore.dataset._selection import Rows

__all__ = ["RowReading"]


class RowReading(DatasetMembers):
    """``CachedDataset``'s row reading and decoding: ``with_format``, ``format``, ``iter`` and ``column``."""

    def with_format(self, format: str) -> Self:
        """The same rows, decoded differently.

        ``"pil"`` (default): images as PIL images, arrays as ndarrays.
        ``"numpy"``: images as ndarrays too. ``"python"``: images stay encoded
        bytes. ``"arrow"``: ``ds[i]`` and batches are ``pyarrow.Table``.
        ``"torch"``: tensors as Hugging Face ``datasets`` makes them: images channels first
        (C, H, W) ``uint8``, integers ``int64``, floats ``float32``, text as it is; :meth:`iter`
        stacks a batch's same-shape tensors.

        Arrays handed out (``"numpy"``, ``"pil"``'s arrays, ``"torch"``) own writable memory, so
        ``torch.from_numpy`` and a DataLoader's collate take them without a read-only warning.

        Examples
        --------
        >>> import tempfile, numpy as np, torch, stable_explore as se
        >>> ds = se.build([{"image": np.zeros((2, 3, 3), np.uint8), "label": "dog"}],
        ...               se.Features(image=se.Image(), label=se.ClassLabel(names=["cat", "dog"])),
        ...               name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> row = ds.with_format("torch")[0]
        >>> row["image"].shape, row["label"]
        (torch.Size([3, 2, 3]), tensor(1))
        >>> ds.with_format("numpy")[0]["image"].flags.writeable
        True

        Without PyTorch, ``with_format("torch")`` raises ``MissingDependencyError`` (an ``ImportError``)
        saying ``pip install 'stable-explore[torch]'``.
        """
        if format not in FORMATS:
            msg = f"format must be one of {FORMATS}, got {format!r}"
            raise InvalidOptionError(msg)
        if format == "torch":  # said now, not at the first row read
            require("torch", "torch", 'ds.with_format("torch")')
        return self._view(self._rows, format=format)

    @property
    def format(self) -> str:
        """How rows are decoded: ``"pil"``, ``"numpy"``, ``"python"`` or ``"arrow"`` (see :meth:`with_format`)."""
        return self._format

    def _table_of(self, rows: Rows, columns: Sequence[str] | None = None) -> pa.Table:
        if self._columns is not None:
            wanted = list(columns) if columns is not None else list(self._features)
            return self._columns.read(lambda stored: self._stored_table(rows, stored), wanted)
        return self._stored_table(rows, columns)

    def _stored_table(self, rows: Rows, columns: Sequence[str] | None = None) -> pa.Table:
        if isinstance(rows, range) and rows.step == 1:
            return self._backend.slice(rows.start, len(rows), columns=columns)
        return self._backend.take(np.asarray(rows, dtype=np.int64), columns=columns)

    def _transformed(self, rows: list[Any]) -> list[Any]:
        """Rows through the view's transform (a batch in, a batch out), as ``datasets`` applies it."""
        transform = self._transform
        if transform is None or self._format == "arrow":
            return rows
        names = list(rows[0]) if rows else list(self._features)
        batch = transform({name: [row[name] for row in rows] for name in names})
        columns = list(batch)
        if not columns:
            return [{} for _ in rows]
        return [dict(zip(columns, values, strict=True)) for values in zip(*batch.values(), strict=True)]

    def _decode_table(self, table: pa.Table, rows: Rows | None = None) -> list[Any]:
        return decode_table(table, self._features, self._format, rows, where=(self.ref, self.cache_dir))

    def _rows_at(self, rows: Rows) -> list[Any]:
        decoded = self._decode_table(self._table_of(rows, self._feature_columns()), rows)
        self._note_read(rows)
        return self._transformed(decoded)

    @functools.cached_property
    def _bytes_per_row(self) -> float:
        return self._meta.nbytes / max(
            1, self._meta.num_rows
        )  # a stable-datasets format-1 cache's sizes cost a stat per file

    def _note_read(self, rows: Rows) -> None:
        """Count the mapped bytes a read in order touched: the pages are let go of every so often (bounded RSS).

        Rows read out of order (a shuffled epoch) are not counted: each maps a window of pages around it,
        and letting those go would make the next epochs fault them in again (2-3 times slower); the
        kernel reclaims them as page cache when memory is short.
        """
        if len(rows) == 0:
            return
        first, last = int(rows[0]), int(rows[-1])
        if len(rows) == 1:  # one row (ds[i]): in order when it follows the last one read
            in_order = first == self.__dict__.get("_last_row_read", -2) + 1
        else:
            in_order = (isinstance(rows, range) and rows.step > 0) or bool(np.all(np.diff(rows) > 0))
        self.__dict__["_last_row_read"] = last
        if in_order:
            note_read(len(rows) * self._bytes_per_row)

    def _iter_row_batches(self, batch_size: int) -> Iterator[list[Any]]:
        rows = self._all_rows()
        for start in range(0, len(rows), batch_size):
            yield self._rows_at(rows[start : start + batch_size])

    def iter(self, batch_size: int = 1000) -> Iterator[Any]:
        """Batches as dicts of column -> list (or ``pyarrow.Table`` in the arrow format).

        Reads let go of the shards' memory-mapped pages as they pass them, so a scan's resident memory
        stays bounded however large the version (a batch it yielded stays valid).
        """
        rows = self._all_rows()
        for start in range(0, len(rows), batch_size):
            chunk = rows[start : start + batch_size]
            if self._format == "arrow":
                self._note_read(chunk)
                yield self._table_of(chunk, self._feature_columns())
                continue
            decoded = self._rows_at(chunk)
            names = list(decoded[0]) if decoded and self._transform is not None else self._feature_columns()
            batch = {name: [row[name] for row in decoded] for name in names}
            if self._format == "torch":
                batch = {name: _stacked(values) for name, values in batch.items()}
            yield batch

    def column(self, name: str) -> Any:
        """One column's values for every row, decoded in the current format."""
        if name not in self._features:
            msg = f"no column {name!r}; columns are {list(self._features)}"
            raise ColumnNotFoundError(msg)
        feature = self._features[name]
        values = self._column_arrow(name)
        if self._format == "arrow":
            return values
        return decode_values(
            feature, name, values.to_pylist(), self._format, self._all_rows(), where=(self.ref, self.cache_dir)
        )


def _stacked(values: list[object]) -> Any:
    """A torch batch column: one tensor when every value is a tensor of one shape and dtype (as ``datasets``)."""
    stacked = to_torch_values([values])[0]
    return stacked if len(values) else values
