"""Hashes: whole-file digests, per-row hashes and the content digest of a version's rows.

Row hashes are computed column-wise with numpy so that hashing a batch costs
one vectorised pass per column instead of Python work per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from stable_explore._canonical import canonical_json, json_value

FILE_HASH_ALGORITHM = "xxh3_128"
_READ_CHUNK = 4 * 1024 * 1024


def new_file_hasher() -> Any:
    """A streaming hasher for whole shard files."""
    return xxhash.xxh3_128()


def format_digest(hasher: Any) -> str:
    """Self-describing digest string, e.g. ``"xxh3_128:1f..."``."""
    return f"{FILE_HASH_ALGORITHM}:{hasher.hexdigest()}"


def hash_file(path: Path) -> str:
    """Digest of a file's bytes, read in chunks into one reused buffer, as ``"algorithm:hex"``.

    Memory stays at one chunk (a memory map would count the whole file in RSS).
    """
    hasher = new_file_hasher()
    buffer = bytearray(_READ_CHUNK)
    view = memoryview(buffer)
    with Path(path).open("rb", buffering=0) as f:
        while count := f.readinto(buffer):
            hasher.update(view[:count])
    return format_digest(hasher)


# --- row hashes ---------------------------------------------------------------

_NULL_HASH = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: a bijective avalanche over uint64 (wraps by design)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _MUL1
    x = x ^ (x >> np.uint64(27))
    x = x * _MUL2
    mixed: np.ndarray = x ^ (x >> np.uint64(31))
    return mixed


def _column_hashes(array: pa.Array, values: list[object] | None = None) -> np.ndarray:
    """One uint64 per element, depending only on the element's value.

    ``values``, when given, are the Python values the column was built from;
    for text and binary columns hashing them directly is several times faster
    than walking the Arrow buffers, and gives the same digests.
    """
    n = len(array)
    t = array.type
    if pa.types.is_temporal(t):
        # Dates, times, timestamps and durations hash as the integer Arrow stores (ticks since the epoch,
        # in UTC for a timestamp with a zone), so no process's time zone or locale can change them.
        array = array.view(pa.int32() if t.bit_width == 32 else pa.int64())
    if _is_primitive(t):
        out = _number_hashes(_primitive_values(array), t)  # a null's slot holds any value: its hash is replaced below
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        quick = _hash_python_bytes(values) if values is not None and not array.null_count else None
        out = quick if quick is not None else _hash_buffers(array)
    else:
        # Nested values (lists, structs): canonical JSON of the Python value.
        digest = xxhash.xxh3_64_intdigest
        out = np.fromiter(
            (digest(canonical_json(json_value(v)).encode()) for v in array.to_pylist()), dtype=np.uint64, count=n
        )
    if array.null_count:
        out = np.where(_valid_mask(array), out, _NULL_HASH)
    return out


def _is_primitive(t: pa.DataType) -> bool:
    return bool(pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t))


def _number_hashes(numbers: np.ndarray, t: pa.DataType) -> np.ndarray:
    """The cell hashes of a primitive column of type ``t`` holding ``numbers``."""
    if numbers.dtype.kind == "f":
        # -0.0 == 0.0 and all NaNs are one value for hashing purposes
        numbers = np.where(numbers == 0, 0, numbers).astype(np.float64)
        numbers = np.where(np.isnan(numbers), np.nan, numbers)
        bits = numbers.view(np.uint64)
    else:
        bits = numbers.astype(np.int64).view(np.uint64)
    return _mix(bits + np.uint64(len(str(t))))


def _bits(buffer: pa.Buffer, offset: int, count: int) -> np.ndarray:
    """``count`` bits of an Arrow bitmap from bit ``offset``, as booleans."""
    unpacked = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")
    bits: np.ndarray = unpacked[offset : offset + count].astype(bool)
    return bits


def _valid_mask(array: pa.Array) -> np.ndarray:
    """Which cells are not null, from the validity bitmap as stored.

    Read from the buffers, not through ``to_numpy``: pyarrow imports pandas on its first conversion
    to numpy, which a first read of a few rows would pay (about 0.3 s).
    """
    validity = array.buffers()[0]
    if validity is None:
        return np.ones(len(array), dtype=bool)
    return _bits(validity, array.offset, len(array))


def _primitive_values(array: pa.Array) -> np.ndarray:
    """The values of a boolean, integer or floating array (nulls' slots as stored), read from its buffers."""
    t = array.type
    data = array.buffers()[1]
    if data is None:  # no values stored (an empty or all-null array)
        return np.zeros(len(array), dtype=bool if pa.types.is_boolean(t) else np.int64)
    if pa.types.is_boolean(t):
        return _bits(data, array.offset, len(array))
    kind = "f" if pa.types.is_floating(t) else ("i" if pa.types.is_signed_integer(t) else "u")
    values: np.ndarray = np.frombuffer(data, dtype=np.dtype(f"<{kind}{t.bit_width // 8}"))
    return values[array.offset : array.offset + len(array)]


def _hash_python_bytes(values: list[Any]) -> np.ndarray | None:
    """Digests of a list of bytes-like values or str (as UTF-8), or None if it holds anything else."""
    digest = xxhash.xxh3_64_intdigest
    count = len(values)
    # map() keeps the loop in C; a value of the wrong kind raises TypeError at once, so no
    # separate pass over the types is needed. The likelier kind (from the first value) goes first.
    first_str = bool(values) and isinstance(values[0], str)
    attempts = (_digest_strs, _digest_bytes) if first_str else (_digest_bytes, _digest_strs)
    for attempt in attempts:
        try:
            return attempt(digest, values, count)
        except (TypeError, ValueError, BufferError):
            continue
    if all(isinstance(v, (str, bytes)) for v in values):
        return np.array([digest(v) if v.__class__ is bytes else digest(v.encode()) for v in values], dtype=np.uint64)
    return None


def _digest_bytes(digest: Callable[[Any], int], values: list[object], count: int) -> np.ndarray:
    return np.fromiter(map(digest, values), dtype=np.uint64, count=count)


def _digest_strs(digest: Callable[[Any], int], values: list[Any], count: int) -> np.ndarray:
    return np.fromiter(map(digest, map(str.encode, values)), dtype=np.uint64, count=count)


_BYTES_SLICE = 4096  # cells made into bytes objects at a time (a whole 10M-row column never is)


def _hash_buffers(array: pa.Array) -> np.ndarray:
    """Digests of each element of a binary or string array: xxh3-64 of its bytes as stored (a null's: of none).

    Arrow makes the cells bytes objects (a copy) a slice at a time, and those are hashed: faster than
    a memoryview slice of the buffer per cell, whose every slice goes through the buffer protocol
    (0.25-0.31 against 0.40-0.45 us for a 1.9 KB image), and than Python strings made and encoded
    again (0.09 against 0.15-0.19 us for a 13-character key).
    """
    large = pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type)
    cells = array.view(pa.large_binary() if large else pa.binary())  # text as its UTF-8 bytes (no copy)
    if cells.null_count:
        cells = cells.fill_null(b"")  # callers put the null hash in these places
    digest = xxhash.xxh3_64_intdigest
    out = np.empty(len(array), dtype=np.uint64)
    for start in range(0, len(array), _BYTES_SLICE):
        part = cells.slice(start, _BYTES_SLICE).to_pylist()
        out[start : start + len(part)] = np.fromiter(map(digest, part), dtype=np.uint64, count=len(part))
    return out


