"""Durable, atomic file-system steps: temp dirs beside a target, fsync, rename, sweeping.

A build writes into ``.<target>.tmp-<host>-<pid>-<random>`` beside its target
and renames it into place once everything is fsynced. A temp dir whose process
is gone (killed, crashed) is swept the next time anything is built beside it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import shutil
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from stable_explore.errors import CacheWriteError

_TMP_MARK = ".tmp-"
_ASIDE_MARK = ".old-"  # an existing cache moved aside while a new one replaces it (see publish_dir)
_STALE_AFTER_SECONDS = 24 * 3600


def fsync_path(path: Path) -> None:
    """Flush a file's (or a directory's) contents to disk."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if path.is_dir() else os.O_RDONLY
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename into it) to disk; a failure raises.

    The one failure ignored is ``EINVAL``: file systems that cannot fsync a directory at all
    (some FUSE and network mounts) say so with it, and there the rename is as durable as that
    file system makes it. Any other error (``EIO``, ``ENOSPC``...) means the entry may not be on disk.
    """
    try:
        fsync_path(path)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise


_FLUSH_THREADS = 8
_flushers: tuple[int, ThreadPoolExecutor] | None = None  # (the process it belongs to, the pool)
_flushers_lock = threading.Lock()


def _flush_pool() -> ThreadPoolExecutor:
    """The threads of :func:`fsync_together` in this process: started once, not per call (a forked child's own)."""
    global _flushers
    with _flushers_lock:
        if _flushers is None or _flushers[0] != os.getpid():
            _flushers = (os.getpid(), ThreadPoolExecutor(_FLUSH_THREADS, thread_name_prefix="se-fsync"))
        return _flushers[1]


def _forget_flushers_in_child() -> None:
    """A forked child has none of its parent's threads: it starts its own pool (and lock) when it first flushes."""
    global _flushers, _flushers_lock
    _flushers, _flushers_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_flushers_in_child)


def fsync_dir_soon(path: Path) -> Future[None]:
    """Start :func:`fsync_dir` of ``path`` on a flushing thread; its result (or its ``OSError``) is the future's.

    The caller does other work meanwhile (nothing that needs the flush done), then waits with ``result()``.

    Examples
    --------
    >>> import tempfile
    >>> fsync_dir_soon(Path(tempfile.mkdtemp())).result()
    """
    return _flush_pool().submit(fsync_dir, path)


def fsync_together(paths: Sequence[Path]) -> None:
    """Flush several files and folders to disk side by side: each of them is durable once this returns.

    One ``fsync`` a thread (the first on the calling thread; the others on threads kept for it,
    so a save does not wait for new threads to start). A journaling file system commits
    flushes that wait at the same time in one go, so a publish's ``_metadata.json``, the small
    files its save wrote and the folder holding them wait about as long as one flush, not one
    after another. Once every flush has ended, the first failure (in the order given) is raised
    as a :class:`~stable_explore.errors.CacheWriteError` naming its path.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.json").write_text("[]")
    >>> fsync_together([folder / "a.json", folder])
    """
    failures: list[BaseException | None] = [None] * len(paths)

    def flush(index: int) -> None:
        try:
            fsync_path(paths[index])
        except BaseException as exc:  # noqa: BLE001 - raised on the calling thread, below
            failures[index] = exc

    others = [_flush_pool().submit(flush, i) for i in range(1, len(paths))]
    if paths:
        flush(0)
    for other in others:
        other.result()  # flush() keeps its failure: this only waits
    for path, failure in zip(paths, failures, strict=True):
        if isinstance(failure, OSError) and not isinstance(failure, CacheWriteError):
            raise write_error(failure, path) from failure
        if failure is not None:
            raise failure


