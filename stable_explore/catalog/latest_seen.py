"""Where ``latest`` pointed when this process last looked: what a repr shows, without a request per repr.

A dataset's repr says whether it is the latest version. Reading ``refs/latest`` for it would
cost one request per repr on a bucket (a notebook shows reprs often), so the value this process
last read or wrote is kept for :data:`FRESH_SECONDS` per dataset: a repr reads the home at most
once in that time. Refs this process moves are seen at once; another machine's move shows
within :data:`FRESH_SECONDS`. ``CachedDataset.latest_version`` still reads the ref every time.

Examples
--------
>>> note_latest("/home/me/cache", "pets", "1a2b3c4d5e6f7a8b")
>>> seen_latest("/home/me/cache", "pets", lambda: "read again")
'1a2b3c4d5e6f7a8b'
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

__all__ = ["FRESH_SECONDS", "note_latest", "seen_latest"]

FRESH_SECONDS = 5.0
"""How long a seen ``latest`` is shown without reading the ref again."""

_LIMIT = 256  # datasets remembered; the least recently seen is forgotten first
_seen: OrderedDict[tuple[str, str], tuple[str | None, float]] = OrderedDict()
_lock = threading.Lock()


def _key(home: Path | str, name: str) -> tuple[str, str]:
    """One key per home however it is spelled (a folder relative, with ``~`` or a link; a URL as it is)."""
    text = str(home)
    return (text if "://" in text else os.path.realpath(Path(text).expanduser()), name)


def note_latest(home: Path | str, name: str, version_id: str | None) -> None:
    """Remember that ``latest`` of ``name`` in ``home`` is ``version_id`` now (it was just read or written)."""
    key = _key(home, name)
    with _lock:
        _seen[key] = (version_id, time.monotonic())
        _seen.move_to_end(key)
        while len(_seen) > _LIMIT:
            _seen.popitem(last=False)


def seen_latest(home: Path | str, name: str, read: Callable[[], str | None]) -> str | None:
    """``latest`` of ``name`` as last seen, if seen within :data:`FRESH_SECONDS`; else ``read()`` (and remember)."""
    with _lock:
        hit = _seen.get(_key(home, name))
    if hit is not None and time.monotonic() - hit[1] < FRESH_SECONDS:
        return hit[0]
    value = read()
    note_latest(home, name, value)
    return value
