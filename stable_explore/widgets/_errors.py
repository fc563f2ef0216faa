"""What a widget does with an error raised while it answers its page: a status line, and the log.

A :class:`~stable_explore.errors.StableExploreError` is the user's to fix (a wrong option, a row out of
range, a version gc took): the status line says it and the log keeps one line at INFO. Anything else is a
bug of ours or of a library under us: the status line still says it (the page never waits on a reply
that will not come), and the log gets the traceback at ERROR. The ``stable_explore`` logger is silent
until the user configures logging (the package adds a ``NullHandler``).

Examples
--------
>>> from stable_explore.errors import InvalidOptionError
>>> try:
...     raise InvalidOptionError("no entry 9")
... except InvalidOptionError as exc:
...     error_status(exc, "issues panel", "open")
'error: InvalidOptionError: no entry 9'
"""

from __future__ import annotations

import logging

from stable_explore.errors import StableExploreError

__all__ = ["error_status", "logger"]

logger = logging.getLogger("stable_explore.widgets")


def error_status(exc: BaseException, widget: str, action: str) -> str:
    """The status line for ``exc``, raised while ``widget`` did ``action``; logs it (call inside ``except``)."""
    text = f"error: {type(exc).__name__}: {exc}"
    if isinstance(exc, StableExploreError):
        logger.info("%s: %s refused: %s", widget, action, text)
    else:
        logger.exception("%s: %s failed with an unexpected error", widget, action)
    return text
