"""Issue 22: the chaos soak, bounded to 25 seconds in CI (``STABLE_EXPLORE_SOAK_SECONDS=60`` runs it for
a minute, ``benchmarks/soak_bucket.py --minutes N`` runs it long)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from stable_explore.storage.backends.read_cache import CACHE_ENV
from tests.reliability.bucket_soak import soak
from tests.s3server import S3Server, seaweedfs

pytest.importorskip("obstore")

SECONDS = float(os.environ.get("STABLE_EXPLORE_SOAK_SECONDS", "25"))
"""How long the participants run. 25 s with faults 1-3 s apart and seed 26 give two SIGKILLs and two server
stops, one shorter than the 10 s request timeout and one longer (a 60 s soak with 2-6 s gaps had six faults
of the same kinds, at 68 s of CI time)."""


@pytest.fixture
def own_server(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """A server of this test alone: the soak stops it (SIGSTOP) again and again."""
    with seaweedfs(tmp_path_factory.mktemp("soak-seaweedfs"), volumes=4) as server:
        server.create_bucket("soak")
        for name, value in server.env.items():
            monkeypatch.setenv(name, value)
        yield server


@pytest.mark.slow
def test_a_soak_of_machines_and_faults_on_a_bucket_loses_nothing(
    own_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "checker"))
    # server stops of 4-12 s: some shorter than the 10 s request timeout (calls wait), some longer (calls fail)
    report = soak(
        f"s3://soak/ci-{os.getpid()}",
        own_server.pid,
        tmp_path,
        seconds=SECONDS,
        seed=26,
        stop_server=(4, 12),
        gap=(1, 3),
    )
    summary = report.to_json()
    assert report.lost == [], summary
    assert report.dangling == [], summary
    assert report.wrong == 0, summary
    assert report.raw == [], summary
    assert report.hangs == [], summary
    assert sum(report.faults.values()) >= 3, summary
    for kind in ("save", "build", "gc", "read"):
        assert report.operations.get(kind, 0) >= 1, summary
