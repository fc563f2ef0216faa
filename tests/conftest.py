"""Shared test helpers: real images, real caches in tmp_path, and a private default home for every test."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import CachedDataset, ClassLabel, Features, Image, Value
from stable_explore.catalog.names import HOME_ENV
from stable_explore.storage.write.writer import write_sharded_arrow_cache
from stable_explore.testing import write_stable_datasets_v1_cache  # noqa: F401 - tests import it from here
from tests.s3server import S3Server, seaweedfs

if TYPE_CHECKING:
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta

NAMES = ["cat", "dog", "bird"]


@pytest.fixture(autouse=True)
def default_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's default home (``$STABLE_EXPLORE_HOME``): a fresh temp dir, never the user's real cache.

    Subprocesses a test starts inherit it too. Tests that need a home of their own still pass ``home=``.
    """
    path = tmp_path_factory.mktemp("default-home")
    monkeypatch.setenv(HOME_ENV, str(path))
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A catalog home inside the test's tmp_path (created by the first build)."""
    return tmp_path / "home"


def jpeg_bytes(seed: int, size: int = 16) -> bytes:
    """A small, distinct JPEG."""
    rng = np.random.default_rng(seed)
    array = rng.integers(0, 255, (size, size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(array).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


@pytest.fixture(scope="session")
def jpegs() -> list[bytes]:
    return [jpeg_bytes(i) for i in range(64)]


@pytest.fixture
def pet_features() -> Features:
    return Features(image=Image(), label=ClassLabel(names=NAMES), score=Value("float32"), name=Value("string"))


def pet_rows(n: int, jpegs: list[bytes], *, start: int = 0) -> Iterator[tuple[str, dict]]:
    for i in range(start, start + n):
        yield f"pet-{i:05d}", {"image": jpegs[i % len(jpegs)], "label": NAMES[i % 3], "score": i / 2, "name": f"n{i}"}


def write_pets(
    tmp_path: Path, pet_features: Features, jpegs: list[bytes], n: int = 100, **kwargs: object
) -> ShardedCacheMeta:
    """``n`` pet rows written with the shard writer to ``tmp_path / "pets"`` (no catalog)."""
    return write_sharded_arrow_cache(pet_rows(n, jpegs), pet_features, tmp_path / "pets", **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def pets(tmp_path: Path, pet_features: Features, jpegs: list[bytes]) -> CachedDataset:
    """300 rows in 6 shards of 50, in a catalog at tmp_path."""
    return se.build(
        pet_rows(300, jpegs), pet_features, name="pets", home=tmp_path, progress=False, batch_size=50, shard_size=1
    )


@pytest.fixture
def big_shards(tmp_path: Path) -> CachedDataset:
    """2,000 rows in 2 shards of 1,000 (rows long enough for their unchanged runs to be reused in place)."""
    features = Features(label=ClassLabel(names=NAMES), x=Value("int64"))
    rows = ((f"k{i:04d}", {"label": i % 3, "x": i}) for i in range(2000))
    return se.build(rows, features, name="big", home=tmp_path, progress=False, shard_size="20KB", batch_size=1000)


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3 server (SeaweedFS on loopback, free ports) with a bucket "team", shared by the session."""
    pytest.importorskip("obstore")
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        server.create_bucket("team")
        yield server


@pytest.fixture
def s3_env(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The server, with its credentials and endpoint in this test's environment (as users set them)."""
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    return s3


QUIET_DASK = {
    "distributed.worker.profile.enabled": False,  # a stack sample every 10 ms in each worker
    "distributed.admin.tick.interval": "1s",  # the event loop's watchdog, every 20 ms
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}
"""Dask settings for a session's cluster that idles between the tests that use it: an idle cluster of two workers
took ~9% of a core (1.8 s of CPU in 20 s), for the rest of the session; with these, 1.2%. The workers receive them
from this process's configuration as they start."""


@contextlib.contextmanager
def local_dask_executor() -> Iterator[Executor]:
    """A Dask client's executor over two worker processes on loopback (no dashboard port of a fixed number)."""
    distributed = pytest.importorskip("distributed")
    import dask

    with dask.config.set(QUIET_DASK):
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        )
        with cluster, distributed.Client(cluster) as client:
            yield client.get_executor()


@pytest.fixture(scope="session")
def dask_executor() -> Iterator[Executor]:
    """A Dask client's executor over :func:`local_dask_executor`, started once for the session's tests."""
    with local_dask_executor() as executor:
        yield executor