def cell_hashes(array: pa.Array) -> np.ndarray:
    """One uint64 per cell of ``array``, of any Arrow type, the one its row hash is made of.

    Equal cells give equal hashes (all NaNs are one value, nulls one more), so two columns of the
    same type differ at a row exactly where these hashes do (up to a 64-bit collision).

    Examples
    --------
    >>> left = cell_hashes(pa.array([[1, 2], None, [3]]))
    >>> (left == cell_hashes(pa.array([[1, 2], None, [4]]))).tolist()
    [True, True, False]
    """
    return _column_hashes(array)


def row_hashes(columns: list[pa.Array], values: list[list[object] | None] | None = None) -> np.ndarray:
    """Content hash of each row: an order-sensitive mix of its column hashes.

    ``values`` optionally gives, per column, the Python values it was built from (a speed-up only).
    """
    n = len(columns[0]) if columns else 0
    sources = values if values is not None else [None] * len(columns)
    return mixed_row_hashes((_column_hashes(c, p) for c, p in zip(columns, sources, strict=True)), n)


def mixed_row_hashes(cells: Iterable[np.ndarray], n: int) -> np.ndarray:
    """Row hashes of ``n`` rows from their cells' hashes (:func:`cell_hashes`), column by column in order.

    Examples
    --------
    >>> columns = [pa.array([1, 2]), pa.array(["a", None])]
    >>> (mixed_row_hashes([cell_hashes(c) for c in columns], 2) == row_hashes(columns)).all()
    np.True_
    """
    acc = np.full(n, np.uint64(0x243F6A8885A308D3), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for position, hashes in enumerate(cells):
            acc = _mix(acc ^ hashes ^ np.uint64(position + 1))
    return acc


def continue_row_hashes(hashes: np.ndarray, columns: list[pa.Array], positions: list[int]) -> np.ndarray:
    """Row hashes carried on over more columns, at their ``positions`` (0-based) among the row's features.

    A row hash is a running mix over the columns in feature order, so the hash of a row with
    columns appended is its hash so far carried on over them: ``row_hashes(a + b)`` equals
    ``continue_row_hashes(row_hashes(a), b, [len(a), ...])``. Column groups use this to give the
    rows of a version that adds columns the hashes a build of the same rows would give.

    Examples
    --------
    >>> a, b = pa.array([1, 2]), pa.array(["x", "y"])
    >>> (continue_row_hashes(row_hashes([a]), [b], [1]) == row_hashes([a, b])).all()
    np.True_
    """
    acc = np.asarray(hashes, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column, position in zip(columns, positions, strict=True):
            acc = _mix(acc ^ _column_hashes(column) ^ np.uint64(position + 1))
    return acc


class LegacyContentDigest:
    """Digest of a dataset's rows (keys and row hashes, in order), as format revisions 1 and 2 define it.

    Kept to check caches written before format revision 3 (their ids are never recomputed).

    It does not depend on how rows are batched, sharded or compressed: each
    stream fed here (key bytes, key lengths, row hashes) is the concatenation
    of the batches' buffers, so two caches with the same rows in the same
    order have the same digest.
    """

    def __init__(self) -> None:
        self._keys = xxhash.xxh3_128()
        self._key_lengths = xxhash.xxh3_128()
        self._rows = xxhash.xxh3_128()
        self._kind = ""

    def update(self, keys: pa.Array, hashes: np.ndarray) -> None:
        """Add the next rows: their keys (int64 or string) and 64-bit row hashes, in order."""
        self._kind = _feed_keys(keys, self._keys, self._key_lengths)
        self._rows.update(hashes.astype("<u8").tobytes())

    def hexdigest(self) -> str:
        """The digest of every row added so far, as ``"xxh3_128:<hex>"``."""
        combined = xxhash.xxh3_128()
        for part in (self._kind, self._keys.hexdigest(), self._key_lengths.hexdigest(), self._rows.hexdigest()):
            combined.update(part.encode())
        return f"{FILE_HASH_ALGORITHM}:{combined.hexdigest()}"


def _feed_keys(keys: pa.Array, key_bytes: Any, key_lengths: Any) -> str:
    """Feed keys to two hashers: string keys' UTF-8 bytes and lengths, or int64 keys' little-endian bytes.

    Returns the key kind ("string" or "int64"). Both content digests hash keys this way.
    """
    t = keys.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        _, offsets_buf, data_buf = keys.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64 if pa.types.is_large_string(t) else np.int32)
        offsets = offsets[keys.offset : keys.offset + len(keys) + 1].astype(np.int64)
        key_lengths.update(np.diff(offsets).astype("<i8").tobytes())
        if data_buf is not None:
            key_bytes.update(memoryview(data_buf)[int(offsets[0]) : int(offsets[-1])])
        return "string"
    key_bytes.update(keys.to_numpy(zero_copy_only=False).astype("<i8").tobytes())
    return "int64"


# --- content digest over row runs (format revision 3) -----------------------------------------

CONTENT_DIGEST_ALGORITHM = "xxh3_128-runs"
RUN_BOUNDARY_BITS = 12
"""A row ends a run when 12 bits of its leaf are zero: runs of 4,096 rows on average."""
_RUN_MASK = np.uint64((1 << RUN_BOUNDARY_BITS) - 1)
_LEAF_SALT = np.uint64(0x5851F42D4C957F2D)


def text_hashes(texts: pa.Array, values: list[object] | None = None) -> np.ndarray:
    """xxh3-64 of each string's UTF-8 bytes (a string key's hash, in the content digest and the duplicate-key check).

    ``values``, when given, are the Python strings ``texts`` was built from (a speed-up only: the
    column is then not converted back to Python).

    Examples
    --------
    >>> import xxhash
    >>> int(text_hashes(pa.array(["a"]))[0]) == xxhash.xxh3_64_intdigest(b"a")
    True
    """
    quick = _hash_python_bytes(values) if values is not None and not texts.null_count else None
    return quick if quick is not None else _hash_buffers(texts)


def is_text(keys: pa.Array) -> bool:
    """Whether a key column holds strings (else int64)."""
    return bool(pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type))


