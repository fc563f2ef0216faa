"""The example notebooks as docs pages: clean copies of ``notebooks/``, executed when the docs are built.

A user who runs a notebook in ``notebooks/`` and saves it keeps its outputs there (their data, their
paths); those must never reach the published docs. So each page is a copy with every output and
execution count removed, and the docs build executes it afresh (each notebook makes its own temp
home, so the build touches no catalog). ``STABLE_EXPLORE_DOCS_EXECUTE=0`` skips the execution, for
a quick local build of the prose.

CI executes each notebook once: ``tests/test_notebooks.py`` runs every one in a fresh kernel, checks its
outputs, and, when ``$STABLE_EXPLORE_EXECUTED_NOTEBOOKS`` names a folder, writes the executed notebook
there. A build with that variable set makes its pages of those (their outputs from that same run) and
executes nothing; a notebook with no executed copy there, or one executed from other cells, fails it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = [
    "EXECUTED_ENV",
    "clean_copy",
    "copy_executed_pages",
    "copy_notebook_pages",
    "execute_pages",
    "executed_folder",
]

EXECUTED_ENV = "STABLE_EXPLORE_EXECUTED_NOTEBOOKS"
"""Environment variable: a folder of executed notebooks (tests/test_notebooks.py writes them) the pages are made of."""


def clean_copy(notebook: Path, copy: Path) -> bool:
    """Write ``notebook`` to ``copy`` without outputs or execution counts; True when the copy changed."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in data.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    data.get("metadata", {}).pop("widgets", None)  # saved widget state belongs to the user's session
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    if copy.exists() and copy.read_text(encoding="utf-8") == text:
        return False  # unchanged: Sphinx keeps its cached page
    copy.write_text(text, encoding="utf-8")
    return True


def copy_notebook_pages(source: Path, pages: Path) -> list[Path]:
    """Clean copies of every ``source/*.ipynb`` in ``pages`` (pages of notebooks since removed go too)."""
    pages.mkdir(exist_ok=True)
    wanted = sorted(source.glob("*.ipynb"))
    for stale in set(pages.glob("*.ipynb")) - {pages / n.name for n in wanted}:
        stale.unlink()
    for notebook in wanted:
        clean_copy(notebook, pages / notebook.name)
    return [pages / n.name for n in wanted]


def execute_pages() -> bool:
    """Whether the build executes the notebook pages (the default; ``STABLE_EXPLORE_DOCS_EXECUTE=0`` skips)."""
    return os.environ.get("STABLE_EXPLORE_DOCS_EXECUTE", "1") != "0"


def executed_folder() -> Path | None:
    """The folder ``$STABLE_EXPLORE_EXECUTED_NOTEBOOKS`` names, or None when it is unset (the build executes)."""
    raw = os.environ.get(EXECUTED_ENV, "").strip()
    return Path(raw) if raw else None


def _code(data: dict) -> list[str]:
    """The sources of a notebook's code cells (a list of lines or one string, as nbformat allows)."""
    return [
        "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for cell in data.get("cells", [])
        if cell.get("cell_type") == "code"
    ]


def copy_executed_pages(source: Path, executed: Path, pages: Path) -> list[Path]:
    """Pages of every ``source/*.ipynb`` made of its executed copy in ``executed``, outputs kept.

    Raises ``FileNotFoundError`` naming a notebook that has no executed copy (its run failed, or the tests
    did not run), and ``ValueError`` naming one whose copy was executed from other code cells (a stale copy).
    """
    pages.mkdir(exist_ok=True)
    wanted = sorted(source.glob("*.ipynb"))
    for stale in set(pages.glob("*.ipynb")) - {pages / n.name for n in wanted}:
        stale.unlink()
    for notebook in wanted:
        ran = executed / notebook.name
        if not ran.is_file():
            msg = (
                f"{ran}: notebooks/{notebook.name} has no executed copy in {EXECUTED_ENV}={executed}; "
                f"expected tests/test_notebooks.py::test_notebook_runs_end_to_end[{notebook.name}] to have "
                f"written it (it does once the notebook ran and passed its checks). Run that test with the "
                f"variable set, or unset {EXECUTED_ENV} to have the build execute the notebooks itself"
            )
            raise FileNotFoundError(msg)
        data = json.loads(ran.read_text(encoding="utf-8"))
        if _code(data) != _code(json.loads(notebook.read_text(encoding="utf-8"))):
            msg = (
                f"{ran}: its code cells differ from notebooks/{notebook.name}'s, so its outputs are not that "
                f"notebook's; run tests/test_notebooks.py again with {EXECUTED_ENV} set, or unset it to have "
                f"the build execute the notebooks itself"
            )
            raise ValueError(msg)
        for cell in data.get("cells", []):
            cell.get("metadata", {}).pop("execution", None)  # the run's timings: no part of the page
        text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
        page = pages / notebook.name
        if not page.exists() or page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")
    return [pages / n.name for n in wanted]
