"""What ``CachedDataset`` gives the mixins it is made of, declared once for all of them.

``CachedDataset`` is assembled from mixins by job (row views, splits, exports, formats, labels,
``datasets`` habits). Their methods call members the dataset class defines (its views, its row
reading, its column map). Each mixin derives from :class:`DatasetMembers`, which declares those
members for the type checker only; ``CachedDataset`` defines them, and mypy checks that its
definitions match these declarations (an override that differs is a type error).

A member that makes another dataset returns ``Self``: on ``CachedDataset`` that is a ``CachedDataset``,
and this module, the mixins and the helpers that take a dataset (``ds: DatasetMembers``: the text
export, the export target's check, the video probes) need not import the class they are parts of,
which imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    import numpy as np
    import pyarrow as pa
    from typing_extensions import Self

    from stable_explore.dataset._columns import ColumnMap
    from stable_explore.dataset._selection import Rows
    from stable_explore.schema import Features
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta
    from stable_explore.storage.read.protocol import ShardReader

__all__ = ["DatasetMembers"]


class DatasetMembers:
    """The base of ``CachedDataset``'s mixins: the dataset's members they use, for the type checker.

    At run time the class is empty; ``CachedDataset`` provides every member below.
    """

    if TYPE_CHECKING:
        # the state CachedDataset.__init__ sets (a view's copy shares it but its rows, columns and format)
        _meta: ShardedCacheMeta
        _backend: ShardReader
        _features: Features
        _features_given: bool
        _name: str | None
        _version: str
        _home: Path | str | None
        _rows: Rows | None
        _columns: ColumnMap | None
        _transform: Callable[[dict[str, list[Any]]], Any] | None
        _format: str

        @property
        def features(self) -> Features: ...

        @property
        def cache_dir(self) -> Path: ...

        @property
        def is_view(self) -> bool: ...

        @property
        def latest_version(self) -> str | None: ...

        @property
        def home(self) -> Path | str | None: ...

        @property
        def name(self) -> str | None: ...

        @property
        def version(self) -> str: ...

        @property
        def ref(self) -> str: ...

        @property
        def metadata(self) -> dict[str, Any]: ...

        @property
        def backend(self) -> ShardReader: ...

        @property
        def cache_meta(self) -> ShardedCacheMeta: ...

        @property
        def view_rows(self) -> range | np.ndarray | None: ...

        def __len__(self) -> int: ...

        def __iter__(self) -> Iterator[Any]: ...

        def iter(self, batch_size: int = 1000) -> Iterator[Any]: ...

        def with_format(self, format: str) -> Self: ...

        def base_rows(self, rows: Sequence[int] | np.ndarray | None = None) -> np.ndarray: ...

        def _all_rows(self) -> Rows: ...

        def _view(self, rows: Rows | None, *, format: str | None = None) -> Self: ...

        def _select(self, selection: object) -> Rows: ...

        def _rows_at(self, rows: Rows) -> list[Any]: ...

        def _table_of(self, rows: Rows, columns: Sequence[str] | None = None) -> pa.Table: ...

        def _column_arrow(self, column: str, rows: np.ndarray | None = None) -> pa.Array: ...

        def _stored_column_type(self, column: str) -> pa.DataType: ...

        def _column_map(self) -> ColumnMap: ...

        def _with_columns(self, columns: ColumnMap) -> Self: ...

        def _with_transform(self, transform: Callable[[dict[str, list[Any]]], Any] | None) -> Self: ...

        def _feature_columns(self) -> list[str]: ...

        def _check_stored_columns(self, action: str) -> None: ...