def _key_hashes(keys: pa.Array) -> np.ndarray:
    """One uint64 per key: xxh3-64 of a string key's UTF-8 bytes, or the SplitMix of an int64 key."""
    t = keys.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return text_hashes(keys)
    with np.errstate(over="ignore"):
        return _mix(keys.to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64))


def run_ends(keys: pa.Array, hashes: np.ndarray, texts: np.ndarray | None = None) -> np.ndarray:
    """Positions (in this batch) of the rows that end a run: a property of each row alone.

    Because a boundary depends only on the row's own key and row hash, dropping or
    changing a row can only move the boundaries of the run that held it. ``texts``: the
    :func:`text_hashes` of string keys, when the caller has them already.
    """
    key_part = texts if texts is not None and is_text(keys) else _key_hashes(keys)
    with np.errstate(over="ignore"):
        leaf = _mix(key_part ^ _mix(np.asarray(hashes, dtype=np.uint64) ^ _LEAF_SALT))
    ends: np.ndarray = np.flatnonzero(((leaf >> np.uint64(40)) & _RUN_MASK) == 0)
    return ends


@dataclass(frozen=True)
class KnownEnds:
    """Which rows end a run, where the caller knows it already: rows an edit left as they were.

    Positions count from the first row fed to a :class:`ContentDigest`; both arrays are sorted.
    ``ends`` are rows known to end a run; ``unknown`` rows (changed ones) are looked at from
    their key and row hash, as :func:`run_ends` does; every other row is known not to end one.
    A save then hashes the keys of the rows it changed, not of every row in the runs those rows
    sit in (about 4,096 rows per edit: at 100k rows, a third of a save of 10 relabels).

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> keys, hashes = pa.array(range(20_000)), np.arange(20_000, dtype=np.uint64)
    >>> whole = ContentDigest()
    >>> whole.update(keys, hashes)
    >>> ends = np.cumsum([rows for rows, _ in whole.runs]) - 1
    >>> told = ContentDigest(KnownEnds(ends[:-2], ends[-2:]))  # rows whose ending a run is looked at
    >>> told.update(keys, hashes)
    >>> told.runs == whole.runs
    True
    """

    ends: np.ndarray
    unknown: np.ndarray

    def window(self, start: int, stop: int) -> KnownEnds:
        """The rows ``start``..``stop`` only, counted from ``start`` (the rows one digest is fed).

        Examples
        --------
        >>> KnownEnds(np.array([3, 9, 14]), np.array([5, 12])).window(4, 13)
        KnownEnds(ends=array([5]), unknown=array([1, 8]))
        """
        lo, hi = np.searchsorted(self.ends, [start, stop])
        first, last = np.searchsorted(self.unknown, [start, stop])
        return KnownEnds(self.ends[lo:hi] - start, self.unknown[first:last] - start)

    def within(self, offset: int, keys: pa.Array, hashes: np.ndarray) -> np.ndarray:
        """The positions (in this batch) of the rows that end a run, for a batch fed at row ``offset``."""
        stop = offset + len(keys)
        ends = self.ends[np.searchsorted(self.ends, offset) : np.searchsorted(self.ends, stop)] - offset
        look = self.unknown[np.searchsorted(self.unknown, offset) : np.searchsorted(self.unknown, stop)] - offset
        if look.size:
            found = look[run_ends(keys.take(pa.array(look)), np.asarray(hashes)[look])]
            ends = np.union1d(ends, found)
        return ends


