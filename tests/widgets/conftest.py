"""The JupyterLab server and Chromium that every lab test module shares (tests/lab.py's SharedLab), and the
Notebook 7 server its Notebook 7 modules share (``notebook7_lab``).

They are started, without waiting for them, as soon as the session has collected a test that uses them
(:func:`pytest_collection_finish`): their start (~6 s for the server, ~3-9 s for JupyterLab's boot in the
page, three times that on a loaded machine) overlaps the tests run before the first lab test, where the
first lab module of each worker used to wait for it in its setup.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab import CHROMIUM, LabStarter, SharedLab

_STARTER = pytest.StashKey[LabStarter]()


def _can_start() -> bool:
    return Path(CHROMIUM).exists() and importlib.util.find_spec("playwright") is not None


def _factory(config: pytest.Config) -> pytest.TempPathFactory:
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]  # what tmp_path_factory is
    return factory


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the session's lab ahead when a collected test uses it (on an xdist worker: when any does, as each
    worker collects every test; the lab modules are spread over both workers)."""
    if session.config.option.collectonly or not _can_start():
        return
    used = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    if "lab_server" not in used:
        return
    factory = _factory(session.config)
    notebook7 = factory.mktemp("shared-notebook7") if "notebook7_lab" in used else None
    try:
        session.config.stash[_STARTER] = LabStarter(factory.mktemp("shared-lab"), factory.getbasetemp(), notebook7)
    except Exception:  # the lab tests' fixture starts it again, and fails there with this error
        return


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop a lab started ahead that no test used (the fixture stops one that was used)."""
    starter = session.config.stash.get(_STARTER, None)
    if starter is not None:
        starter.close()


@pytest.fixture(scope="session")
def lab_server(request: pytest.FixtureRequest) -> Iterator[SharedLab]:
    """One JupyterLab and one headless Chromium for the session; a module opens its notebook with
    ``lab_server.notebook(root, name, cells)`` (its own folder, kernel, home, browser context and workspace)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")
    starter = request.config.stash.get(_STARTER, None)
    if starter is None:  # a session that collected no lab test first (e.g. a test id run alone)
        factory = _factory(request.config)
        starter = request.config.stash[_STARTER] = LabStarter(factory.mktemp("shared-lab"), factory.getbasetemp())
    try:
        yield starter.ready()
    finally:
        starter.close()


@pytest.fixture(scope="session")
def notebook7_lab(lab_server: SharedLab) -> SharedLab:
    """The session's lab, for a module that opens its notebook on Notebook 7 (``notebook7_lab.notebook7(...)``):
    a session that collects such a module starts a Notebook 7 server ahead too, which those modules share."""
    return lab_server
