"""Per-record-batch digests as values: what a shard's record batches were when written, and the check of a batch.

Each record batch of a shard has one xxh3 digest per column, of the column's Arrow buffers as a reader gets
them (lengths and bytes, children included), plus the batch's row count. :class:`BatchDigests` is one shard's
record of them, parsed from and written to JSON here; when a reader checks them against the bytes it read is
``storage.read.batches``' business.

Examples
--------
>>> import pyarrow as pa
>>> batch = pa.record_batch({"x": pa.array([1, 2, 3]), "s": pa.array(["a", None, "c"])})
>>> digests = BatchDigests.of_batches(["x", "s"], [batch])
>>> digests.rows, len(digests.digests[0])
((3,), 32)
>>> BatchDigests.from_json(digests.to_json(), "m.json", 0) == digests
True
>>> bad_columns(digests, [batch])
[]
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from stable_explore.errors import CacheCorruptionError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["BATCH_HASH_ALGORITHM", "BatchDigests", "bad_columns", "column_digest", "split_matches"]

BATCH_HASH_ALGORITHM = "xxh3_64"
_HEX = 16  # hex digits of one digest
_NO_BUFFER = b"\xff" * 8


def column_digest(array: pa.Array) -> str:
    """The digest of one column of one batch: its length, offset and every buffer (children included)."""
    hasher = xxhash.xxh3_64()
    hasher.update(struct.pack("<qq", len(array), array.offset))
    for buffer in array.buffers():
        if buffer is None:
            hasher.update(_NO_BUFFER)
        else:
            hasher.update(struct.pack("<q", buffer.size))
            hasher.update(buffer)
    return str(hasher.hexdigest())


def _batch_digest(batch: pa.RecordBatch) -> str:
    return "".join(column_digest(column) for column in batch.columns)


@dataclass(frozen=True)
class BatchDigests:
    """One shard's record batches: the columns, each batch's row count, and per batch its columns' digests.

    ``digests[b]`` is the 16-hex-digit digests of batch ``b``'s columns, in ``columns`` order, joined.
    """

    columns: tuple[str, ...]
    rows: tuple[int, ...]
    digests: tuple[str, ...]

    @classmethod
    def of_batches(cls, columns: Sequence[str], batches: Iterable[pa.RecordBatch]) -> BatchDigests:
        """Digest batches as a reader gets them (see :func:`column_digest`), one at a time."""
        rows: list[int] = []
        digests: list[str] = []
        for batch in batches:
            rows.append(batch.num_rows)
            digests.append(_batch_digest(batch))
        return cls(tuple(columns), tuple(rows), tuple(digests))

    def digest(self, batch: int, column: int) -> str:
        """The hex digest of one column of one record batch."""
        return self.digests[batch][column * _HEX : (column + 1) * _HEX]

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored in ``_metadata.json``."""
        return {"algorithm": BATCH_HASH_ALGORITHM, "columns": list(self.columns), "rows": list(self.rows),
                "digests": list(self.digests)}  # fmt: skip

    @classmethod
    def from_json(cls, raw: object, path: str | Path, shard: int) -> BatchDigests:
        """Check and type one shard's entry of ``batch_digests``; ``path`` names ``_metadata.json`` in errors."""
        where = f"'batch_digests' of shard {shard}"
        if not isinstance(raw, Mapping) or raw.get("algorithm") != BATCH_HASH_ALGORITHM:
            msg = f"{where} must be an object with algorithm {BATCH_HASH_ALGORITHM!r}, found {raw!r:.100}"
            raise CacheCorruptionError(path, msg)
        columns, rows, digests = raw.get("columns"), raw.get("rows"), raw.get("digests")
        ok = (
            isinstance(columns, list)
            and all(isinstance(c, str) for c in columns)
            and isinstance(rows, list)
            and isinstance(digests, list)
            and len(rows) == len(digests)
            and all(type(r) is int and r >= 0 for r in rows)
            and all(isinstance(d, str) and len(d) == _HEX * len(columns) for d in digests)
        )
        if not ok:
            msg = f"{where} must list columns, and per batch a row count and one digest per column, found {raw!r:.200}"
            raise CacheCorruptionError(path, msg)
        assert isinstance(columns, list)
        assert isinstance(rows, list)
        assert isinstance(digests, list)
        return cls(tuple(columns), tuple(rows), tuple(digests))


def split_matches(digests: BatchDigests, batches: Sequence[pa.RecordBatch]) -> bool:
    """Whether ``digests`` describe these batches: as many, with their row counts and column names."""
    if len(batches) != len(digests.rows):
        return False
    columns = list(digests.columns)
    return all(b.num_rows == rows and b.schema.names == columns for b, rows in zip(batches, digests.rows, strict=True))


def bad_columns(digests: BatchDigests, batches: Sequence[pa.RecordBatch]) -> list[tuple[int, str]]:
    """Every (batch, column name) whose digest does not match (all of them when the batches do not line up)."""
    if len(batches) != len(digests.rows):
        return [(b, c) for b in range(len(digests.rows)) for c in digests.columns]
    bad: list[tuple[int, str]] = []
    for index, batch in enumerate(batches):
        if batch.num_rows != digests.rows[index] or batch.schema.names != list(digests.columns):
            bad.extend((index, c) for c in digests.columns)
            continue
        for position, name in enumerate(digests.columns):
            if column_digest(batch.column(position)) != digests.digest(index, position):
                bad.append((index, name))
    return bad
