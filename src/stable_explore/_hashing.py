"""Hashes: canonical JSON fingerprints, whole-file digests and per-row hashes.

Row hashes are computed column-wise with numpy so that hashing a batch costs
one vectorised pass per column instead of Python work per row.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

FILE_HASH_ALGORITHM = "xxh3_128"
_READ_CHUNK = 4 * 1024 * 1024


def canonical_json(obj: Any) -> str:
    """Serialise ``obj`` to JSON with sorted keys and no whitespace."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def fingerprint(obj: Any, length: int = 16) -> str:
    """SHA-256 hex prefix of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def new_file_hasher() -> Any:
    """A streaming hasher for whole shard files."""
    return xxhash.xxh3_128()


def format_digest(hasher: Any) -> str:
    """Self-describing digest string, e.g. ``"xxh3_128:1f..."``."""
    return f"{FILE_HASH_ALGORITHM}:{hasher.hexdigest()}"


def hash_file(path: Path) -> str:
    """Digest of a file's bytes, read in chunks, as ``"algorithm:hex"``."""
    hasher = new_file_hasher()
    with Path(path).open("rb") as f:
        while chunk := f.read(_READ_CHUNK):
            hasher.update(chunk)
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
    return x ^ (x >> np.uint64(31))


def _column_hashes(array: pa.Array) -> np.ndarray:
    """One uint64 per element, depending only on the element's value."""
    n = len(array)
    t = array.type
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        filled = array.fill_null(0) if array.null_count else array
        values = filled.to_numpy(zero_copy_only=False)
        if values.dtype.kind == "f":
            # -0.0 == 0.0 and all NaNs are one value for hashing purposes
            values = np.where(values == 0, 0, values).astype(np.float64)
            values = np.where(np.isnan(values), np.nan, values)
            bits = values.view(np.uint64)
        else:
            bits = values.astype(np.int64).view(np.uint64)
        out = _mix(bits + np.uint64(len(str(t))))
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        digest = xxhash.xxh3_64_intdigest
        out = np.fromiter((digest(v) for v in _buffers_of(array)), dtype=np.uint64, count=n)
    else:
        # Nested values (lists, structs): canonical JSON of the Python value.
        digest = xxhash.xxh3_64_intdigest
        out = np.fromiter(
            (digest(canonical_json(_jsonable(v)).encode()) for v in array.to_pylist()), dtype=np.uint64, count=n
        )
    if array.null_count:
        valid = array.is_valid().to_numpy(zero_copy_only=False)
        out = np.where(valid, out, _NULL_HASH)
    return out


def _buffers_of(array: pa.Array) -> Any:
    """Element values as memoryview slices of the data buffer (no copies)."""
    t = array.type
    large = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    _, offsets_buf, data_buf = array.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64 if large else np.int32)
    offsets = offsets[array.offset : array.offset + len(array) + 1].tolist()
    data = memoryview(data_buf) if data_buf is not None else memoryview(b"")
    return (data[offsets[i] : offsets[i + 1]] for i in range(len(array)))


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def row_hashes(columns: list[pa.Array]) -> np.ndarray:
    """Content hash of each row: an order-sensitive mix of its column hashes."""
    n = len(columns[0]) if columns else 0
    acc = np.full(n, np.uint64(0x243F6A8885A308D3), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for position, column in enumerate(columns):
            acc = _mix(acc ^ _column_hashes(column) ^ np.uint64(position + 1))
    return acc


class ContentDigest:
    """Digest of a dataset's rows (keys and row hashes, in order).

    It does not depend on how rows are batched, sharded or compressed, so two
    caches with the same rows in the same order have the same digest.
    """

    def __init__(self) -> None:
        self._hasher = xxhash.xxh3_128()

    def update(self, keys: pa.Array, hashes: np.ndarray) -> None:
        pairs = np.empty((len(hashes), 2), dtype="<u8")
        pairs[:, 0] = _column_hashes(keys)
        pairs[:, 1] = hashes
        self._hasher.update(pairs.tobytes())

    def hexdigest(self) -> str:
        return f"{FILE_HASH_ALGORITHM}:{self._hasher.hexdigest()}"
