"""Which code is ours and which is the user's: one rule for tracebacks, warnings and fingerprints.

A traceback a user sees, the line a warning points at and the code a fingerprint hashes all
leave out stable-explore's own frames (and, for fingerprints and "did the user's code raise",
the standard library's and installed packages').

Examples
--------
>>> import os
>>> in_package(__file__), is_user_file(os.__file__), is_user_file("<ipython-input-3-1a2b>")
(True, False, True)
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sysconfig
import traceback
from pathlib import Path
from types import TracebackType

__all__ = ["PACKAGE_DIR", "in_package", "is_user_file", "user_frames", "user_stacklevel"]

PACKAGE_DIR = str(Path(__file__).resolve().parent)
"""The folder of the stable_explore package."""

_LIBRARY_DIRS = tuple(
    sorted(
        {
            os.path.realpath(p)
            for key in ("stdlib", "platstdlib", "purelib", "platlib")
            if (p := sysconfig.get_paths().get(key))
        }
        | {PACKAGE_DIR}
    )
)


def in_package(filename: str) -> bool:
    """Whether ``filename`` is a file of stable-explore itself."""
    return filename == PACKAGE_DIR or filename.startswith(PACKAGE_DIR + os.sep)


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str | None) -> bool:
    """Whether code from ``filename`` is the user's own (a notebook, a script, a module beside it).

    Code in site-packages, the standard library, stable-explore itself, Cython sources (their
    frames carry relative paths), or frozen and built-in modules is library code: it is not
    fingerprinted (upgrading a library does not rebuild).
    """
    if not filename or filename.startswith("<frozen") or filename.endswith((".pyx", ".pxi")):
        return False
    if filename.startswith("<"):
        return True  # "<string>", "<ipython-input-...>", a %%stable_cache cell: typed by the user
    real = os.path.realpath(filename)
    if "site-packages" in real or "dist-packages" in real:
        return False
    return not any(real == d or real.startswith(d + os.sep) for d in _LIBRARY_DIRS)


def user_frames(tb: TracebackType | None) -> list[traceback.FrameSummary]:
    """The frames of a traceback outside stable-explore: the user's code and the libraries it called."""
    return [frame for frame in traceback.extract_tb(tb) if not in_package(frame.filename)]


def user_stacklevel() -> int:
    """The ``stacklevel`` for :func:`warnings.warn` that points at the user's line.

    That is the first frame of the user's own code above stable-explore (in the magic, the
    notebook cell, not IPython's machinery that ran it); when there is none, the first frame
    outside stable-explore.
    """
    here = inspect.currentframe()
    frame = here.f_back if here is not None else None  # the caller's frame: stacklevel 1
    level = 1
    while frame is not None and (
        in_package(frame.f_code.co_filename) or frame.f_code.co_filename == contextlib.__file__
    ):  # our context managers run inside contextlib's frames: the user's line is above both
        frame = frame.f_back
        level += 1
    outside = level
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level if frame is not None else outside
