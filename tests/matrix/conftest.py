"""The matrix's shared state: one build per (feature set, home) for the whole session, the homes, a Dask cluster.

Every cell reads the shared build and writes only new versions (saves are content-addressed, so two cells that
save the same edit share it); cells that delete (gc) build a dataset of their own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import stable_explore as se
from stable_explore.storage.backends.read_cache import CACHE_ENV
from tests.conftest import local_dask_executor
from tests.matrix.model import FEATURE_SETS, ROWS, FeatureSet, model, rows

if TYPE_CHECKING:
    from tests.s3server import S3Server

HOMES = ["local", "s3"]


@dataclass
class Homes:
    """The two homes of the session: a folder and a prefix of the SeaweedFS bucket."""

    local: Path
    s3: str
    built: dict[tuple[str, str], se.CachedDataset] = field(default_factory=dict)

    def url(self, home: str) -> str:
        return str(self.local) if home == "local" else self.s3


@dataclass(frozen=True)
class Cell:
    """One (feature set, home): the shared build, the home's URL, and the model of its rows."""

    fset: FeatureSet
    home_name: str
    home: str
    ds: se.CachedDataset

    @property
    def id(self) -> str:
        return f"{self.fset.name}-{self.home_name}"

    def model(self) -> list[dict[str, Any]]:
        return model(self.fset.name)


@pytest.fixture(scope="session")
def homes(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Homes:
    return Homes(tmp_path_factory.mktemp("matrix-home"), "s3://team/matrix")


@pytest.fixture(autouse=True)
def matrix_s3_env(s3: S3Server, homes: Homes, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bucket's credentials and endpoint, for every matrix cell (and the CLI and workers they start)."""
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(CACHE_ENV, str(homes.local.parent / "matrix-read-cache"))


def build(fset: FeatureSet, home: str, **options: Any) -> se.CachedDataset:
    """The feature set's rows as a version of the dataset named after it (three shards of 8 rows)."""
    options.setdefault("name", fset.name)
    return se.build(
        rows,
        fset.features,
        args=(fset.name, list(range(ROWS))),
        home=home,
        progress=False,
        batch_size=8,
        shard_size=1,
        **options,
    )


def cell_of(homes: Homes, fset_name: str, home_name: str) -> Cell:
    key = (fset_name, home_name)
    fset = FEATURE_SETS[fset_name]
    if key not in homes.built:
        homes.built[key] = build(fset, homes.url(home_name))
    return Cell(fset, home_name, homes.url(home_name), homes.built[key])


def cell_params(fsets: list[str] | None = None, marks: dict[str, Any] | None = None) -> list[Any]:
    """``pytest.param``s of (feature set, home) with readable ids; ``marks`` by cell id, feature set or home."""
    marks = marks or {}
    out = []
    for name in fsets or list(FEATURE_SETS):
        for home in HOMES:
            mark = marks.get(f"{name}-{home}", marks.get(name, marks.get(home, ())))
            out.append(pytest.param((name, home), id=f"{name}-{home}", marks=mark))
    return out


@pytest.fixture
def cell(request: pytest.FixtureRequest, homes: Homes) -> Cell:
    """The cell a test is parametrized with: ``@pytest.mark.parametrize("cell", cell_params(), indirect=True)``."""
    fset_name, home_name = request.param
    return cell_of(homes, fset_name, home_name)


@pytest.fixture(scope="session")
def dask_executor(s3: S3Server) -> Iterator[Executor]:
    """Two Dask worker processes on loopback, for the whole session (they inherit the bucket's environment)."""
    import os

    with contextlib.ExitStack() as stack:
        saved = {name: os.environ.get(name) for name in s3.env}
        os.environ.update(s3.env)  # the workers start now and keep this environment
        try:
            executor = stack.enter_context(local_dask_executor())
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        yield executor
