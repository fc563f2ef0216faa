"""Lock files that say who holds them: waiting names the holder, can time out, and takes over from a dead one.

A lock is an exclusive ``flock`` on a file beside what it guards. The holder writes one JSON line into
the file (pid, host, since when), so a process that waits can say who it waits for. The holder
removes the file when it lets go; a waiter that got the lock of a file that was removed meanwhile
(its inode no longer at the path) lets go and tries again, so removing a lock file is safe whenever
one holds it, which is how ``gc`` sweeps lock files of builds long finished.

The kernel releases the ``flock`` of a process that dies, so a killed holder never blocks anyone;
the next holder finds the dead holder's line still in the file and says it took over. A lock still
held although its recorded holder is dead on this host (a child process inherited the descriptor
and outlived it) is taken over by replacing the file.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> path = Path(tempfile.mkdtemp()) / ".build-abc.lock"
>>> with hold_lock(path):
...     holder_of(path).startswith("process ")
True
>>> path.exists()   # removed when let go
False
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import errno
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from stable_explore._canonical import parse_json
from stable_explore.errors import InvalidOptionError, LockTimeoutError
from stable_explore.storage.backends.fsutil import writing

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: filelock's msvcrt lock, without holder records
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "LOCK_TIMEOUT_ENV",
    "NOTICE_AFTER_SECONDS",
    "REFS_LOCK_TIMEOUT",
    "holder_of",
    "hold_lock",
    "check_lock_timeout",
    "lock_timeout",
    "try_remove_lock",
    "waiting_at_most",
]

NOTICE_AFTER_SECONDS = 5.0
"""How long a waiter waits before it says who holds the lock."""

LOCK_TIMEOUT_ENV = "STABLE_EXPLORE_LOCK_TIMEOUT"
"""Environment variable: seconds to wait for any lock (a dataset's refs, a build) before giving up."""

REFS_LOCK_TIMEOUT = 300.0
"""How long a save, tag, build or gc waits for a dataset's refs lock by default (it is held for moments)."""


_UNSET = object()
_call_timeout: contextvars.ContextVar[object] = contextvars.ContextVar("stable_explore_lock_timeout", default=_UNSET)


def check_lock_timeout(seconds: object) -> float | None:
    """``seconds`` as a call's ``lock_timeout=`` takes it: a number >= 0, or None (wait as the default says).

    Raises
    ------
    InvalidOptionError
        Anything else (a bool, a string, a negative number), named.

    Examples
    --------
    >>> check_lock_timeout(5), check_lock_timeout(None)
    (5.0, None)
    """
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
        msg = f"lock_timeout must be a number of seconds >= 0 (or None to wait), got {seconds!r}"
        raise InvalidOptionError(msg)
    return float(seconds)


@contextlib.contextmanager
def waiting_at_most(seconds: float | None) -> Iterator[None]:
    """For the block (in this thread), every lock a call takes waits at most ``seconds``; None changes nothing.

    A public call's ``lock_timeout=`` goes here, so that it bounds each lock the call takes on the
    way (a build's lock, a dataset's refs lock, a bucket's lease), not only the first. It comes
    before ``$STABLE_EXPLORE_LOCK_TIMEOUT`` and the defaults (see :func:`lock_timeout`).

    Examples
    --------
    >>> with waiting_at_most(2):
    ...     lock_timeout(300.0)
    2.0
    """
    checked = check_lock_timeout(seconds)
    if checked is None:
        yield
        return
    token = _call_timeout.set(checked)
    try:
        yield
    finally:
        _call_timeout.reset(token)


def lock_timeout(default: float | None) -> float | None:
    """The call's ``lock_timeout=`` (:func:`waiting_at_most`), else ``$STABLE_EXPLORE_LOCK_TIMEOUT``, else ``default``.

    Examples
    --------
    >>> lock_timeout(300.0) if not os.environ.get(LOCK_TIMEOUT_ENV) else 300.0
    300.0
    """
    given = _call_timeout.get()
    if isinstance(given, float):
        return given
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        msg = f"{LOCK_TIMEOUT_ENV} must be a number of seconds >= 0, got {raw!r}"
        raise InvalidOptionError(msg)
    return value


Notify = Callable[[str], None]

_POLL_FIRST, _POLL_MAX = 0.005, 0.25
_held_here: dict[str, tuple[int, int, int]] = {}  # path -> (thread id, depth, fd): re-entrant within a thread
_registry_lock = threading.Lock()


def _record() -> str:
    since = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since}) + "\n"


def _read_record(path: Path) -> dict[str, object] | None:
    try:
        raw = parse_json(path.read_bytes().decode("utf-8") or "null")
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def _describe(record: dict[str, object] | None) -> str:
    if record is None:
        return "an unknown process (the lock file records no holder)"
    return f"process {record.get('pid')} on {record.get('host')}, since {record.get('since')}"


def holder_of(path: Path) -> str:
    """Who holds (or last held) the lock at ``path``, as its holder recorded it."""
    return _describe(_read_record(Path(path)))


