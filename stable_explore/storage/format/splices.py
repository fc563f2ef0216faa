"""Splices: how a list that a save changes in a few places is recorded against its parent's list.

A version's long lists (the runs of its content digest, its row segments) are kept in a file
beside ``_metadata.json`` that a save links from its parent unchanged; the save records only
splices ``(index, removed, inserted)`` that turn the file's list into its own. Once the splices
pass :func:`rebase_limit`, the save writes a new file instead.

Examples
--------
>>> base = [("a", 1), ("b", 2), ("c", 3)]
>>> mine = [("a", 1), ("d", 4), ("e", 5), ("c", 3)]
>>> splices = splices_between(base, mine)
>>> splices
[(1, 1, (('d', 4), ('e', 5)))]
>>> apply_splices(base, splices, "m.json") == mine
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from stable_explore.errors import CacheCorruptionError

__all__ = [
    "Splice",
    "apply_splices",
    "keeps_splicing",
    "parse_splices",
    "rebase_limit",
    "spliced_count",
    "splices_between",
    "splices_to_json",
]

T = TypeVar("T", bound=Hashable)
Splice = tuple[int, int, tuple[T, ...]]
"""Replace ``removed`` items of the base list from ``index`` on by the ``inserted`` ones."""


def splices_between(base: Sequence[T], items: Sequence[T]) -> list[Splice[T]]:
    """Splices that turn ``base`` into ``items``, in one pass (what a save did not touch is not recorded).

    An item found later in ``base`` anchors the two lists together; items between anchors are
    recorded as inserted, items of ``base`` skipped over as removed.
    """
    where: dict[T, list[int]] = {}
    for index, run in enumerate(base):
        where.setdefault(run, []).append(index)
    splices: list[Splice[T]] = []
    position = 0  # next item of base not yet matched or removed
    pending: list[T] = []
    for run in items:
        if position < len(base) and base[position] == run:
            if pending:
                splices.append((position, 0, tuple(pending)))
                pending = []
            position += 1
            continue
        later = next((i for i in where.get(run, ()) if i > position), None)
        if later is None:
            pending.append(run)
            continue
        splices.append((position, later - position, tuple(pending)))
        pending = []
        position = later + 1
    if pending or position < len(base):
        splices.append((position, len(base) - position, tuple(pending)))
    return splices


def apply_splices(base: Sequence[T], splices: Sequence[Splice[T]], path: str | Path) -> list[T]:
    """``base`` with each splice applied; splices must be in order and inside ``base`` (``path``: for errors)."""
    runs: list[T] = []
    position = 0
    for index, removed, inserted in splices:
        if index < position or index + removed > len(base):
            raise CacheCorruptionError(
                path, f"splice at {index} (removing {removed}) is out of order or past the list's end"
            )
        runs.extend(base[position:index])
        runs.extend(inserted)
        position = index + removed
    runs.extend(base[position:])
    return runs


def rebase_limit(base_items: int, per_save: int = 1) -> int:
    """Spliced items past which a save writes a new file, for saves that splice ``per_save`` items each.

    Splices are rewritten by every save until a new file is written, so waiting for T items costs
    about T / 2 items per save, plus the file's ``base_items`` once every T / ``per_save`` saves:
    least at T = sqrt(2 * base_items * per_save), which costs each save about as many items. Never
    more than the file itself (a new file is then smaller than the splices).
    """
    return min(base_items, max(32, math.isqrt(2 * base_items * per_save)))


def keeps_splicing(
    base_items: int, splices: Sequence[Splice[object]], parent_splices: Sequence[Splice[object]]
) -> bool:
    """Whether a save records ``splices`` on the parent's file (True) or writes a new file.

    What this one save spliced is estimated as the growth over the parent's own splices.
    """
    spliced = spliced_count(splices)
    return spliced <= rebase_limit(base_items, max(1, spliced - spliced_count(parent_splices)))


def spliced_count(splices: Sequence[Splice[object]]) -> int:
    """Items the splices remove and insert: what :func:`rebase_limit` is compared with."""
    return sum(removed + len(inserted) for _, removed, inserted in splices)


def splices_to_json(splices: Sequence[Splice[Sequence[object]]]) -> list[list[Any]]:
    """The form ``_metadata.json`` records: ``[[index, removed, [item as a list, ...]], ...]``."""
    return [[index, removed, [list(item) for item in inserted]] for index, removed, inserted in splices]


def parse_splices(
    entries: object, where: str, meta_path: Path, check_items: Callable[[Any, str, Path], list[T]]
) -> tuple[Splice[T], ...]:
    """Check and type recorded splices; ``check_items`` checks the inserted items (``where`` names the field)."""
    if not isinstance(entries, list):
        raise CacheCorruptionError(meta_path, f"{where} needs a list of splices, found {entries!r:.100}")
    splices = []
    for entry in entries:
        ok = isinstance(entry, list) and len(entry) == 3 and type(entry[0]) is int and type(entry[1]) is int
        if not ok or entry[0] < 0 or entry[1] < 0:
            raise CacheCorruptionError(meta_path, f"{where}: splice {entry!r:.100} is not [index, removed, items]")
        splices.append((entry[0], entry[1], tuple(check_items(entry[2], f"{where} splice", meta_path))))
    return tuple(splices)
