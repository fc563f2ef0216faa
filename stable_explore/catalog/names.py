"""Names of datasets, tags and version ids, and where the catalog's home is.

Examples
--------
>>> check_name("pets-v2")
'pets-v2'
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from stable_explore.errors import InvalidNameError

__all__ = ["HOME_ENV", "LATEST", "NAME_PATTERN", "check_name", "resolve_home"]

HOME_ENV = "STABLE_EXPLORE_HOME"
LATEST = "latest"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # fullmatch only: "$" accepts a trailing newline


def resolve_home(home: str | Path | None = None) -> Path:
    """The catalog root: ``home``, else ``$STABLE_EXPLORE_HOME``, else ``~/.cache/stable-explore``."""
    if home is not None:
        return Path(home).expanduser()
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "stable-explore"


def check_name(name: Any, what: str = "dataset name") -> str:
    """Names and tags are plain file names: letters, digits, ``.``, ``_``, ``-``."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name in (".", ".."):
        msg = (
            f"{what} must start with a letter or digit and use only letters, digits, '.', '_' and '-' "
            f"(at most 128 characters), got {name!r}"
        )
        raise InvalidNameError(msg)
    return name
