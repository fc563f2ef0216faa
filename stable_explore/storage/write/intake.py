"""Reading a build's source into chunks of rows, column-wise: rows (dicts, ``(key, dict)`` pairs) and column batches.

Rows are pulled a batch at a time (``itertools.islice``; a column batch alone, so that a source of
column batches has one in memory at a time) and, when the batch is all dicts or all
pairs (the usual case), turned into columns by C-level ``map`` calls: no Python code runs per
row. A batch with anything unusual in it (a column batch, an item that is not a dict, a dict with
missing or extra fields) is read an item at a time, so an error names the exact row and field.

Examples
--------
>>> from stable_explore import Features, Value
>>> intake = Intake(iter([{"x": 1}, ("k", {"x": 2})]), Features(x=Value("int64")), batch_size=10)
>>> [(chunk.columns, chunk.keys, chunk.first) for chunk in intake.chunks()]
[([[1, 2]], [0, 'k'], 0)]
>>> intake.rows_read
2
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import pyarrow as pa

from stable_explore.errors import EncodingError
from stable_explore.storage.write.column_batches import batch_columns, batch_rows, is_column_batch

if TYPE_CHECKING:
    from stable_explore.schema import Features

__all__ = ["Chunk", "Intake", "Keys"]

Keys = Union[list[Any], range, pa.Array]  # noqa: UP007 - a runtime alias, for Python 3.10
"""A chunk's keys: Python keys, a range of running indices, or a column batch's Arrow key column."""


@dataclass
class Chunk:
    """Rows read from a source, column-wise: per feature, Python values or an Arrow array; their keys."""

    columns: list[list[Any] | pa.Array]
    keys: Keys
    first: int
    """The running index of the first row."""
    rows: int


def _field_error(example: object, features: Features, index: int, key: object) -> EncodingError:
    """The error for an example whose fields do not match the features (or that is not a dict)."""
    if not isinstance(example, Mapping):
        msg = f"expected a dict of field -> value, got {type(example).__name__}"
        return EncodingError(msg, index=index, key=key)
    return EncodingError(features.check_columns(example) or "fields differ from the features", index=index, key=key)


def _split_item(item: object, index: int) -> tuple[Any, Any]:
    """(key, example) from a generator item: a ``(key, dict)`` pair or a plain dict."""
    if isinstance(item, tuple):
        if len(item) != 2:
            msg = f"expected a dict or a (key, dict) pair, got a tuple of length {len(item)}"
            raise EncodingError(msg, index=index)
        return item
    return index, item


class Intake:
    """A build's source read as :class:`Chunk` s of at most ``batch_size`` rows; counts the rows it read."""

    def __init__(self, source: Iterable[object], features: Features, *, batch_size: int, batched: bool = False) -> None:
        self.features = features
        self.names = list(features)
        self.batch_size = batch_size
        self.batched = batched
        self.index = 0  # running index of the next row
        self._pulled = itertools.count()  # advanced only after the source gave an item (zip pulls the source first)
        self._items = map(operator.itemgetter(0), zip(source, self._pulled))  # noqa: B905 - the count is endless
        self._extra_rows = 0  # rows of column batches beyond the one item each counts for
        self._getters = [operator.itemgetter(name) for name in self.names]

    @property
    def rows_read(self) -> int:
        """Rows the source gave so far (a column batch counts its rows), whether or not they were written."""
        return int(repr(self._pulled)[len("count(") : -1]) + self._extra_rows

    def chunks(self) -> Iterator[Chunk]:
        """The source's rows, a chunk at a time, in order."""
        end = object()
        while True:
            first = next(self._items, end)
            if first is end:
                return
            if is_column_batch(first, batched=self.batched):  # a batch at a time: never many batches held
                yield from self._one_by_one([first])
                continue
            items = [first, *itertools.islice(self._items, self.batch_size - 1)]
            kinds = set(map(type, items))
            fast = None
            if kinds == {dict} and not self.batched:
                fast = self._dict_rows(items, range(self.index, self.index + len(items)))
            elif kinds == {tuple} and set(map(len, items)) == {2}:
                examples = list(map(operator.itemgetter(1), items))
                if set(map(type, examples)) == {dict}:
                    fast = self._dict_rows(examples, list(map(operator.itemgetter(0), items)))
            if fast is not None:
                self.index += fast.rows
                yield fast
            else:
                yield from self._one_by_one(items)

    def _dict_rows(self, examples: list[dict[str, object]], keys: list[object] | range) -> Chunk | None:
        """Dicts with exactly the features' fields, as columns (None if any has other fields: read one by one)."""
        if set(map(len, examples)) != {len(self.names)}:
            return None
        try:
            columns = [list(map(getter, examples)) for getter in self._getters]
        except KeyError:
            return None
        return Chunk(columns, keys, self.index, len(examples))

    def _one_by_one(self, items: list[object]) -> Iterator[Chunk]:
        """Items of any kind, in order: runs of rows as chunks, and each column batch's parts."""
        field_count = len(self.names)
        fields_of = operator.itemgetter(*self.names) if field_count > 1 else (lambda e: (e[self.names[0]],))
        rows: list[tuple[object, ...]] = []
        keys: list[object] = []

        def run() -> Iterator[Chunk]:
            if keys:
                columns = [list(column) for column in zip(*rows, strict=True)]
                yield Chunk(columns, list(keys), self.index - len(keys), len(keys))
                rows.clear()
                keys.clear()

        for item in items:
            if is_column_batch(item, batched=self.batched):
                yield from run()
                self._extra_rows += max(0, batch_rows(item) - 1)  # the item itself counts one
                for columns, batch_keys, count in batch_columns(
                    item, self.features, batched=self.batched, index=self.index
                ):
                    for start in range(0, count, self.batch_size):
                        stop = min(count, start + self.batch_size)
                        part = [c[start:stop] if isinstance(c, list) else c.slice(start, stop - start) for c in columns]
                        part_keys: Keys = (
                            range(self.index, self.index + stop - start)
                            if batch_keys is None
                            else batch_keys.slice(start, stop - start)
                        )
                        yield Chunk(part, part_keys, self.index, stop - start)
                        self.index += stop - start
                continue
            key, example = _split_item(item, self.index)
            try:
                values: tuple[object, ...] | None = fields_of(example) if len(example) == field_count else None
            except (KeyError, TypeError, AttributeError):
                values = None
            if values is None:
                raise _field_error(example, self.features, self.index, key)
            rows.append(values)
            keys.append(key)
            self.index += 1
        yield from run()
