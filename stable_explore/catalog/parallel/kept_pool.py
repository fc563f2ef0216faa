"""A pool of ours kept between calls, so a signal called again soon skips its workers' start.

A fresh worker spends 30-40 ms before its first task and 10-75 ms more on its first batch (opening
the shard, its first page faults), against ~0.2 s of work for a signal over 8,000 small JPEGs on two
cores: started anew for every call, that ate most of the second core. The pool for ``workers``
workers is kept for :data:`KEEP_SECONDS` after its last use, then shut down; until then its idle
workers sleep on their queue. They keep memory they free, as a build's workers do
(:func:`~stable_explore.catalog.parallel.tasks.prepare_worker`, up to 64 MB each): otherwise each
1,024-image batch faulted ~1,500 pages in anew, and a worker's batch took 54 ms where the
calling process's took 50. As every pool of ours
(:func:`~stable_explore.catalog.parallel.executor.owned_pool`), its workers watch this process and end
with it, so a killed kernel takes them along.

Examples
--------
>>> with kept_pool(1) as pool:
...     pool.submit(sum, [1, 2]).result()
3
>>> close_kept_pools()
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import BrokenExecutor, ProcessPoolExecutor
from contextlib import contextmanager

__all__ = ["KEEP_SECONDS", "close_kept_pools", "kept_pool"]

KEEP_SECONDS = 60.0
"""How long a kept pool waits for its next call before it shuts down (joblib's loky waits 300 s)."""


class _Kept:
    """One kept pool: how many calls hold it now, and the timer that shuts it down once none has for a while."""

    def __init__(self, pool: ProcessPoolExecutor) -> None:
        self.pool = pool
        self.users = 0
        self.timer: threading.Timer | None = None

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


_lock = threading.Lock()
_pools: dict[int, _Kept] = {}


@contextmanager
def kept_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` processes of ours, the same one for calls that follow within :data:`KEEP_SECONDS`.

    Calls may overlap (threads share it). A pool that broke (a worker killed) is dropped on the way
    out and the next call starts a new one. Tasks a call leaves queued run before a later call's:
    cancel or wait for them before leaving.
    """
    from stable_explore.catalog.parallel.executor import owned_pool

    with _lock:
        kept = _pools.get(workers)
        if kept is None:
            kept = _pools[workers] = _Kept(owned_pool(workers, tune_memory=True))
        kept.stop_timer()
        kept.users += 1
    broken = False
    try:
        yield kept.pool
    except BrokenExecutor:
        broken = True
        raise
    finally:
        with _lock:
            kept.users -= 1
            if broken:
                if _pools.get(workers) is kept:
                    del _pools[workers]
                kept.pool.shutdown(wait=False, cancel_futures=True)
            elif kept.users == 0 and _pools.get(workers) is kept:
                kept.timer = threading.Timer(KEEP_SECONDS, _retire, (workers, kept))
                kept.timer.daemon = True
                kept.timer.name = "se-kept-pool-timer"
                kept.timer.start()


def _retire(workers: int, kept: _Kept) -> None:
    """Shut a kept pool down, unless a call took it up again meanwhile."""
    with _lock:
        if kept.users or _pools.get(workers) is not kept:
            return
        del _pools[workers]
        kept.timer = None
    kept.pool.shutdown(wait=False, cancel_futures=True)


def close_kept_pools() -> None:
    """Shut every kept pool down now, waiting for its workers to end (a test's or a long session's tidy-up)."""
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for kept in pools:
        kept.stop_timer()
        kept.pool.shutdown(wait=True, cancel_futures=True)


def _forget_in_child() -> None:
    """A forked child owns none of its parent's pools (their threads and pipes are the parent's)."""
    global _lock
    _lock = threading.Lock()
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
