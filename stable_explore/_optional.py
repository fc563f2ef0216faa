"""Optional dependencies: imported when first needed, with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from stable_explore.errors import MissingDependencyError


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise ImportError saying which ``pip install`` provides it."""
    try:
        imported = importlib.import_module(module)
    except ImportError as exc:
        msg = f"{purpose} needs {module}: pip install 'stable-explore[{extra}]'"
        raise MissingDependencyError(msg) from exc
    if module == "lance":
        from stable_explore._lance_fork import quiet_lance_fork_warning

        quiet_lance_fork_warning()  # our DataLoader workers never use Lance: see _lance_fork
    return imported
