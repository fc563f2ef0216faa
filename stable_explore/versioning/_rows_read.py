"""What a chain of edits has read of its origin's rows, so that a relabel and its save read each row once.

Examples
--------
>>> import tempfile, stable_explore as se
>>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
>>> ds = se.build([{"label": "cat"}] * 4, features, name="pets", home=tempfile.mkdtemp(), progress=False)
>>> read = RowsRead().of(ds, [2, 0], "label")
>>> read.keys, read.cells
({0: 0, 2: 2}, {(0, 'label'): 0, (2, 'label'): 0})
>>> read.of(ds, [0], "label") is read  # known: nothing is read again
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from stable_explore.schema import KEY_COLUMN

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["RowsRead"]


@dataclass(frozen=True)
class RowsRead:
    """What a chain of edits has read of its origin's rows (by position), so that no row is read twice.

    A relabel reads the rows' classes (to drop relabels to the class a row has) and their keys with
    them; the save's record of operations needs the same keys and classes, and finds them here.
    Only keys and class indexes are kept: never a row's other cells (images).
    """

    keys: Mapping[int, object] = field(default_factory=dict)
    """Position -> the row's key."""
    cells: Mapping[tuple[int, str], object] = field(default_factory=dict)
    """(position, ClassLabel column) -> the row's class in the origin."""

    def of(self, origin: CachedDataset, positions: Sequence[int], column: str | None = None) -> RowsRead:
        """What is known, plus the keys of ``positions`` (and their ``column`` values) read where not known yet."""
        missing = [p for p in positions if p not in self.keys or (column is not None and (p, column) not in self.cells)]
        if not missing:
            return self
        missing = sorted(set(missing))
        picked = origin[missing]
        rows = picked.base_rows()
        keys = dict(self.keys)
        cells = dict(self.cells)
        if origin.cache_meta.is_stable_datasets_v1:  # no key column: a row's key is its row number
            keys.update(zip(missing, rows.tolist(), strict=True))
            if column is not None:
                cells.update(zip([(p, column) for p in missing], picked.arrow_column(column).to_pylist(), strict=True))
            return RowsRead(keys, cells)
        columns = [KEY_COLUMN] if column is None else [KEY_COLUMN, column]
        table = origin.backend.take(rows, columns=columns)  # one read of the rows: their keys and the column
        keys.update(zip(missing, table.column(KEY_COLUMN).to_pylist(), strict=True))
        if column is not None:
            cells.update(zip([(p, column) for p in missing], table.column(column).to_pylist(), strict=True))
        return RowsRead(keys, cells)
