"""Planning a save in runs of rows: which parent files to link, which rows to write, which digest runs to redo.

Everything here works on run lists (start, count), never on one entry per row, so
planning a save of k edits costs O(k + runs), not O(rows): that is what keeps a
relabel of 10 rows as quick at 10 million rows as at 100 thousand.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from stable_explore._arrays import distinct
from stable_explore.storage.format.hashing import KnownEnds

__all__ = ["Link", "Rewrite", "base_runs", "carried_ends", "compacted", "plan_rows", "stale_digest_runs"]


@dataclass(frozen=True)
class Link:
    """Keep ``count`` rows where they are: rows ``file_start:`` of the origin's file ``file_id``.

    ``position`` is where the rows are in the origin (a compaction rewrites them from there).
    """

    file_id: int
    file_start: int
    count: int
    position: int


@dataclass(frozen=True)
class Rewrite:
    """Write origin rows ``start:start + count`` (positions in the origin) anew."""

    start: int
    count: int


def base_runs(rows: range | np.ndarray | None, num_rows: int) -> list[tuple[int, int, int]]:
    """The origin's rows as (first position, first base row, count) runs of consecutive base rows."""
    if rows is None:
        return [(0, 0, num_rows)] if num_rows else []
    if isinstance(rows, range) and rows.step == 1:
        return [(0, rows.start, len(rows))] if len(rows) else []
    array = np.asarray(rows, dtype=np.int64)
    if array.size == 0:
        return []
    starts = np.flatnonzero(np.r_[True, np.diff(array) != 1])
    ends = np.r_[starts[1:], array.size]
    return list(zip(starts.tolist(), array[starts].tolist(), (ends - starts).tolist(), strict=True))


def _split(start: int, count: int, cuts: np.ndarray) -> Iterator[tuple[int, int, int]]:
    """Pieces (start, count, cut) of ``start:start + count`` around the sorted positions ``cuts`` inside it."""
    lo, hi = np.searchsorted(cuts, [start, start + count])
    position = start
    for cut in cuts[lo:hi].tolist():
        if cut > position:
            yield position, cut - position, -1
        yield cut, 1, cut
        position = cut + 1
    if position < start + count:
        yield position, start + count - position, -1


def plan_rows(
    runs: Sequence[tuple[int, int, int]],
    dropped: np.ndarray,
    touched: np.ndarray,
    offsets: np.ndarray,
    segments: Sequence[tuple[int, int, int]],
    *,
    can_link: bool,
    min_linked_rows: int,
) -> list[Link | Rewrite]:
    """The output rows in order: runs kept in the origin's files, and runs written anew.

    ``runs`` are the origin's rows (see :func:`base_runs`); ``dropped`` and ``touched`` are
    sorted origin positions; ``offsets``/``segments`` are the origin's segments. A run that
    survives unchanged is linked when it is long (``min_linked_rows``) or a whole segment of
    the origin; shorter pieces that an edit cut off a segment are copied.
    """
    cuts = np.union1d(dropped, touched).astype(np.int64)
    is_dropped = set(dropped.tolist())
    plan: list[Link | Rewrite] = []

    def rewrite(start: int, count: int) -> None:
        last = plan[-1] if plan else None
        if isinstance(last, Rewrite) and last.start + last.count == start:
            plan[-1] = Rewrite(last.start, last.count + count)
        else:
            plan.append(Rewrite(start, count))

    for first, base, count in runs:
        for start, length, cut in _split(first, count, cuts):
            if cut >= 0:
                if cut not in is_dropped:
                    rewrite(cut, 1)
                continue
            row = base + start - first  # base row of this piece's first row
            position = start
            while length:
                part = int(np.searchsorted(offsets, row, side="right") - 1)
                file_id, file_start, part_rows = segments[part]
                within = row - int(offsets[part])
                take = min(length, part_rows - within)
                # a whole segment of the parent is linked however short it is (copying it again would
                # re-copy the rows of every earlier edit at every save); a short piece an edit cut off
                # one is copied, so that one edit adds at most three segments
                whole_segment = take == part_rows
                if can_link and (take >= min_linked_rows or whole_segment):
                    plan.append(Link(file_id, file_start + within, take, position))
                else:
                    rewrite(position, take)
                row, position, length = row + take, position + take, length - take
    return plan


