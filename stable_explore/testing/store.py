"""The conformance suite every storage implementation runs, so that a local home and a bucket fail alike.

Subclass :class:`StoreConformance` in a test module and give it a ``store`` fixture that
returns a fresh, empty store::

    class TestLocalStore(StoreConformance):
        @pytest.fixture
        def store(self, tmp_path):
            return LocalStore(tmp_path)
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from stable_explore.errors import UnsafePathError

if TYPE_CHECKING:
    from stable_explore.storage.backends.protocol import Store

__all__ = ["StoreConformance"]


class StoreConformance:
    """Behaviour the catalog relies on, checked against one store (override the ``store`` fixture)."""

    @pytest.fixture
    def store(self) -> Store:
        raise NotImplementedError  # pragma: no cover - each implementation's test module provides it

    def test_text_round_trips_and_a_missing_key_reads_as_none(self, store: Store) -> None:
        assert store.read_text("pets/refs/latest") is None
        assert not store.exists("pets/refs/latest")
        store.write_text("pets/refs/latest", "v1\n")
        assert store.read_text("pets/refs/latest") == "v1\n"
        assert store.exists("pets/refs/latest")
        store.write_text("pets/refs/latest", "v2 ✓\n")
        assert store.read_text("pets/refs/latest") == "v2 ✓\n"

    def test_listing_shows_direct_children_only_and_no_temp_files(self, store: Store) -> None:
        assert store.list_dir("pets") == []
        for key in ("pets/refs/latest", "pets/refs/clean", "pets/sources/abc", "birds/refs/latest"):
            store.write_text(key, "x\n")
        assert store.list_dir("pets/refs") == ["clean", "latest"]
        assert store.list_dir("pets") == ["refs", "sources"]
        assert store.list_dir("") == ["birds", "pets"]

    def test_put_if_absent_stores_once(self, store: Store) -> None:
        assert store.put_if_absent("pets/sources/abc", "first\n")
        assert not store.put_if_absent("pets/sources/abc", "second\n")
        assert store.read_text("pets/sources/abc") == "first\n"

    def test_swap_replaces_only_what_was_expected(self, store: Store) -> None:
        assert store.swap("pets/refs/latest", None, "v1\n")
        assert not store.swap("pets/refs/latest", None, "other\n")
        assert not store.swap("pets/refs/latest", "v0\n", "other\n")
        assert store.read_text("pets/refs/latest") == "v1\n"
        assert store.swap("pets/refs/latest", "v1\n", "v2\n")
        assert store.read_text("pets/refs/latest") == "v2\n"

    def test_concurrent_swappers_never_lose_an_update(self, store: Store) -> None:
        """Eight writers each add their mark by compare-and-swap, retrying on conflict: all eight marks land."""
        store.write_text("pets/refs/log", "")

        def append(mark: str) -> None:
            while True:
                current = store.read_text("pets/refs/log") or ""
                if store.swap("pets/refs/log", current, current + mark):
                    return

        threads = [threading.Thread(target=append, args=(str(i),)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(store.read_text("pets/refs/log") or "") == [str(i) for i in range(8)]

    def test_files_go_up_down_and_copy_whole(self, store: Store, tmp_path: Path) -> None:
        data = bytes(range(256)) * 4096  # 1 MiB, not text
        source = tmp_path / "shard-00000.arrow"
        source.write_bytes(data)
        assert store.size("pets/versions/v1/shard-00000.arrow") is None
        store.put_file("pets/versions/v1/shard-00000.arrow", source)
        assert store.size("pets/versions/v1/shard-00000.arrow") == len(data)
        store.copy("pets/versions/v1/shard-00000.arrow", "pets/versions/v2/shard-00003.arrow")
        back = tmp_path / "down" / "copy.arrow"
        back.parent.mkdir()
        store.get_file("pets/versions/v2/shard-00003.arrow", back)
        assert back.read_bytes() == data
        assert sorted(p.name for p in back.parent.iterdir()) == ["copy.arrow"], "no temp file is left"
        assert store.list_dir("pets/versions") == ["v1", "v2"]

    def test_ranges_read_only_the_bytes_asked_for(self, store: Store, tmp_path: Path) -> None:
        source = tmp_path / "blob"
        source.write_bytes(bytes(range(256)) * 40)
        store.put_file("pets/versions/v1/shard-00000.arrow", source)
        parts = store.read_ranges("pets/versions/v1/shard-00000.arrow", [(0, 4), (300, 302), (10238, 10240), (5, 5)])
        assert parts == [bytes([0, 1, 2, 3]), bytes([44, 45]), bytes([254, 255]), b""]

    def test_delete_is_idempotent(self, store: Store) -> None:
        store.write_text("pets/sources/abc", "x\n")
        store.delete("pets/sources/abc")
        store.delete("pets/sources/abc")
        assert store.read_text("pets/sources/abc") is None

    def test_a_lock_excludes_other_holders(self, store: Store) -> None:
        inside: list[int] = []
        overlaps: list[int] = []

        def hold(i: int) -> None:
            with store.lock("pets/.build-abc.lock"):
                if inside:
                    overlaps.append(i)
                inside.append(i)
                threading.Event().wait(0.01)
                inside.remove(i)

        threads = [threading.Thread(target=hold, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert overlaps == []

    @pytest.mark.parametrize("key", ["../escape", "pets/../../x", "/abs/path", "pets//refs", "pets/./x", "a\x00b"])
    def test_keys_cannot_leave_the_home(self, store: Store, key: str) -> None:
        with pytest.raises(UnsafePathError):
            store.write_text(key, "x")
        with pytest.raises(UnsafePathError):
            store.read_text(key)
