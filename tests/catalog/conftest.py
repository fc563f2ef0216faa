"""Fixtures the catalog's bucket tests share."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from stable_explore.storage.backends.read_cache import CACHE_ENV

if TYPE_CHECKING:
    from tests.s3server import S3Server

_prefixes = itertools.count()


@pytest.fixture
def bucket(s3_env: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    """A home under a prefix of the test server's bucket no other test uses, with a read cache of this test's own."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "read-cache"))
    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_").replace("_", "-")
    return f"s3://team/{module}-{os.getpid()}-{next(_prefixes)}"