def _dead_here(record: dict[str, object] | None) -> bool:
    """Whether the recorded holder is a process of this host that no longer exists."""
    if record is None or record.get("host") != socket.gethostname():
        return False
    pid = record.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.ESRCH
    return False


def _try_once(path: Path) -> int | None:
    """The fd of ``path`` locked by this process, or None when another process holds it."""
    assert fcntl is not None
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    try:
        same = os.fstat(fd).st_ino == path.stat().st_ino
    except FileNotFoundError:
        same = False
    if not same:  # the file was removed (or replaced) after we opened it: this lock guards nothing
        os.close(fd)
        return _try_once(path)
    return fd


@contextlib.contextmanager
def hold_lock(
    path: Path,
    *,
    timeout: float | None = None,
    notify: Notify | None = None,
    notice_after: float | None = None,
) -> Iterator[None]:
    """Hold the exclusive lock ``path`` for the block; re-entrant within one thread.

    Parameters
    ----------
    path:
        The lock file (created if missing, removed when let go).
    timeout:
        Seconds to wait at most (None: as long as it takes); then :class:`LockTimeoutError`.
    notify:
        Called with a message after ``notice_after`` seconds of waiting (who holds the lock, since
        when), and when a dead holder's lock is taken over. None: the messages are not given.
    notice_after:
        Seconds of waiting before the first message (default :data:`NOTICE_AFTER_SECONDS`).

    Raises
    ------
    LockTimeoutError
        The lock was not free within ``timeout``; the error names the lock file, its holder and the wait.
    CacheWriteError
        The lock file cannot be created (a read-only or full disk).
    """
    path = Path(path)
    key = str(path.absolute())
    me = threading.get_ident()
    with _registry_lock:
        held = _held_here.get(key)
        if held is not None and held[0] == me:
            _held_here[key] = (me, held[1] + 1, held[2])
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _registry_lock:
                thread, depth, fd = _held_here[key]
                _held_here[key] = (thread, depth - 1, fd)
        return
    if fcntl is None:  # pragma: no cover - Windows
        from filelock import FileLock

        with FileLock(str(path), timeout=-1 if timeout is None else timeout):
            yield
        return
    fd = _acquire(path, timeout, notify, NOTICE_AFTER_SECONDS if notice_after is None else notice_after)
    with _registry_lock:
        _held_here[key] = (me, 1, fd)
    try:
        yield
    finally:
        with _registry_lock:
            del _held_here[key]
        with contextlib.suppress(OSError):
            path.unlink()  # while still held: a waiter that gets the old file sees it is gone and retries
        os.close(fd)


def _acquire(path: Path, timeout: float | None, notify: Notify | None, notice_after: float) -> int:
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    delay = _POLL_FIRST
    told = False
    while True:
        with writing(path):
            try:
                fd = _try_once(path)
            except FileNotFoundError:  # gc removed an empty dataset folder meanwhile: make it again
                path.parent.mkdir(parents=True, exist_ok=True)
                continue
        if fd is not None:
            break
        record = _read_record(path)
        if _dead_here(record):  # held by a descendant that outlived the recorded holder
            if notify is not None:
                notify(f"taking over the lock {path} from {_describe(record)}, which is gone")
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        waited = time.monotonic() - started
        if timeout is not None and waited >= timeout:
            raise LockTimeoutError(path, _describe(record), waited)
        if not told and waited >= notice_after and notify is not None:
            limit = "" if timeout is None else f" (giving up after {timeout:g} s)"
            notify(
                f"waiting {waited:.0f} s for the lock {path}, held by {_describe(record)}{limit}; if that "
                f"process is stopped or hung, end it (its lock is then released), or give up sooner: "
                f"the call's lock_timeout= (--lock-timeout), or {LOCK_TIMEOUT_ENV}=<seconds>"
            )
            told = True
        pause = delay if timeout is None else min(delay, max(0.0, timeout - waited))
        time.sleep(pause)
        delay = min(delay * 2, _POLL_MAX)
    previous = _read_record_fd(fd)
    if previous is not None and _dead_here(previous) and notify is not None:
        notify(f"took over the lock {path} from {_describe(previous)}, which is gone (it was killed or crashed)")
    with writing(path):
        if previous is not None or os.fstat(fd).st_size:
            # a dead holder's line: cleared first. (Only then: ext4 flushes a file truncated and rewritten when
            # it is closed, which would cost every lock a disk write.)
            os.ftruncate(fd, 0)
        os.pwrite(fd, _record().encode(), 0)
    return fd


def _read_record_fd(fd: int) -> dict[str, object] | None:
    try:
        raw = parse_json(os.pread(fd, 4096, 0).decode("utf-8") or "null")
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def try_remove_lock(path: Path) -> bool:
    """Remove a lock file nobody holds (a leftover of a killed process); True if removed, False if held."""
    if fcntl is None:  # pragma: no cover - Windows: a lock file there is removed by its holder only
        return False
    try:
        fd = _try_once(path)
    except FileNotFoundError:
        return False
    if fd is None:
        return False
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)
    return True
