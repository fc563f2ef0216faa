"""A chunk of rows (Python columns or Arrow columns) -> one Arrow record batch, with key and row-hash columns.

Examples
--------
>>> from stable_explore import Features, Value
>>> from stable_explore.storage.write.intake import Chunk
>>> encoder = BatchEncoder(Features(x=Value("int64")))
>>> batch = encoder.encode(Chunk([[1, 2]], range(0, 2), 0, 2))
>>> batch.schema.names, encoder.key_type
(['x', '__key__', '__row_hash__'], 'int64')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore._canonical import unencodable_text
from stable_explore.errors import EncodingError
from stable_explore.storage.format.cache_meta import KEY_TYPES
from stable_explore.storage.format.hashing import ContentDigest, is_text, row_hashes, text_hashes

if TYPE_CHECKING:
    from stable_explore.schema import Features
    from stable_explore.storage.write.intake import Chunk, Keys

__all__ = ["BatchEncoder", "key_at", "key_type_of"]


def key_type_of(key: object, index: int) -> str:
    """``"int64"`` or ``"string"``: the key type a key asks for (an EncodingError naming the row for others)."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return "int64"
    if isinstance(key, str):
        return "string"
    msg = f"keys must be int or str, got {type(key).__name__} {key!r}"
    raise EncodingError(msg, index=index)


def key_at(keys: Keys, position: int) -> Any:
    """The key of a chunk's row ``position`` (as Python), for an error message."""
    if isinstance(keys, pa.Array):
        return keys[position].as_py()
    return keys[position]


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _key_problem(key: Any) -> str | None:
    """Why one key cannot be stored (outside int64, or text UTF-8 cannot encode), or None."""
    if isinstance(key, str):
        problem = unencodable_text(key)
        return f"the key cannot be stored as UTF-8 ({problem}); clean the key" if problem else None
    if not _INT64_MIN <= int(key) <= _INT64_MAX:
        return f"int keys must fit in int64 ([-2**63, 2**63 - 1]), got {int(key)}; use smaller ints or string keys"
    return None


def _arrow_key_type(keys: pa.Array) -> str | None:
    t = keys.type
    if pa.types.is_integer(t):
        return "int64"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    return None


class BatchEncoder:
    """Encodes chunks of rows into record batches of one schema, hashing each row and the rows' keys on the way."""

    def __init__(self, features: Features) -> None:
        self.features = features
        self.names = list(features)
        self.key_type: str | None = None
        self.schema: pa.Schema | None = None
        self.content = ContentDigest()
        self.key_texts: np.ndarray | None = None
        """The :func:`text_hashes` of the last batch's string keys (None for int keys): the key check's too."""

    def encode(self, chunk: Chunk) -> pa.RecordBatch:
        """The record batch of ``chunk``: its encoded columns, then its keys and row hashes."""
        arrays = []
        hashable: list[list[object] | None] = []  # per column, the values whose bytes were stored as they are
        for name, values in zip(self.names, chunk.columns, strict=True):
            feature = self.features[name]
            try:
                if isinstance(values, list):
                    array, as_given = feature.encode_batch(values)
                else:
                    array, as_given = feature.encode_arrow(values), False
            except EncodingError as exc:
                position = exc.index if exc.index is not None else 0
                raise EncodingError(
                    exc.reason, field=name, index=chunk.first + position, key=key_at(chunk.keys, position)
                ) from exc.__cause__
            arrays.append(array)
            hashable.append(values if as_given else None)
        hashes = row_hashes(arrays, hashable)
        keys = self.key_array(chunk.keys, chunk.first)
        arrays.append(keys)
        self.key_texts = None
        if is_text(keys):  # hashed once, for the content digest and the duplicate-key check
            self.key_texts = text_hashes(keys, chunk.keys if isinstance(chunk.keys, list) else None)
        self.content.update(keys, hashes, self.key_texts)
        arrays.append(pa.array(hashes, type=pa.uint64()))
        if self.schema is None:
            key_type = KEY_TYPES[self.key_type or "int64"]
            self.schema = self.features.to_arrow_schema(with_row_columns=True, key_type=key_type)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def key_array(self, keys: Keys, first_index: int) -> pa.Array:
        """The keys as the key column (int64 or string), checked to be of one type across the build."""
        if isinstance(keys, range):
            self._agree("int64", keys[0] if len(keys) else 0, first_index)
            return pa.array(np.arange(keys.start, keys.stop, dtype=np.int64))
        if isinstance(keys, pa.Array):
            return self._arrow_keys(keys, first_index)
        if self.key_type is None:
            self.key_type = key_type_of(keys[0], first_index)
        try:
            return pa.array(keys, type=KEY_TYPES[self.key_type])
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            for position, key in enumerate(keys):
                self._agree(key_type_of(key, first_index + position), key, first_index + position)
                problem = _key_problem(key)
                if problem:
                    raise EncodingError(problem, index=first_index + position, key=key) from exc
            msg = f"keys of rows {first_index}-{first_index + len(keys) - 1} cannot be stored: {exc}"
            raise EncodingError(msg, index=first_index) from exc

    def _agree(self, kind: str, key: object, index: int) -> None:
        if self.key_type is None:
            self.key_type = kind
        elif kind != self.key_type:
            msg = (
                f"key {key!r} is a {type(key).__name__}, but earlier keys were "
                f"{'ints' if self.key_type == 'int64' else 'strings'}; use one key type for all rows"
            )
            raise EncodingError(msg, index=index, key=key)

    def _arrow_keys(self, keys: pa.Array, first_index: int) -> pa.Array:
        kind = _arrow_key_type(keys)
        if kind is None:
            msg = f"the key column of a column batch must hold ints or strings, got Arrow {keys.type}"
            raise EncodingError(msg, index=first_index)
        if keys.null_count:
            position = int(np.flatnonzero(~keys.is_valid().to_numpy(zero_copy_only=False))[0])
            msg = "a key is missing (null); every row needs a key"
            raise EncodingError(msg, index=first_index + position)
        self._agree(kind, keys[0].as_py() if len(keys) else None, first_index)
        try:
            stored = keys.cast(KEY_TYPES[kind])
            if kind == "string":
                stored.validate(full=True)
        except (pa.ArrowException, ValueError, OverflowError) as exc:
            for position, key in enumerate(keys.to_pylist()):
                problem = _key_problem(key)
                if problem:
                    raise EncodingError(problem, index=first_index + position, key=key) from exc
            msg = f"keys of rows {first_index}-{first_index + len(keys) - 1} cannot be stored: {exc}"
            raise EncodingError(msg, index=first_index) from exc
        return stored
