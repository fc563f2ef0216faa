"""Optional dependencies: imported when first needed, with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from stable_explore.errors import MissingDependencyError


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise ImportError saying which ``pip install`` provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        msg = f"{purpose} needs {module}: pip install 'stable-explore[{extra}]'"
        raise MissingDependencyError(msg) from exc
