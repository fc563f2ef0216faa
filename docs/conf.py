"""Sphinx configuration of the stable-explore docs.

Build (warnings are errors, notebooks are rendered as committed, not executed; they run in the tests)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document this checkout, whichever copy of the package is installed

import stable_explore  # noqa: E402 - needs the path above

project = "stable-explore"
author = "the stable-explore authors"
copyright = "the stable-explore authors; Apache-2.0"
release = version = stable_explore.__version__

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
nitpicky = False  # type hints name private and third-party classes that have no page here

# The notebooks live in notebooks/ (where users open them); a copy under docs/ makes them pages.
NOTEBOOK_PAGES = Path(__file__).parent / "notebooks"
NOTEBOOK_PAGES.mkdir(exist_ok=True)
for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
    copy = NOTEBOOK_PAGES / notebook.name
    if not copy.exists() or copy.read_bytes() != notebook.read_bytes():
        shutil.copy2(notebook, copy)

# MyST: Markdown pages and notebooks, never executed here.
nb_execution_mode = "off"
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# API reference from the numpy-style docstrings.
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "pydata_sphinx_theme"
html_title = f"stable-explore {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False


# Napoleon reads a property docstring's first line "X: Y" as "type: description". Ours are sentences ("The
# version id: a hash of ..."), and autodoc shows the annotated type anyway: keep them as written.
_PROPERTY_DOCSTRINGS: dict[str, list[str]] = {}


def _remember_property_docstring(app, what, name, obj, options, lines):
    if what == "property":
        _PROPERTY_DOCSTRINGS[name] = list(lines)


def _restore_property_docstring(app, what, name, obj, options, lines):
    original = _PROPERTY_DOCSTRINGS.pop(name, None)
    if original is not None and any(line.startswith(":type:") for line in lines):
        lines[:] = original


def setup(app):
    app.connect("autodoc-process-docstring", _remember_property_docstring, priority=400)  # before Napoleon (500)
    app.connect("autodoc-process-docstring", _restore_property_docstring, priority=600)  # after it
