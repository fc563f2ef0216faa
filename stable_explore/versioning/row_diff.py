"""The rows two versions differ in: matched by stored key, compared by stored content hash.

Two versions where one was saved from the other share most of their pieces (same
file, same rows); :func:`row_diff` reads only the rows outside them, so it costs what
changed. Only the changed rows are read to say which fields changed, by the hashes of their
cells (any Arrow type: lists, lists of lists, fixed-size lists); images are compared
as bytes, never decoded.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from typing_extensions import TypedDict

from stable_explore._canonical import json_value
from stable_explore.schema import KEY_COLUMN, class_name
from stable_explore.storage.format.hashing import cell_hashes
from stable_explore.versioning._shared import unshared_rows

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["RowDiff", "RowDiffDict", "RowKey", "jsonable", "row_diff"]

RowKey: TypeAlias = int | str  # a row's stored key (a stable-datasets v1 cache's: its row number)


class RowDiffDict(TypedDict):
    """:meth:`RowDiff.to_dict`: keys as JSON keys, each changed row's ``{field: [old, new]}`` JSON-ready."""

    added: list[RowKey]
    removed: list[RowKey]
    changed: dict[str, dict[str, list[object]]]
    unchanged: int
    repeated_keys: dict[str, list[RowKey]]


@dataclass
class RowDiff:
    """Rows added, removed and changed, matched by key (repeated keys matched in order of appearance)."""

    added: list[RowKey] = field(default_factory=list)
    removed: list[RowKey] = field(default_factory=list)
    changed: list[RowKey] = field(default_factory=list)
    changed_fields: dict[RowKey, dict[str, tuple[object, object]]] = field(default_factory=dict)
    unchanged: int = 0
    repeated_keys: dict[str, list[RowKey]] = field(default_factory=dict)
    # (row in a, row in b) for each entry of added, removed and changed, in the same order
    # (-1 where a side has no such row); lists, so repeated keys keep their own rows
    added_rows: list[tuple[int, int]] = field(default_factory=list)
    removed_rows: list[tuple[int, int]] = field(default_factory=list)
    changed_rows: list[tuple[int, int]] = field(default_factory=list)

    def to_dict(self) -> RowDiffDict:
        """The row diff as JSON-ready values (bytes shown as their size)."""
        return {
            "added": _json_keys(self.added),
            "removed": _json_keys(self.removed),
            "changed": {
                str(k): {f: [jsonable(a), jsonable(b)] for f, (a, b) in self.changed_fields.get(k, {}).items()}
                for k in self.changed
            },
            "unchanged": self.unchanged,
            "repeated_keys": {side: _json_keys(keys) for side, keys in self.repeated_keys.items()},
        }


def jsonable(value: object) -> Any:
    """``value`` as JSON-ready data, bytes shown as their size."""
    return json_value(value, bytes_as="size")


def _json_keys(keys: list[RowKey]) -> list[RowKey]:
    return [k if isinstance(k, (int, str)) else str(k) for k in keys]


def _keys_and_hashes(ds: CachedDataset) -> tuple[pa.Array, np.ndarray]:
    if ds.cache_meta.is_stable_datasets_v1:
        keys = pa.array(ds.base_rows(), type=pa.int64())
        from stable_explore.storage.format.hashing import row_hashes

        table = ds.to_arrow()
        hashes = row_hashes([table.column(n).combine_chunks() for n in table.column_names])
        return keys, hashes
    keys = ds.arrow_column(KEY_COLUMN)
    return keys, ds.row_hashes()


def _occurrence_keys(keys: pa.Array) -> tuple[pa.Array, list[RowKey]]:
    """Keys made unique by their occurrence number where a key repeats, and the repeated keys."""
    counts = pc.value_counts(keys)
    repeated_mask = pc.greater(counts.field("counts"), 1)
    repeated = counts.field("values").filter(repeated_mask).to_pylist()
    if not repeated:
        return keys, []
    seen: Counter[object] = Counter()
    unique = []
    for key in keys.to_pylist():
        seen[key] += 1
        unique.append(f"{key}\x00{seen[key]}" if seen[key] > 1 else key)
    return pa.array([str(k) for k in unique]), repeated


