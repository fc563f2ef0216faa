"""A shard's record batches as a sequence whose items are made when indexed: the indexing rules, once.

Three kinds of shard hand out batches this way: a local one read from its map (:mod:`.file_batches`),
one in a bucket fetched on demand (:mod:`.remote_shards`), and either of them with a version's cell
patches applied (:mod:`.patching`). Each says how to make batch ``i`` (``_batch``) and how many there are;
slices, negative indexes and the error for one out of range are handled here.

Examples
--------
>>> import pyarrow as pa
>>> class Numbers(BatchSequence):
...     def __len__(self) -> int:
...         return 3
...     def _batch(self, index: int) -> pa.RecordBatch:
...         return pa.record_batch({"x": [index]})
>>> [b.column(0)[0].as_py() for b in Numbers()[-2:]], Numbers()[-1].column(0)[0].as_py()
([1, 2], 2)
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

import pyarrow as pa

from stable_explore.errors import RowIndexError

__all__ = ["BatchSequence"]


class BatchSequence(Sequence[pa.RecordBatch]):
    """Record batches made by :meth:`_batch` when indexed (``where`` names the shard in errors)."""

    where: str | Path = "this shard"

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def _batch(self, index: int) -> pa.RecordBatch:
        """Batch ``index``, within ``0 <= index < len(self)``."""

    @overload
    def __getitem__(self, index: int) -> pa.RecordBatch: ...

    @overload
    def __getitem__(self, index: slice) -> list[pa.RecordBatch]: ...

    def __getitem__(self, index: int | slice) -> pa.RecordBatch | list[pa.RecordBatch]:
        if isinstance(index, slice):
            return [self._batch(i) for i in range(*index.indices(len(self)))]
        return self._batch(self.index_of(index))

    def index_of(self, index: int) -> int:
        """``index`` as a batch number (a negative one counts from the end); out of range, a clear error."""
        count = len(self)
        found = index + count if index < 0 else index
        if not 0 <= found < count:
            msg = f"record batch {index} of {count} in {self.where}"
            raise RowIndexError(msg)
        return found

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return (self._batch(i) for i in range(len(self)))
