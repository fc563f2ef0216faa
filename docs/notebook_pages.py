"""The example notebooks as docs pages: clean copies of ``notebooks/``, executed when the docs are built.

A user who runs a notebook in ``notebooks/`` and saves it keeps its outputs there (their data, their
paths); those must never reach the published docs. So each page is a copy with every output and
execution count removed, and the docs build executes it afresh (each notebook makes its own temp
home, so the build touches no catalog). ``STABLE_EXPLORE_DOCS_EXECUTE=0`` skips the execution, for
a quick local build of the prose.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["clean_copy", "copy_notebook_pages", "execute_pages"]


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
