"""Group 64-bit hashes within a Hamming distance of each other, without comparing all pairs.

Multi-index hashing: cut the 64 bits into ``m`` bands. Two hashes at most ``t`` bits apart differ in
at most ``t // m`` bits of some band (pigeonhole), so probing each hash's bands with every flip of up
to ``t // m`` bits against the sorted band values finds every such pair, and only candidates are
checked bit by bit. No pair within ``t`` is missed. ``m`` is chosen to keep the expected number of
candidates low for the number of distinct hashes: about ``log2(n)`` bits per band.

Equal hashes are folded first, so a thousand blank images cost one probe, not a million pairs.
Groups are the connected parts of the "within ``t``" graph (single linkage).

Examples
--------
>>> import numpy as np
>>> hashes = np.array([0b1111, 0b0111, 1 << 40, 0b1111], dtype=np.uint64)
>>> hamming_groups(hashes, threshold=1).tolist()
[0, 0, 2, 0]
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from stable_explore._arrays import distinct
from stable_explore.errors import InvalidOptionError
from stable_explore.signals.perceptual import popcount

_TABLE_BITS = 24  # bands this narrow are looked up in a table of 2**bits offsets (128 MB at 24 bits)
_PAIR_BUDGET = 1 << 24  # candidate pairs checked at once, and close pairs held before they are compressed
_PROBE_BUDGET = 1 << 22  # probe values held at once (bounded memory: about 100 MB of work arrays)


def _flips(bits: int, radius: int) -> np.ndarray:
    """Every mask of ``bits`` bits with at most ``radius`` bits set."""
    masks = [0]
    for r in range(1, radius + 1):
        masks.extend(sum(1 << b for b in combo) for combo in itertools.combinations(range(bits), r))
    return np.array(masks, dtype=np.uint64)


def _probes(bits: int, radius: int) -> int:
    return sum(math.comb(bits, r) for r in range(radius + 1))


def plan_bands(count: int, threshold: int) -> tuple[int, int]:
    """(bands, radius per band) that minimise the expected work for ``count`` distinct hashes."""
    best: tuple[float, int, int] | None = None
    for bands in range(1, 17):
        bits = -(-64 // bands)
        radius = threshold // bands
        probes = _probes(bits, radius)
        lookup = 1.0 if bits <= _TABLE_BITS else 1.0 + math.log2(max(2, count))  # table vs binary search
        cost = bands * probes * (lookup + count / 2.0**bits)
        if best is None or cost < best[0]:
            best = (cost, bands, radius)
    assert best is not None
    return best[1], best[2]


def hamming_pairs(hashes: np.ndarray, threshold: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i < j) of ``hashes`` (distinct uint64) at most ``threshold`` bits apart.

    Every such pair; or, when there are very many, fewer pairs that link the same items into the same groups.
    """
    n = len(hashes)
    if n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    bands, radius = plan_bands(n, threshold)
    width = -(-64 // bands)
    found_i: list[np.ndarray] = []
    found_j: list[np.ndarray] = []
    held = 0
    for band in range(bands):
        shift = band * width
        bits = min(width, 64 - shift)
        mask = np.uint64((1 << bits) - 1)
        values = (hashes >> np.uint64(shift)) & mask
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        # a band of up to 24 bits: tables of how many hashes have each band value and where they start in
        # `order` (one lookup per probe, against a binary search's twenty)
        table = None
        if bits <= _TABLE_BITS:
            sizes = np.bincount(values.astype(np.int64), minlength=1 << bits).astype(np.int32)
            firsts = np.zeros(1 << bits, dtype=np.int32)
            np.cumsum(sizes[:-1], out=firsts[1:])
            table = (sizes, firsts)
        flips = _flips(bits, min(radius, bits))
        chunk = max(1, _PROBE_BUDGET // len(flips))
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            probe = (values[start:stop, None] ^ flips[None, :]).ravel().view(np.int64)
            if table is not None:
                counts = table[0][probe]
                hit = np.flatnonzero(counts)
                counts, lo = counts[hit].astype(np.int64), table[1][probe[hit]].astype(np.int64)
            else:
                lo = np.searchsorted(ordered, probe.view(np.uint64), side="left")
                counts = np.searchsorted(ordered, probe.view(np.uint64), side="right") - lo
                hit = np.flatnonzero(counts)
                counts, lo = counts[hit], lo[hit]
            # candidates in slices of at most _PAIR_BUDGET (a crowded band value makes many), checked bit by bit
            ends = np.cumsum(counts)
            first = 0
            while first < len(counts):
                base = int(ends[first - 1]) if first else 0
                last = max(first + 1, int(np.searchsorted(ends, base + _PAIR_BUDGET, side="right")))
                part_counts, part_lo = counts[first:last], lo[first:last]
                total = int(part_counts.sum())
                left = np.repeat(start + hit[first:last] // len(flips), part_counts)
                offsets = np.arange(total) - np.repeat(np.cumsum(part_counts) - part_counts, part_counts)
                right = order[np.repeat(part_lo, part_counts) + offsets]
                keep = left < right
                left, right = left[keep], right[keep]
                close = popcount(hashes[left] ^ hashes[right]) <= threshold
                found_i.append(left[close])
                found_j.append(right[close])
                held += int(close.sum())
                first = last
            if held > _PAIR_BUDGET:  # many close pairs: keep only each item's link to its part (at most n)
                found_i, found_j, held = _compress(n, found_i, found_j)
    if not found_i:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    pairs = distinct(np.concatenate(found_i).astype(np.int64) * n + np.concatenate(found_j))
    return pairs // n, pairs % n


def _compress(n: int, found_i: list[np.ndarray], found_j: list[np.ndarray]) -> tuple[list[Any], list[Any], int]:
    """The same connected parts with fewer edges: each linked item to its part's smallest member."""
    labels = components(n, np.concatenate(found_i), np.concatenate(found_j))
    linked = np.flatnonzero(labels != np.arange(n))
    return [labels[linked]], [linked], len(linked)


def components(n: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The smallest member of each item's connected part, given edges ``left[k]``-``right[k]``."""
    labels = np.arange(n, dtype=np.int64)
    if len(left) == 0:
        return labels
    while True:
        low = np.minimum(labels[left], labels[right])
        before = labels.copy()
        np.minimum.at(labels, left, low)
        np.minimum.at(labels, right, low)
        labels = labels[labels]  # pointer jumping: each item takes its representative's representative
        while not np.array_equal(labels, labels[labels]):
            labels = labels[labels]
        if np.array_equal(labels, before):
            return labels


def hamming_groups(hashes: np.ndarray, threshold: int) -> np.ndarray:
    """For each hash, the first position of its group (hashes within ``threshold`` bits, linked).

    ``threshold`` is a number of bits, 0 to 32 (0: equal hashes only).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)) or not 0 <= threshold <= 32:
        msg = f"threshold must be a number of differing bits from 0 to 32, got {threshold!r}"
        raise InvalidOptionError(msg)
    hashes = np.asarray(hashes, dtype=np.uint64)
    unique_hashes, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    left, right = hamming_pairs(unique_hashes, int(threshold))
    linked = components(len(unique_hashes), left, right)
    # name each group by its earliest row: the smallest first position among its distinct hashes
    earliest = np.full(len(unique_hashes), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(earliest, linked, first)
    groups: np.ndarray = earliest[linked][inverse]
    return groups
