"""The thumbnail cache: made lazily, keyed by version, row and size, bounded in bytes."""

from __future__ import annotations

import pytest

pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")

from typing import TYPE_CHECKING

from stable_explore.widgets import ShardBrowser
from stable_explore.widgets._thumbs import ThumbnailCache

if TYPE_CHECKING:
    from stable_explore import CachedDataset


def test_thumbnails_are_cached_by_version_row_and_size(pets: CachedDataset) -> None:
    cache = ThumbnailCache()
    browser = ShardBrowser(pets, page_size=24, cache=cache)
    assert len(cache) == 0  # nothing is made before a page is asked for
    browser.page_message()
    assert cache.misses == 24
    browser.page_message()
    assert cache.hits == 24
    browser.thumb_size = 64
    browser.page_message()
    assert len(cache) == 48
    small = ThumbnailCache(max_bytes=2000)
    ShardBrowser(pets, page_size=24, cache=small).page_message()
    assert 0 < small.nbytes <= 2000