def temp_path_beside(path: Path) -> Path:
    """A fresh temp name next to ``path`` that names its owner (host, pid), so a sweep can tell if it is stale."""
    return path.with_name(f"{_tmp_prefix(path.name)}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


@contextlib.contextmanager
def replacing(path: Path, *, durable: bool = True) -> Iterator[Path]:
    """Write a file through a temp file beside it, renamed over ``path`` only when the block succeeds.

    The temp name is unique per call, so two writers of one path never clobber each other's
    half-written file; readers see the old file or the new one. With ``durable`` the file is
    fsynced before the rename and the directory after it.
    """
    tmp = temp_path_beside(path)
    try:
        yield tmp
        if durable:
            fsync_path(tmp)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_path(path.parent)


class PreparedFile:
    """A file's new text, written beside it now and renamed over it later by :meth:`commit` (as :func:`replacing`).

    A publish writes ``refs/latest``'s new text before its version is in place, so the file is
    flushed together with the version's own files instead of after them; the caller that flushed
    it says so with :meth:`flushed`, else :meth:`commit` flushes it first. :meth:`discard` removes
    the temp file of a publish that failed.

    Examples
    --------
    >>> import tempfile
    >>> ref = Path(tempfile.mkdtemp()) / "latest"
    >>> prepared = PreparedFile(ref, "abc")
    >>> ref.exists(), prepared.tmp.read_text()
    (False, 'abc')
    >>> prepared.commit(); ref.read_text(), prepared.tmp.exists()
    ('abc', False)
    """

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.tmp = temp_path_beside(path)
        self._flushed = False
        self._placed = False
        try:
            self.tmp.write_text(text, encoding="utf-8")
        except BaseException:
            self.discard()
            raise

    def flushed(self) -> None:
        """Say that :attr:`tmp` was fsynced (by :func:`fsync_together`): :meth:`commit` need not flush it again."""
        self._flushed = True

    def commit(self) -> None:
        """Put the new text in place: the temp file (fsynced) renamed over the file, then its folder fsynced."""
        try:
            if not self._flushed:
                fsync_path(self.tmp)
            self.tmp.replace(self.path)
        except BaseException:
            self.discard()
            raise
        self._placed = True
        fsync_path(self.path.parent)

    def discard(self) -> None:
        """Remove the temp file, unless it was put in place (nothing happens to the file itself).

        Best effort: a temp file that cannot be removed now (a failing disk) is left behind, never
        raised over what the caller is doing (a publish that succeeded, or the error that stopped it).
        Its name carries its owner's host and process, so gc's sweep removes it once that process is gone.
        """
        if self._placed:
            return
        with contextlib.suppress(OSError):
            self.tmp.unlink(missing_ok=True)


def write_text_durably(path: Path, text: str) -> None:
    """Write a small text file atomically and durably (see :func:`replacing`)."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _tmp_prefix(target_name: str) -> str:
    return f".{target_name}{_TMP_MARK}"


def _owner(dirname: str) -> tuple[str, int] | None:
    """(host, pid) from a temp dir's name, or None if the name is not one of ours."""
    try:
        host, pid_text, _ = dirname.rsplit(_TMP_MARK, 1)[1].rsplit("-", 2)
        return host, int(pid_text)
    except ValueError:
        return None


def process_alive(host: str, pid: int) -> bool:
    """Whether process ``pid`` of ``host`` may be running (a process of another machine always may)."""
    return _owner_alive(host, pid)


def _owner_alive(host: str, pid: int, since: float | None = None) -> bool:
    """Whether the process that named a temp dir (last modified at ``since``) may still be writing it.

    A live process with that pid that started after ``since`` is another process the pid was
    given to (Linux tells when a process started): the writer is gone.
    """
    if host != socket.gethostname():
        return True  # another machine on a shared disk: only the age rule applies
    try:
        os.kill(pid, 0)
    except OSError as exc:
        if exc.errno != errno.EPERM:  # EPERM: exists, owned by another user
            return False
    started = _process_started_at(pid)
    return started is None or since is None or started <= since + 1.0


@functools.cache
def _boot_time() -> float | None:
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _process_started_at(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), where the system says (Linux ``/proc``)."""
    boot = _boot_time()
    if boot is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, counted after the command name
    except (OSError, ValueError, IndexError):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def bytes_freed_by_removing(path: Path) -> int:
    """Bytes that deleting ``path`` frees: files hard-linked elsewhere (a parent's shards) do not count."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(stat.st_size for stat in (f.stat() for f in files) if stat.st_nlink <= 1)


def sweep_stale_temp_dirs(parent: Path) -> int:
    """Remove temp dirs left in ``parent`` by processes that are gone. Returns the bytes freed."""
    removed = 0
    if not parent.is_dir():
        return 0
    now = time.time()
    for entry in parent.iterdir():
        if entry.name.startswith(".") and _ASIDE_MARK in entry.name:
            _settle_moved_aside(entry)
            continue
        if not entry.name.startswith(".") or _TMP_MARK not in entry.name:
            continue
        owner = _owner(entry.name)
        if owner is None:
            continue  # not a name we make: never ours to delete
        try:
            age = now - entry.stat().st_mtime
        except FileNotFoundError:
            continue
        local = owner[0] == socket.gethostname()
        if _owner_alive(*owner, now - age) and (local or age < _STALE_AFTER_SECONDS):
            continue  # a live local builder is never swept, however slow
        with contextlib.suppress(OSError):
            removed += bytes_freed_by_removing(entry)
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    return removed


def is_leftover(entry: Path) -> str | None:
    """Why ``entry`` is a leftover of a process that is gone (a temp file or dir, a moved-aside copy), or None."""
    name = entry.name
    aside = _ASIDE_MARK in name
    if not name.startswith(".") or not (aside or _TMP_MARK in name):
        return None
    owner = _owner(name.replace(_ASIDE_MARK, _TMP_MARK) if aside else name)
    if owner is None:
        return None
    try:
        age = time.time() - entry.stat().st_mtime
    except OSError:
        return None
    if _owner_alive(*owner, time.time() - age) and (owner[0] == socket.gethostname() or age < _STALE_AFTER_SECONDS):
        return None  # still being written
    who = f"process {owner[1]} on {owner[0]}"
    if aside:
        return f"an old copy moved aside by a replacement that was killed ({who}); the next open or write settles it"
    return f"left behind by {who}, which is gone; gc sweeps it"


def remove_empty_folders(path: Path, levels: int = 1) -> None:
    """Remove ``path`` and then up to ``levels - 1`` of its parents, each only while it is empty.

    ``rmdir`` refuses a folder with anything in it, so a folder another process has just put
    something into is left alone.
    """
    for folder in [path, *path.parents][:levels]:
        try:
            folder.rmdir()
        except OSError:
            return


@contextlib.contextmanager
def temp_dir_beside(target: Path) -> Iterator[Path]:
    """A fresh temp dir next to ``target``, removed on any error or interrupt."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temp_dirs(target.parent)
    tmp = temp_path_beside(target)
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        remove_tree(tmp)
        raise
    if tmp.exists():
        # The caller did not publish it (for example, identical content already existed).
        remove_tree(tmp)


def remove_tree(path: Path, attempts: int = 5) -> None:
    """Remove a folder and all in it, best effort, going over it again while it is still there.

    ``shutil.rmtree`` leaves a folder whose last entry appeared after it listed the folder (a worker
    of a stopped build finishing its file): a few passes remove what came late.
    """
    for _ in range(attempts):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        time.sleep(0.01)


_RENAME_EXCHANGE = 2  # from <linux/fs.h>: swap two paths atomically


@functools.cache
def _renameat2() -> Any:
    """Libc's ``renameat2`` on Linux (glibc >= 2.28), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def exchange_paths(first: Path, second: Path) -> bool:
    """Swap two existing paths in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``).

    Returns False where that is not possible (another system, an old kernel, a file
    system without it); nothing has changed then.
    """
    function = _renameat2()
    if function is None:
        return False
    at_cwd = -100  # AT_FDCWD
    if function(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(error, os.strerror(error), str(second))


def _aside_name(target: Path) -> Path:
    return target.parent / f".{target.name}{_ASIDE_MARK}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _settle_moved_aside(aside: Path) -> bool:
    """Finish what a replacement killed midway left: put the old copy back, or drop it. True if put back.

    ``.<target>.old-<host>-<pid>-<random>`` is an existing cache moved aside by :func:`publish_dir`.
    Once its owner is gone: if the target is missing (killed between the two renames) the old
    copy goes back in place; if the target exists (killed after the second rename) it is deleted.
    """
    name = aside.name
    mark = name.rfind(_ASIDE_MARK)
    target_name = name[1:mark]
    owner = _owner(name[:mark] + _TMP_MARK + name[mark + len(_ASIDE_MARK) :])
    if owner is None or not target_name:
        return False
    try:
        age = time.time() - aside.stat().st_mtime
    except OSError:
        return False
    if _owner_alive(*owner) and (owner[0] == socket.gethostname() or age < _STALE_AFTER_SECONDS):
        return False  # the replacement may still be under way
    target = aside.parent / target_name
    if target.exists():
        shutil.rmtree(aside, ignore_errors=True)
        return False
    try:
        aside.rename(target)
    except OSError:
        return False  # another process put it back first, or published a new one
    with contextlib.suppress(OSError):
        fsync_path(aside.parent)
    return True


def recover_moved_aside(target: Path) -> bool:
    """If ``target`` is missing because a replacement was killed midway, put the old copy back. True if it did."""
    parent = target.parent
    if not parent.is_dir():
        return False
    prefix = f".{target.name}{_ASIDE_MARK}"
    try:
        candidates = sorted(e for e in parent.iterdir() if e.name.startswith(prefix))
    except OSError:
        return False
    return any(_settle_moved_aside(aside) for aside in candidates)


def _forget_mapped() -> None:
    """Let go of kept shard maps before a replaced cache is deleted (they would hold its disk space)."""
    from stable_explore.storage.kept import forget  # the readers that keep them use this module

    forget(holding_files=True)


def publish_dir(tmp: Path, target: Path) -> None:
    """Move a complete, fsynced temp dir to ``target``, replacing any old one, crash-safe at every step.

    Where the system can (Linux), the two directories are swapped in one atomic step and the
    old one (now at the temp name) deleted: a crash leaves the old or the new cache in place,
    and at worst a temp dir that the next sweep removes. Elsewhere the old target is renamed
    aside (``.<target>.old-<host>-<pid>-<random>``), the new one renamed in, and the old one
    deleted; a crash between the two renames leaves the old copy aside, and the next open of
    ``target`` or write beside it puts it back (:func:`recover_moved_aside`).
    """
    fsync_path(tmp)
    recover_moved_aside(target)
    if target.exists() and exchange_paths(tmp, target):
        fsync_path(target.parent)
        _forget_mapped()
        shutil.rmtree(tmp, ignore_errors=True)
        return
    old: Path | None = None
    if target.exists():
        old = _aside_name(target)
        target.rename(old)
    try:
        tmp.rename(target)
    except BaseException:
        if old is not None:
            old.rename(target)
        raise
    fsync_path(target.parent)
    if old is not None:
        _forget_mapped()
        shutil.rmtree(old, ignore_errors=True)


_SYNC_FILE_RANGE_WRITE = 2  # from <fcntl.h>: start writeback of dirty pages in the range, do not wait


@functools.cache
def _sync_file_range() -> Any:
    """Libc's ``sync_file_range`` on Linux, else None (loaded on first use)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def writeback_supported() -> bool:
    """Whether :func:`start_writeback` does anything here (Linux)."""
    return _sync_file_range() is not None


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start writing a range of a file to disk, without waiting for it (Linux only).

    A later ``fsync`` then waits only for what is still in flight, so the cost of
    durability overlaps with writing the rest of the file. Elsewhere this does nothing.
    """
    function = _sync_file_range()
    if function is not None and length > 0:
        function(fd, offset, length, _SYNC_FILE_RANGE_WRITE)  # a failure only means fsync does all the work


def write_error(exc: OSError, path: Path) -> CacheWriteError:
    """The CacheWriteError, naming ``path``, for a file-system failure while writing it."""
    if exc.errno is None:
        return CacheWriteError(f"{path}: {exc}")
    return CacheWriteError(exc.errno, exc.strerror, str(path))


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn a file-system failure while writing ``path`` into a CacheWriteError that names it."""
    try:
        yield
    except CacheWriteError:
        raise
    except OSError as exc:
        raise write_error(exc, path) from exc


def version_gone(cache_dir: Path) -> str | None:
    """Why a whole cache directory is gone (deleted, or garbage-collected, after it was opened), or None."""
    if (cache_dir / "_metadata.json").exists():
        return None
    gc_mark = f".{cache_dir.name}.tmp-"
    try:
        collected = any(e.name.startswith(gc_mark) and "-gc" in e.name for e in cache_dir.parent.iterdir())
    except OSError:
        collected = False
    how = "garbage-collected by gc" if collected or cache_dir.parent.name == "versions" else "deleted"
    return (
        f"version {cache_dir.name} ({cache_dir}) was {how} after this dataset was opened, so its shards are gone; "
        "load the dataset again (tag a version to keep it from gc)"
    )
