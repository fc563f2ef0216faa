"""Which cell patches a save records: relabels of rows it keeps where they are, and its origin's that still apply.

A relabelled row whose other cells are unchanged and which the plan links (keeps in its
file) becomes a cell patch instead of a rewritten row: its file row, its new row hash and
its new class. The origin's own patches carry over for the rows the plan still links; rows
the plan rewrites are written with their patched values, so their patches end there.

Examples
--------
>>> from stable_explore.versioning._plan import Link
>>> plan = [Link(file_id=0, file_start=0, count=5, position=0), Link(file_id=1, file_start=2, count=3, position=5)]
>>> found, files, rows = linked_places(plan, np.array([1, 6, 9]))
>>> found.tolist(), files[found].tolist(), rows[found].tolist()
([True, True, False], [0, 1], [1, 3])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from stable_explore._arrays import distinct
from stable_explore.versioning._plan import Link, Rewrite

if TYPE_CHECKING:
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta
    from stable_explore.storage.format.cell_patches import PatchEntry

__all__ = ["carried_entries", "linked_places", "merged_entries", "patchable"]


def patchable(meta: ShardedCacheMeta) -> bool:
    """Whether a save from this version may patch cells: its shards have digests, all distinct."""
    hashes = meta.shard_hashes
    return not meta.is_stable_datasets_v1 and hashes is not None and len(set(hashes)) == len(hashes)


def _links(plan: Sequence[Link | Rewrite]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The plan's links as arrays sorted by origin position: positions, counts, files, file starts."""
    links = [step for step in plan if isinstance(step, Link)]
    table = np.array([(s.position, s.count, s.file_id, s.file_start) for s in links], dtype=np.int64).reshape(-1, 4)
    table = table[np.argsort(table[:, 0], kind="stable")]
    return table[:, 0], table[:, 1], table[:, 2], table[:, 3]


def linked_places(plan: Sequence[Link | Rewrite], positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For origin ``positions``: whether the plan links each, and its file and row in that file."""
    starts, counts, files, file_starts = _links(plan)
    slot = np.searchsorted(starts, positions, side="right") - 1
    found = slot >= 0
    safe = np.where(found, slot, 0)
    if starts.size:
        found &= positions < starts[safe] + counts[safe]
    else:
        found[:] = False
        return found, np.zeros_like(positions), np.zeros_like(positions)
    return found, files[safe], file_starts[safe] + positions - starts[safe]


def carried_entries(
    entries: Sequence[PatchEntry], plan: Sequence[Link | Rewrite], shard_hashes: Sequence[str]
) -> list[PatchEntry]:
    """The origin's entries whose rows the plan still links (rows it rewrites take their values with them)."""
    if not entries:
        return []
    _, counts, files, file_starts = _links(plan)
    file_of = {digest: index for index, digest in enumerate(shard_hashes)}
    entry_files = np.array([file_of.get(entry[0], -1) for entry in entries], dtype=np.int64)
    entry_rows = np.array([entry[1] for entry in entries], dtype=np.int64)
    kept = np.zeros(len(entries), dtype=bool)
    for file_id in distinct(files).tolist():  # per file, every entry of it at once
        mine = files == file_id
        order = np.argsort(file_starts[mine], kind="stable")
        starts, lengths = file_starts[mine][order], counts[mine][order]
        which = np.flatnonzero(entry_files == file_id)
        rows = entry_rows[which]
        slot = np.searchsorted(starts, rows, side="right") - 1
        inside = slot >= 0
        safe = np.where(inside, slot, 0)
        kept[which] = inside & (rows < starts[safe] + lengths[safe])
    return [entry for entry, keep in zip(entries, kept.tolist(), strict=True) if keep]


def merged_entries(carried: Sequence[PatchEntry], new: Sequence[PatchEntry]) -> list[PatchEntry]:
    """``carried`` with ``new`` added, sorted; a row in both keeps the new row hash and both sets of cells.

    Each entry's cells are in order of column, once each.

    Examples
    --------
    >>> merged_entries([("d", 1, 5, (("a", 0),)), ("d", 4, 6, (("a", 1),))], [("d", 1, 7, (("b", 2),))])
    [('d', 1, 7, (('a', 0), ('b', 2))), ('d', 4, 6, (('a', 1),))]
    """
    fresh = {(digest, row): (row_hash, cells) for digest, row, row_hash, cells in new}
    out: list[PatchEntry] = []
    for digest, row, row_hash, cells in carried:
        found = fresh.get((digest, row))
        if found is not None:  # both: the new row hash, the cells of both (the new ones win)
            fresh[(digest, row)] = (found[0], (*cells, *found[1]))
        elif _in_order(cells):
            out.append((digest, row, row_hash, cells))
        else:
            out.append((digest, row, row_hash, tuple(sorted(dict(cells).items()))))
    for (digest, row), (row_hash, cells) in fresh.items():
        out.append((digest, row, row_hash, cells if _in_order(cells) else tuple(sorted(dict(cells).items()))))
    out.sort(key=lambda entry: (entry[0], entry[1]))
    return out


def _in_order(cells: tuple[tuple[str, int], ...]) -> bool:
    """Whether cells are in order of column, each column once (a relabel of one column, nearly always)."""
    return len(cells) == 1 or all(a[0] < b[0] for a, b in itertools.pairwise(cells))
