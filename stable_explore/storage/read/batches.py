"""Per-record-batch digests: recorded when a shard is written, checked the first time a process reads a batch.

Each record batch of a shard has one xxh3 digest per column, of the column's Arrow buffers
as a reader gets them (lengths and bytes, children included), plus the batch's row count. The
reader checks a batch's columns the first time it hands out rows of them, so damaged bytes
are never returned as data, and reading one small column (label counts, a filter) checks only
that column, not the images beside it. Which (batch, column) pairs passed is remembered per
process, by file identity (device, inode, size, mtime), so a shard hard-linked into several
versions is checked once. Bytes no reader uses (padding, an unused part of the footer) are not
covered here; ``verify`` and ``fsck`` re-hash whole files.

The digests themselves are values: :mod:`stable_explore.storage.format.batch_digests` (with examples).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from stable_explore._arrays import distinct
from stable_explore.errors import CacheCorruptionError, CacheNotFoundError
from stable_explore.schema.columns import HASH_COLUMN, KEY_COLUMN
from stable_explore.storage.backends.fsutil import version_gone
from stable_explore.storage.format.batch_digests import (
    BATCH_HASH_ALGORITHM,
    BatchDigests,
    bad_columns,
    column_digest,
    split_matches,
)
from stable_explore.storage.format.hashing import cell_hashes, mixed_row_hashes
from stable_explore.storage.kept import Kept, kept
from stable_explore.storage.read.file_batches import FileBatches

__all__ = [
    "BATCH_HASH_ALGORITHM",
    "BatchDigests",
    "ShardCheck",
    "RowPlan",
    "bad_columns",
    "column_digest",
    "rows_match",
    "split_matches",
]

_CHECKED: Kept[tuple[int, int, int, int, str], np.ndarray] = kept(
    "checked batches", max_entries=1 << 20, weight=lambda found: int(found.nbytes), max_bytes=64 * 1024 * 1024
)
"""File identity (and first digest) -> which (batch, column) of that file passed their check in this process.