def compacted(
    plan: list[Link | Rewrite],
    file_rows: Sequence[int],
    *,
    max_segments: int,
    small_file_rows: int,
    max_small_files: int,
    file_bytes: Sequence[int] | None = None,
    merge_bytes: int = 0,
    small_file_bytes: int | None = None,
) -> list[Link | Rewrite]:
    """The plan with fragmented files rewritten whole: what keeps reads of the 50th save near a fresh build's.

    A read of an edited version pays, beyond a fresh build's, for each piece (a slice), each file
    (an open) and each row of its files that it no longer uses (checked at open). So, past
    ``max_segments`` pieces, the files that cost the most pieces per row are rewritten whole (every
    row the version keeps of them, in order, into the save's new file) until the plan is back to 3/4
    of the limit; only files with at least one piece per ``2 * rows / max_segments`` rows qualify, so
    a shard the edits left whole is never rewritten for pieces. A file the version then uses less
    than half of is rewritten too. The small files of earlier saves' edited rows (fewer than
    ``small_file_rows`` rows, and at most ``small_file_bytes``) are merged into the new file once
    there are more than ``max_small_files`` (the smallest of them, so that ``max_small_files``
    stay), or all of them as soon as the save writes a file anyway and they hold no more than
    ``merge_bytes`` (``file_bytes`` per file). Planning is O(files x pieces); the rows written are
    those of the files rewritten, which a save pays only when a threshold is passed (see
    benchmarks/bench_versions.py).
    """
    used: dict[int, int] = {}
    for step in plan:
        if isinstance(step, Link):
            used[step.file_id] = used.get(step.file_id, 0) + step.count
    # a build's last shard is short in rows but no earlier save's edits: past small_file_bytes it is left alone
    small = {
        f
        for f in used
        if file_rows[f] < small_file_rows
        and (file_bytes is None or small_file_bytes is None or file_bytes[f] <= small_file_bytes)
    }
    writes = any(isinstance(step, Rewrite) for step in plan)  # a save of drops only writes no file
    cheap = file_bytes is not None and writes and sum(file_bytes[f] for f in small) <= merge_bytes
    if cheap:
        redo = small
    elif len(small) > max_small_files:
        # the smallest ones, so that the version keeps max_small_files: merging all of them every few
        # saves would rewrite every earlier edit again and again (quadratic in a chain of saves)
        size = file_bytes if file_bytes is not None else file_rows
        redo = set(sorted(small, key=lambda f: (size[f], f))[: len(small) - max_small_files + 1])
    else:
        redo = set()
    if len(plan) > max_segments:
        total = sum(step.count for step in plan)
        dense = 2 * total // max(1, max_segments)  # rows per piece of a file worth rewriting, at most
        gains = {f: len(plan) - len(_rewritten(plan, redo | {f})) for f in used if f not in redo}
        ranked = sorted((used[f] / gains[f], f) for f in gains if gains[f] > 0 and used[f] <= dense * gains[f])
        target = max_segments * 3 // 4
        for _, file_id in ranked:
            if len(_rewritten(plan, redo)) <= target:
                break
            redo = redo | {file_id}
        redo = redo | {f for f, rows in used.items() if 2 * rows < file_rows[f]}
    return _rewritten(plan, redo) if redo else plan


def _rewritten(plan: list[Link | Rewrite], files: set[int]) -> list[Link | Rewrite]:
    """The plan with every link into ``files`` written anew (neighbouring rewrites join into one run)."""
    out: list[Link | Rewrite] = []
    for step in plan:
        if isinstance(step, Link) and step.file_id in files:
            step = Rewrite(step.position, step.count)
        last = out[-1] if out else None
        if isinstance(step, Rewrite) and isinstance(last, Rewrite) and last.start + last.count == step.start:
            out[-1] = Rewrite(last.start, last.count + step.count)
        else:
            out.append(step)
    return out


