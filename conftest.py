"""Session rules for every test and doctest: optional packages named, and no skips in CI.

A doctest that shows an optional package at work (torch's DataLoader) is skipped, with the install to
make it run, where that package is missing: a user running ``pytest`` without the extra is not told
that our code is broken. CI installs every extra, and with ``STABLE_EXPLORE_NO_SKIPS=1`` (``.ci/run``
sets it) any skipped test fails the run, so a skip can never hide a test that stopped running.
"""

from __future__ import annotations

import ast
import importlib.util
import os

import pytest

_DOCTEST_EXTRAS = {
    "torch": "pip install torch  (the 'torch' extra)",
    "datasets": "pip install datasets  (the 'hf' extra)",
    "lance": "pip install pylance  (the 'lance' extra)",
}
"""Optional packages a doctest may import, and how to install them."""


def imported_packages(source: str) -> set[str]:
    """The top-level packages an example's code imports (``import a.b, c as d`` and ``from e import f``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()  # the doctest itself will report it
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a doctest whose example imports an optional package that is not installed here."""
    if not isinstance(item, pytest.DoctestItem) or item.dtest is None:
        return
    imported: set[str] = set()
    for example in item.dtest.examples:
        imported |= imported_packages(example.source)
    for package, install in _DOCTEST_EXTRAS.items():
        if package in imported and importlib.util.find_spec(package) is None:
            pytest.skip(f"this example needs {package}: {install}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI, a skipped test fails the run (pytest itself would pass it)."""
    if os.environ.get("STABLE_EXPLORE_NO_SKIPS") != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped and session.exitstatus == 0:
        reporter.ensure_newline()
        for report in skipped:
            reporter.write_line(f"CI: skipped, which CI does not allow: {report.nodeid}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
