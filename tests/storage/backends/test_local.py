"""The local store passes the storage conformance suite every store runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from stable_explore.storage.backends.local import LocalStore
from stable_explore.testing.store import StoreConformance


class TestLocalStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> LocalStore:
        return LocalStore(tmp_path / "home")