def stale_digest_runs(run_ends: np.ndarray, affected: np.ndarray) -> list[tuple[int, int]]:
    """Groups (first run, last run) of the parent's digest runs that an edit of ``affected`` rows makes stale.

    ``run_ends`` are the cumulative row counts of the parent's runs; ``affected`` the sorted
    positions dropped or changed. A run whose last row is affected may lose its boundary, so
    its group also takes the next run; every other boundary is a row left as it was, so it
    stays a boundary and the runs past it keep their digests.
    """
    if affected.size == 0 or run_ends.size == 0:
        return []
    hit = distinct(np.searchsorted(run_ends, affected, side="right")).tolist()
    affected_set = set(affected.tolist())
    groups: list[tuple[int, int]] = []
    for run in hit:
        if groups and run <= groups[-1][1] + 1:
            groups[-1] = (groups[-1][0], max(groups[-1][1], run))
        else:
            groups.append((run, run))
        first, last = groups[-1]
        while last + 1 < run_ends.size and int(run_ends[last]) - 1 in affected_set:
            last += 1
        groups[-1] = (first, last)
    return groups


def carried_ends(run_ends: np.ndarray, first: int, last: int, dropped: np.ndarray, changed: np.ndarray) -> KnownEnds:
    """Where the runs of a stale group (parent runs ``first``..``last``) end in the saved version, as the parent says.

    The new digest of the group is fed the group's rows minus ``dropped`` (counted from 0).
    Whether a row ends a run depends on its key and row hash alone, so a row the edit left as
    it was ends a run in the new version exactly when it ended one in the parent; ``changed``
    rows are looked at again. (The parent's last run may end with its rows, not at a boundary:
    counting its last row as one changes no run's rows or digest.) ``run_ends`` are the
    cumulative row counts of the parent's runs; ``dropped`` and ``changed`` sorted positions.
    See :func:`known_ends`, which finds them for every group at once.

    Examples
    --------
    >>> known = carried_ends(np.array([10, 20, 30]), 1, 2, np.array([12]), np.array([19, 25]))
    >>> known.ends.tolist(), known.unknown.tolist()  # rows 19 and 25 changed; row 12 dropped
    ([18], [8, 14])
    """
    start = int(run_ends[first - 1]) if first else 0
    stop = int(run_ends[last])
    new_start = start - int(np.searchsorted(dropped, start))
    new_stop = stop - int(np.searchsorted(dropped, stop))
    return known_ends(run_ends, dropped, changed).window(new_start, new_stop)


def known_ends(
    run_ends: np.ndarray,
    dropped: np.ndarray,
    changed: np.ndarray,
    decided: tuple[np.ndarray, np.ndarray] | None = None,
) -> KnownEnds:
    """Where the parent's runs end in the saved version, for all its rows (see :func:`carried_ends`).

    Positions are the saved version's (dropped rows taken out): rows that ended a parent's run
    and that the edit left as they were, and the ``changed`` rows kept, to be looked at again.
    ``decided`` (sorted changed positions, and whether each ends a run) settles those the caller
    looked at already: they are not looked at again. A stale group's digest takes
    :meth:`KnownEnds.window` of its rows: the arrays are made once per save, not once per group.

    Examples
    --------
    >>> known = known_ends(np.array([10, 20, 30]), np.array([12]), np.array([19, 25]))
    >>> known.ends.tolist(), known.unknown.tolist()
    ([9, 28], [18, 24])
    >>> looked = (np.array([25]), np.array([True]))  # row 25 was looked at: it ends a run
    >>> known = known_ends(np.array([10, 20, 30]), np.array([12]), np.array([19, 25]), looked)
    >>> known.ends.tolist(), known.unknown.tolist()
    ([9, 24, 28], [18])
    """
    ends = np.setdiff1d(run_ends.astype(np.int64) - 1, np.union1d(dropped, changed))
    unknown = np.setdiff1d(changed.astype(np.int64), dropped)
    if decided is not None:
        positions, ending = decided
        settled = np.isin(unknown, positions)
        ends = np.union1d(ends, np.setdiff1d(positions[ending], dropped))
        unknown = unknown[~settled]

    def renumbered(rows: np.ndarray) -> np.ndarray:
        moved: np.ndarray = rows - np.searchsorted(dropped, rows)
        return moved.astype(np.int64)

    return KnownEnds(renumbered(ends), renumbered(unknown))
