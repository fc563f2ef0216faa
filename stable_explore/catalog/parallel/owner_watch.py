"""A worker of our own pool ends when the process that started the build is gone.

Pool workers fork from the fork server, so their parent is the server, not the build: when the
build's process is killed (a kernel restarted, a SIGKILL, an out-of-memory kill), nothing tells
them, and they would run their task to its end. Each worker watches its owner from a daemon
thread, every :data:`POLL_SECONDS`, and exits when it is gone. The fork server and the resource
tracker end by themselves once their last client, the workers, have gone (they wait on pipes
every client holds open). Linux also knows a zombie owner (killed, not yet reaped) as gone, and
tells a reused pid from the owner by its start time; elsewhere the pid alone is watched.

Examples
--------
>>> import os
>>> owner_alive(os.getpid(), start_time(os.getpid()))
True
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

__all__ = ["POLL_SECONDS", "owner_alive", "start_time", "watch_owner"]

POLL_SECONDS = 0.5
"""How often a worker checks that its owner is still there."""


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None without it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return []
    return text.rpartition(")")[2].split()


def start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot, Linux), to tell it from a later process given its pid."""
    fields = _proc_stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def owner_alive(pid: int, started: str | None) -> bool:
    """Whether process ``pid`` (started at ``started``, if known) still runs: not gone, not a zombie, not reused."""
    fields = _proc_stat(pid)
    if fields is not None:
        if not fields or fields[0] in ("Z", "X"):
            return False
        return started is None or (len(fields) > 19 and fields[19] == started)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else (cannot be ours, but never kill a worker on a guess)
    return True


def watch_owner(pid: int, started: str | None = None) -> threading.Thread:
    """Start a daemon thread that ends this process (by a kill signal) once process ``pid`` is gone."""

    def watch() -> None:
        while owner_alive(pid, started):
            time.sleep(POLL_SECONDS)
        # no cleanup to run (the build that would use this task's files is gone): end at once
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))

    thread = threading.Thread(target=watch, name="se-owner-watch", daemon=True)
    thread.start()
    return thread
