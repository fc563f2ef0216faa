"""Sphinx configuration of the stable-explore docs.

Build (warnings are errors; the example notebooks are executed into their pages, see notebook_pages.py)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

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

# The notebooks live in notebooks/ (where users open them); clean copies under docs/ make them pages,
# executed by this build so each page shows what running it shows (never a user's saved outputs). In CI
# ($STABLE_EXPLORE_EXECUTED_NOTEBOOKS set) the pages are the notebooks tests/test_notebooks.py executed in
# that same run, and nothing is executed twice.
sys.path.insert(0, str(Path(__file__).parent))
from notebook_pages import copy_executed_pages, copy_notebook_pages, execute_pages, executed_folder  # noqa: E402

_executed = executed_folder()
if _executed is not None:
    copy_executed_pages(ROOT / "notebooks", _executed, Path(__file__).parent / "notebooks")
    nb_execution_mode = "off"  # their outputs are this run's, from the tests
else:
    copy_notebook_pages(ROOT / "notebooks", Path(__file__).parent / "notebooks")
    nb_execution_mode = "force" if execute_pages() else "off"
nb_execution_timeout = 600
nb_execution_raise_on_error = True  # a cell that fails fails the build (CI builds with -W)
nb_execution_show_tb = True
nb_execution_in_temp = True  # run in a temp folder: nothing a notebook writes lands in docs/
# The shard browser leaves a static snapshot (the dataset's card) beside its live view: a page has no
# kernel, so it shows the snapshot and the text form of widgets (progress bars end as text).
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
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
