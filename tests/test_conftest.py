"""The suite's own promise (tests/conftest.py): no test touches the user's real cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import stable_explore as se
from stable_explore.catalog.names import HOME_ENV, resolve_home

REPO = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).with_name("home_probe.py")


def test_each_test_has_a_default_home_of_its_own(default_home: Path) -> None:
    assert os.environ[HOME_ENV] == str(default_home)
    assert resolve_home() == default_home
    assert not default_home.is_relative_to(Path.home() / ".cache")
    ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="here", progress=False)
    assert ds.cache_dir.is_relative_to(default_home)


def test_tests_building_with_the_default_home_leave_the_users_cache_alone(tmp_path: Path) -> None:
    # A child pytest runs home_probe.py with HOME set to a temp dir (so not even a broken fixture could reach
    # the real ~/.cache), and without STABLE_EXPLORE_HOME (so only conftest's fixture stands in the way).
    user = tmp_path / "user"
    user.mkdir()
    env = {name: value for name, value in os.environ.items() if name != HOME_ENV}
    env.update(
        HOME=str(user),
        STABLE_EXPLORE_PROBE_HOME=str(user),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    command = [sys.executable, "-m", "pytest", "-q", "--basetemp", str(tmp_path / "t"), "-p", "no:cacheprovider"]
    command += ["-p", "no:hypothesispytest", "-p", "no:benchmark", "-p", "no:anyio"]  # plugins the probes do not need
    done = subprocess.run(
        [*command, str(PROBE)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout
    # all that is in the temporary user's cache is what the second probe put there as "the user's own"
    assert [p.name for p in (user / ".cache" / "stable-explore").iterdir()] == ["earlier"]


def test_the_doctest_filter_sees_every_form_of_import() -> None:
    from conftest import imported_packages  # the repository's root conftest

    assert imported_packages("import tempfile, numpy as np, torch") == {"tempfile", "numpy", "torch"}
    assert imported_packages("from torch.utils.data import DataLoader") == {"torch"}
    assert imported_packages("import datasets.features as f") == {"datasets"}
    assert imported_packages("x = 'import torch'") == set()  # text that only mentions it
    assert imported_packages("from . import sibling") == set()
