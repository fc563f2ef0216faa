"""The docs keep up with the code: every public name, command and notebook has its place in docs/.

The docs build itself (Sphinx, warnings as errors) runs in .ci/run; these checks are the cheap half that
needs no Sphinx.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import stable_explore

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("name", sorted(set(stable_explore.__all__) - {"__version__"}))
def test_the_api_reference_documents_every_public_name(name: str) -> None:
    api = (DOCS / "api.md").read_text(encoding="utf-8")
    assert re.search(rf"^\.\. auto\w+:: stable_explore\.{re.escape(name)}$", api, re.MULTILINE), (
        f"docs/api.md has no autodoc entry for stable_explore.{name}"
    )


def test_the_command_line_page_names_every_command() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "stable_explore.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    choices = re.search(r"\{([a-z,-]+)\}", shown)
    assert choices is not None, shown
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = [c for c in choices[1].split(",") if f"`stable-explore {c}" not in page]
    assert not missing, f"docs/cli.md does not describe: {missing}"


def test_every_notebook_is_a_page() -> None:
    notebooks = sorted(p.stem for p in (DOCS.parent / "notebooks").glob("*.ipynb"))
    listed = re.findall(r"^notebooks/(\S+)$", (DOCS / "examples.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert listed == notebooks