A flag a batch and column: 64 MB is about 60 million of them. A shard whose flags went is checked again."""


RowsOf = Callable[[int, int], str]
"""Describes shard rows [start, stop) for an error message (for example as rows of the version)."""


class ShardCheck:
    """Checks the batches of one mapped shard against their digests, each (batch, column) once per process.

    ``rows_of`` turns shard rows into the words an error uses to name them.

    ``schema`` (the shard's, as read) lets takes of a few rows check their binary and text cells
    by row hash (:meth:`ensure_taken`); without it, a list of batches' is read from its first batch.

    Raises
    ------
    CacheCorruptionError
        Already when made, if the shard's batches, row counts or columns differ from what was written
        (the row counts of batches read lazily -- a bucket's, a local :class:`FileBatches` -- are
        checked as each batch is read).
    """

    def __init__(
        self,
        path: str | Path,
        digests: BatchDigests,
        batches: Sequence[pa.RecordBatch],
        rows_of: RowsOf | None = None,
        *,
        identity: str | None = None,
        schema: pa.Schema | None = None,
    ) -> None:
        self.path = path
        self.digests = digests
        self.batches = batches
        self.rows_of = rows_of
        # batches read lazily check each batch's row count as it is read: a local FileBatches' against the counts
        # it was opened with (compared here), a remote shard's as part of each batch's digest
        if isinstance(batches, FileBatches):
            found, names = list(batches.row_counts), batches.schema.names
        elif identity is not None:
            found, names = list(digests.rows), list(digests.columns)
        else:
            found = [b.num_rows for b in batches]
            names = batches[0].schema.names if batches else list(digests.columns)
        if found != list(digests.rows):
            msg = (
                f"shard holds record batches of {found[:8]}{'...' if len(found) > 8 else ''} rows, but "
                f"{list(digests.rows[:8])}{'...' if len(digests.rows) > 8 else ''} were written: the file is damaged"
            )
            raise CacheCorruptionError(path, msg)
        if names != list(digests.columns):
            msg = f"shard holds columns {names}, but {list(digests.columns)} were written: the file is damaged"
            raise CacheCorruptionError(path, msg)
        self.row_offsets = np.cumsum([0, *found], dtype=np.int64)
        self.column_index = {name: i for i, name in enumerate(digests.columns)}
        first = digests.digests[0] if digests.digests else ""
        if identity is not None:  # a remote shard is immutable and named by its content digest
            key: tuple[int, int, int, int, str] = (-1, -1, -1, -1, f"{identity}:{first}")
        else:
            try:
                stat = Path(path).stat()
            except FileNotFoundError as exc:  # deleted since it was opened: gc took the version, or it is damaged
                gone = version_gone(Path(path).parent)
                if gone:
                    raise CacheNotFoundError(gone) from exc
                raise CacheCorruptionError(path, "shard file is missing") from exc
            except OSError as exc:
                raise CacheCorruptionError(path, f"cannot stat the shard: {exc}") from exc
            key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, first)
        checked = _CHECKED.get(key)
        if checked is None:
            checked = _CHECKED.setdefault(key, np.zeros((len(found), len(names)), dtype=bool))
        self._checked = checked
        self._rows_key: tuple[int, int, int, int, str] = (key[0], key[1], key[2], key[3], f"{key[4]}:rows")
        if schema is None and batches and identity is None:  # a mapped shard's batches are at hand
            schema = batches[0].schema
        self._row_plan = _row_plan(schema, digests) if schema is not None else None

    def _columns(self, columns: Sequence[str] | None) -> list[int]:
        if columns is None:
            return list(range(len(self.digests.columns)))
        return [self.column_index[c] for c in columns if c in self.column_index]

    def ensure(self, batches: Iterable[int], columns: Sequence[str] | None = None) -> None:
        """Check these batches' ``columns`` (all by default) not checked before in this process."""
        wanted = self._columns(columns)
        checked = self._checked
        todo: list[tuple[int, int]] = []
        for batch in batches:
            row = checked[batch]
            todo.extend((int(batch), column) for column in wanted if not row[column])
        fetch = getattr(self.batches, "fetch_columns", None)  # a bucket's shard: these columns' bytes, together
        if fetch is not None and len(todo) > 1:
            fetch(todo)
        for batch, column in todo:
            self._check(batch, column)

    def ensure_all(self, columns: Sequence[str] | None = None) -> None:
        """Check every batch of these columns (all by default) that this process has not checked yet."""
        wanted = self._columns(columns)
        if not self._checked[:, wanted].all():
            self.ensure(range(len(self.batches)), columns)

    def ensure_rows(self, start: int, stop: int, columns: Sequence[str] | None = None) -> None:
        """Check the batches holding shard rows [start, stop)."""
        if stop <= start:
            return
        first = int(np.searchsorted(self.row_offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.row_offsets, stop - 1, side="right")) - 1
        self.ensure(range(first, last + 1), columns)

    @property
    def row_plan(self) -> RowPlan | None:
        """How takes of a few rows of this shard are checked by row hash (None: a batch at a time)."""
        return self._row_plan

    def ensure_taken(self, batch_ids: np.ndarray, rows: np.ndarray, columns: Sequence[str] | None = None) -> np.ndarray:
        """Check what a take of shard ``rows`` (in record batches ``batch_ids``) hands out of ``columns``: a first part.

        Binary, text and integer cells (images, labels) are checked row by row, after the take copied
        them (:func:`rows_match`, then :meth:`confirm_taken`): so a take of a few rows hashes those
        rows' images, not their batches'. Here the other columns handed out, and the row hashes the
        copy is checked against, are checked whole per batch against the batch digests, and the
        structure of the binary columns taken is validated (offsets within the data: the copy is safe).

        Returns, per row, whether its copy still needs checking by row hash.
        """
        plan = self._row_plan
        wanted = self._columns(columns)
        by_row = [c for c in wanted if plan is not None and c in plan.row_checked]
        touched = distinct(batch_ids)
        if plan is None or not set(by_row) & set(plan.binary):  # no image taken: small columns, checked whole
            self.ensure(touched.tolist(), columns)
            return np.zeros(rows.size, dtype=bool)
        whole = sorted({*wanted, plan.hash_column} - plan.row_checked)
        self.ensure(touched.tolist(), [self.digests.columns[c] for c in whole])
        settled = np.asarray(self._checked[:, by_row].all(axis=1))
        need: np.ndarray = ~settled[batch_ids] & ~self._row_flags()[rows]
        if getattr(self.batches, "cuts_rows", False):
            return need  # a bucket's rows come by their own bytes, their arrays validated as they are made
        for batch in distinct(batch_ids[need]).tolist():
            record = self.batches[batch]
            for column in plan.binary:  # offsets within the data, buffers whole: the copy reads only what is there
                if self._checked[batch, column]:
                    continue
                try:
                    record.column(column).validate(full=True)
                except (pa.ArrowException, ValueError):
                    self._check(batch, column)  # the authority: names the damage (or the bytes are as written)
        settled = np.asarray(self._checked[:, by_row].all(axis=1))  # a batch the authority checked whole now
        still: np.ndarray = need & ~settled[batch_ids]
        return still

    def confirm_taken(self, batch_ids: np.ndarray, rows: np.ndarray, matched: np.ndarray) -> None:
        """Record the outcome of :func:`rows_match` for taken ``rows``: those that did not match are refused.

        A row whose hash does not match sends its batch to the full check against the batch's
        digests, which names the damage (or finds none: the row hashes of such a file are not made
        of its own cells, and its batch now counts as checked whole).
        """
        plan = self._row_plan
        if plan is None:
            return
        self._row_flags()[rows[matched]] = True
        for batch in distinct(batch_ids[~matched]).tolist():
            for column in sorted(plan.row_checked):
                if not self._checked[batch, column]:
                    self._check(batch, column)

    def _row_flags(self) -> np.ndarray:
        """Which rows of the shard had their cells checked by row hash (kept like the batch flags)."""
        flags = _CHECKED.get(self._rows_key)
        if flags is None:
            flags = _CHECKED.setdefault(self._rows_key, np.zeros(int(self.row_offsets[-1]), dtype=bool))
        return flags

    def ensure_column(self, name: str, chunks: Sequence[pa.Array]) -> None:
        """Check one column read on its own (one chunk per record batch), for batches not checked before."""
        column = self.column_index.get(name)
        if column is None:
            return
        if len(chunks) != len(self.digests.rows):
            msg = f"column {name!r} has {len(chunks)} record batches, but {len(self.digests.rows)} were written"
            raise CacheCorruptionError(self.path, msg)
        for batch, chunk in enumerate(chunks):
            if not self._checked[batch, column]:
                if column_digest(chunk) != self.digests.digest(batch, column):
                    raise CacheCorruptionError(self.path, self._mismatch(batch, column))
                self._checked[batch, column] = True

    def _column(self, batch: int, column: int) -> pa.Array:
        """One column of one batch: a bucket's shard reads only its bytes (unless the batch is read already)."""
        read = getattr(self.batches, "column", None)
        found: pa.Array = read(batch, column) if read is not None else self.batches[batch].column(column)
        return found

    def _check(self, batch: int, column: int) -> None:
        if column_digest(self._column(batch, column)) != self.digests.digest(batch, column):
            # a remote shard's bytes may have come from the local read cache: dropped there, fetched again once
            again = getattr(self.batches, "refetch", None)
            fresh = again(batch) if again is not None else None
            if fresh is None or column_digest(fresh.column(column)) != self.digests.digest(batch, column):
                raise CacheCorruptionError(self.path, self._mismatch(batch, column))
        self._checked[batch, column] = True

    def _mismatch(self, batch: int, column: int) -> str:
        lo, hi = int(self.row_offsets[batch]), int(self.row_offsets[batch + 1])
        rows = f"rows {lo}-{hi - 1} of this shard"
        if self.rows_of is not None:
            rows += f"; {self.rows_of(lo, hi)}"
        return (
            f"record batch {batch}, column {self.digests.columns[column]!r} ({rows}) does not match its "
            f"{BATCH_HASH_ALGORITHM} digest: the shard is damaged and these rows are not returned; rebuild this "
            "version (force=True) or restore it from a copy"
        )


@dataclass(frozen=True)
class RowPlan:
    """How a shard's taken rows are checked: which columns by row hash, which whole per batch.

    ``features`` are the columns a row hash is made of, in order (their names: ``names``);
    ``row_checked`` those of them whose cells a row hash pins down exactly (binary, text, integers,
    booleans, dates and times: not floats, whose hash makes -0.0 and 0.0 one, nor nested values),
    checked row by row; ``binary`` those of them read through offsets.
    """

    features: tuple[int, ...]
    names: tuple[str, ...]
    row_checked: frozenset[int]
    binary: tuple[int, ...]
    hash_column: int


def _row_plan(schema: pa.Schema, digests: BatchDigests) -> RowPlan | None:
    """The plan for a shard written with row hashes and batch digests, or None (checked a batch at a time)."""
    names = list(digests.columns)
    if HASH_COLUMN not in names or schema.names != names:
        return None
    features = tuple(i for i, name in enumerate(names) if name not in (KEY_COLUMN, HASH_COLUMN))
    binary = tuple(i for i in features if _is_binary(schema.field(i).type))
    if not binary:  # nothing large to spare: whole batches are checked
        return None
    exact = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_temporal)
    row_checked = frozenset({*binary, *(i for i in features if any(test(schema.field(i).type) for test in exact))})
    return RowPlan(features, tuple(names[i] for i in features), row_checked, binary, names.index(HASH_COLUMN))


def _is_binary(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
    )


def rows_match(table: pa.Table, plan: RowPlan) -> np.ndarray:
    """Per row of ``table`` (a take's copy, holding the plan's features and row hashes): whether its hash matches.

    Each row's cells are hashed as the writer hashed them, mixed into a row hash and compared with
    the row hash stored beside them. One pass over the copy, whichever batches its rows came from.
    """
    if not table.num_rows:
        return np.zeros(0, dtype=bool)
    table = table.combine_chunks()
    cells = [cell_hashes(table.column(name).chunk(0)) for name in plan.names]
    stored = table.column(HASH_COLUMN).chunk(0)
    found = np.frombuffer(stored.buffers()[1], dtype="<u8")[stored.offset : stored.offset + len(stored)]
    matched: np.ndarray = mixed_row_hashes(cells, table.num_rows) == found
    return matched