def digest_of_runs(key_type: str, runs: list[tuple[int, str]]) -> str:
    """The content digest of a version whose rows form ``runs`` ((row count, run digest) in order)."""
    combined = xxhash.xxh3_128()
    combined.update((key_type if runs else "").encode())
    for rows, run in runs:
        combined.update(f"{rows}:{run};".encode())
    return f"{CONTENT_DIGEST_ALGORITHM}:{combined.hexdigest()}"


class ContentDigest:
    """Digest of a dataset's rows (keys and row hashes, in order) that composes over runs of rows.

    Rows are cut into runs at content-defined boundaries (:func:`run_ends`); each run gets
    its own xxh3-128 digest of its keys and row hashes, and the content digest is a digest
    of the runs' row counts and digests. Feed rows in order with :meth:`update`, in batches
    of any size: the result depends only on the rows, not on how they were batched, sharded
    or split into tasks. An edit rehashes only the runs it touched (see :attr:`runs`), and with
    ``known`` (:class:`KnownEnds`) looks for run boundaries only among the rows it changed.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> whole, parts = ContentDigest(), ContentDigest()
    >>> keys, hashes = pa.array(range(100_000)), np.arange(100_000, dtype=np.uint64)
    >>> whole.update(keys, hashes)
    >>> for start in range(0, 100_000, 777):
    ...     parts.update(keys.slice(start, 777), hashes[start : start + 777])
    >>> whole.hexdigest() == parts.hexdigest(), sum(rows for rows, _ in whole.runs) == 100_000
    (True, True)
    """

    def __init__(self, known: KnownEnds | None = None) -> None:
        self._kind = ""
        self._runs: list[tuple[int, str]] = []
        self._known = known
        self._fed = 0
        self._open_run()

    def _open_run(self) -> None:
        self._keys = xxhash.xxh3_128()
        self._key_lengths = xxhash.xxh3_128()
        self._rows = xxhash.xxh3_128()
        self._count = 0

    def _run_digest(self) -> str:
        combined = xxhash.xxh3_128()
        for part in (self._keys.hexdigest(), self._key_lengths.hexdigest(), self._rows.hexdigest()):
            combined.update(part.encode())
        return combined.hexdigest()

    def _feed(self, keys: pa.Array, hashes: np.ndarray) -> None:
        _feed_keys(keys, self._keys, self._key_lengths)
        self._rows.update(np.asarray(hashes).astype("<u8").tobytes())
        self._count += len(keys)

    def update(self, keys: pa.Array, hashes: np.ndarray, texts: np.ndarray | None = None) -> None:
        """Add the next rows: their keys (int64 or string) and 64-bit row hashes, in order.

        ``texts``: the :func:`text_hashes` of string keys, when the caller has them already.
        """
        if len(keys) == 0:
            return
        self._kind = "string" if is_text(keys) else "int64"
        start = 0
        ends = run_ends(keys, hashes, texts) if self._known is None else self._known.within(self._fed, keys, hashes)
        self._fed += len(keys)
        for end in ends.tolist():
            self._feed(keys.slice(start, end + 1 - start), hashes[start : end + 1])
            self._runs.append((self._count, self._run_digest()))
            self._open_run()
            start = end + 1
        if start < len(keys):
            self._feed(keys.slice(start), hashes[start:])

    @property
    def runs(self) -> list[tuple[int, str]]:
        """(row count, digest) of each run so far; the last one may still grow."""
        return [*self._runs, (self._count, self._run_digest())] if self._count else list(self._runs)

    def hexdigest(self) -> str:
        """The digest of every row added so far, as ``"xxh3_128-runs:<hex>"``."""
        return digest_of_runs(self._kind, self.runs)