def row_diff(a: CachedDataset, b: CachedDataset) -> RowDiff:
    """The row diff, reading only the rows outside the pieces (same file, same rows) both versions read.

    Two versions where one was saved from the other share most of their pieces, so this costs
    what changed; other pairs (views, older formats) are joined on every key.
    """
    found = None if a.is_view or b.is_view else unshared_rows(a.cache_meta, b.cache_meta)
    if found is None:
        return _joined_row_diff(a, b)
    rest_a, rest_b, shared = found
    diff = _joined_row_diff(a[rest_a], b[rest_b])

    def back(rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
        return [(int(rest_a[i]) if i >= 0 else -1, int(rest_b[j]) if j >= 0 else -1) for i, j in rows]

    diff.changed_rows = back(diff.changed_rows)
    diff.removed_rows = back(diff.removed_rows)
    diff.added_rows = back(diff.added_rows)
    diff.unchanged += shared
    return diff


def _joined_row_diff(a: CachedDataset, b: CachedDataset) -> RowDiff:
    keys_a, hashes_a = _keys_and_hashes(a)
    keys_b, hashes_b = _keys_and_hashes(b)
    diff = RowDiff()
    match_a, repeated_a = _occurrence_keys(keys_a)
    match_b, repeated_b = _occurrence_keys(keys_b)
    if repeated_a:
        diff.repeated_keys["a"] = repeated_a
    if repeated_b:
        diff.repeated_keys["b"] = repeated_b
    if match_a.type != match_b.type:
        match_a, match_b = match_a.cast(pa.string()), match_b.cast(pa.string())
    # hash join in Arrow: where each key of b stands in a
    in_a = pc.index_in(match_b, value_set=match_a).to_numpy(zero_copy_only=False)
    present = ~np.isnan(in_a) if in_a.dtype.kind == "f" else np.ones(len(in_a), bool)
    in_a_int = np.where(present, np.nan_to_num(in_a, nan=-1), -1).astype(np.int64)
    b_rows = np.arange(len(match_b))
    matched_b = b_rows[present]
    matched_a = in_a_int[present]
    same = hashes_a[matched_a] == hashes_b[matched_b]
    # the key columns are int64 or string (or a v1 cache's row numbers): their values are RowKeys
    original_a: list[RowKey] | None = keys_a.to_pylist() if (repeated_a or repeated_b) else None
    original_b: list[RowKey] | None = keys_b.to_pylist() if (repeated_a or repeated_b) else None

    def key_of(side: str, row: int) -> RowKey:
        original, keys = (original_a, keys_a) if side == "a" else (original_b, keys_b)
        if original is not None:
            return original[row]
        key: RowKey = keys[row].as_py()
        return key

    found_in_b = np.zeros(len(match_a), dtype=bool)
    found_in_b[matched_a] = True
    diff.removed = [key_of("a", int(r)) for r in np.flatnonzero(~found_in_b)]
    diff.added = [key_of("b", int(r)) for r in b_rows[~present]]
    changed_a, changed_b = matched_a[~same], matched_b[~same]
    diff.changed = [key_of("b", int(r)) for r in changed_b]
    diff.unchanged = int(same.sum())
    diff.changed_rows = list(zip(changed_a.tolist(), changed_b.tolist(), strict=True))
    diff.removed_rows = [(ra, -1) for ra in np.flatnonzero(~found_in_b).tolist()]
    diff.added_rows = [(-1, rb) for rb in b_rows[~present].tolist()]
    if len(changed_a):
        diff.changed_fields = _changed_fields(a, b, changed_a, changed_b, diff.changed)
    return diff


def _changed_fields(
    a: CachedDataset, b: CachedDataset, rows_a: np.ndarray, rows_b: np.ndarray, keys: list[RowKey]
) -> dict[RowKey, dict[str, tuple[object, object]]]:
    """Which fields differ in the changed rows (only those rows are read; images compared as bytes)."""
    common = [n for n in a.features if n in b.features]
    table_a = a.with_format("python").select(rows_a).to_arrow(common)
    table_b = b.with_format("python").select(rows_b).to_arrow(common)
    out: dict[RowKey, dict[str, tuple[object, object]]] = {key: {} for key in keys}
    for name in common:
        left = table_a.column(name).combine_chunks()
        right = table_b.column(name).combine_chunks()
        if left.type != right.type:
            # a retyped column (reported under .schema) is compared value by value as Python objects
            for i, (old, new) in enumerate(zip(left.to_pylist(), right.to_pylist(), strict=True)):
                if old != new:
                    out[keys[i]][name] = (old, new)
            continue
        # the cells' own hashes (what the row hashes are made of): any Arrow type, lists and
        # fixed-size lists included; nulls equal nulls and NaNs equal NaNs, as in the row hashes
        differs = cell_hashes(left) != cell_hashes(right)
        if not differs.any():
            continue
        feature_a, feature_b = a.features[name], b.features[name]
        for i in np.flatnonzero(differs).tolist():
            old, new = left[i].as_py(), right[i].as_py()
            old, new = class_name(feature_a, old), class_name(feature_b, new)
            out[keys[i]][name] = (old, new)
    return out
