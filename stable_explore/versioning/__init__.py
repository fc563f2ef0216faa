"""Versions from versions: edits saved as a new version (``Draft``), and the difference of two versions (``Diff``).

The names load lazily, each from its own module: a save (``ds.relabel(...).save()``) imports
``edits`` and what it needs, not ``compare`` and the display code a diff renders with. Loading
them all cost the first save of a process 21-41 ms where Python compiles from source (no ``.pyc``
files, as under ``PYTHONDONTWRITEBYTECODE``) and 5-13 ms with them; the edit code alone, half.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stable_explore.versioning.compare import Diff, compare
    from stable_explore.versioning.edits import Draft, PendingEdits
    from stable_explore.versioning.row_diff import RowDiff

__all__ = ["Diff", "Draft", "PendingEdits", "RowDiff", "compare"]

_HOMES = {
    "Diff": "compare",
    "compare": "compare",
    "Draft": "edits",
    "PendingEdits": "edits",
    "RowDiff": "row_diff",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """The package module: its ``compare`` stays the function when Python binds the submodule of that name here."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "compare" and isinstance(value, types.ModuleType):  # the import of versioning.compare ending
            value = value.compare
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
