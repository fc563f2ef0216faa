"""Multi-index hashing finds exactly the pairs a brute-force comparison finds, and groups link them."""

from __future__ import annotations

import numpy as np
import pytest

from stable_explore.errors import InvalidOptionError
from stable_explore.signals import grouping
from stable_explore.signals.grouping import hamming_groups, hamming_pairs, plan_bands
from stable_explore.signals.perceptual import popcount


@pytest.mark.parametrize("threshold", [0, 1, 3, 6, 10, 16])
def test_pairs_equal_brute_force(threshold: int) -> None:
    rng = np.random.default_rng(threshold)
    base = rng.integers(0, 2**63, size=800, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    flips = [np.uint64(0)] * 200
    for i in range(200):  # copies 0..threshold+2 bits away
        for bit in rng.choice(64, size=int(rng.integers(0, threshold + 3)), replace=False):
            flips[i] ^= np.uint64(1) << np.uint64(bit)
    hashes = np.unique(np.concatenate([base, base[:200] ^ np.array(flips, dtype=np.uint64)]))
    left, right = hamming_pairs(hashes, threshold)
    distances = popcount(hashes[:, None] ^ hashes[None, :])
    i, j = np.triu_indices(len(hashes), 1)
    close = distances[i, j] <= threshold
    assert set(zip(left.tolist(), right.tolist(), strict=True)) == set(
        zip(i[close].tolist(), j[close].tolist(), strict=True)
    )


def test_tiny_budgets_give_the_same_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    centres = rng.integers(0, 2**63, size=20, dtype=np.int64).astype(np.uint64)
    hashes = [c ^ (np.uint64(1) << np.uint64(int(b))) for c in centres for b in rng.choice(64, 30, replace=False)]
    hashes = np.array([*centres, *hashes], dtype=np.uint64)  # crowded: 20 clusters of 31 hashes 1-2 bits apart
    expected = hamming_groups(hashes, 3)
    monkeypatch.setattr(grouping, "_PAIR_BUDGET", 5)  # candidates checked 5 at a time; close pairs compressed
    monkeypatch.setattr(grouping, "_PROBE_BUDGET", 64)
    assert hamming_groups(hashes, 3).tolist() == expected.tolist()
    distances = popcount(hashes[:, None] ^ hashes[None, :])
    linked = grouping.components(len(hashes), *np.nonzero(np.triu(distances <= 3, 1)))
    first = {int(root): int(np.flatnonzero(linked == root).min()) for root in np.unique(linked)}
    assert expected.tolist() == [first[int(root)] for root in linked]


def test_groups_are_linked_and_named_by_their_first_row() -> None:
    hashes = np.array([0b1, 1 << 50, 0b11, 0b111, 1 << 50, 0xFFFF << 20], dtype=np.uint64)
    assert hamming_groups(hashes, 1).tolist() == [0, 1, 0, 0, 1, 5]  # 1-3-7 chain through single bits
    assert hamming_groups(hashes, 0).tolist() == [0, 1, 2, 3, 1, 5]


def test_many_equal_hashes_cost_one_probe() -> None:
    hashes = np.zeros(200_000, dtype=np.uint64)  # 200k blank images: one group, no 2e10 pairs
    assert (hamming_groups(hashes, 4) == 0).all()


def test_plan_widens_bands_with_more_hashes() -> None:
    small, large = plan_bands(1_000, 4), plan_bands(1_000_000, 4)
    assert 64 // small[0] < 64 // large[0] or small[0] >= large[0]


@pytest.mark.parametrize("bad", [-1, 33, 2.5, True])
def test_threshold_out_of_range_is_refused(bad: object) -> None:
    with pytest.raises(InvalidOptionError, match="threshold must be a number of differing bits"):
        hamming_groups(np.zeros(3, dtype=np.uint64), bad)  # type: ignore[arg-type]
