"""Byte sizes in powers of 1024, with the labels that say so: parse ``"256MiB"`` (or ``"256MB"``), print ``1.5 MiB``.

Sizes are binary throughout: ``"MB"`` in an option is read as MiB, as most notebook
users mean it, and every size printed says ``KiB``, ``MiB``, ``GiB``.

Examples
--------
>>> parse_size("256MB"), parse_size("1.5 GiB"), parse_size(1024)
(268435456, 1610612736, 1024)
>>> format_size(1536), format_size(3_500_000)
('1.5 KiB', '3.3 MiB')
"""

from __future__ import annotations

import re

from stable_explore.errors import InvalidArgumentTypeError, InvalidOptionError

_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(size: int | str) -> int:
    """Bytes from an int or a string such as ``"256MB"``, ``"64 KiB"``, ``"1.5GiB"`` (powers of 1024)."""
    if isinstance(size, bool):
        msg = f"a size must be a number of bytes or a string like '256MB', got {size!r}"
        raise InvalidArgumentTypeError(msg)
    if isinstance(size, int):
        value = size
    else:
        match = _PATTERN.match(str(size))
        if not match:
            msg = f"a size must be a number of bytes or a string like '256MB', got {size!r}"
            raise InvalidOptionError(msg)
        value = int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    if value <= 0:
        msg = f"a size must be positive, got {size!r}"
        raise InvalidOptionError(msg)
    return value


def format_size(nbytes: int) -> str:
    """Human-readable bytes, in powers of 1024 with binary labels (``KiB``, ``MiB``, ...)."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError  # unreachable
