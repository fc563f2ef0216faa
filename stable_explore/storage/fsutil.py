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
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stable_explore.errors import CacheWriteError

_TMP_MARK = ".tmp-"
_STALE_AFTER_SECONDS = 24 * 3600


def fsync_path(path: Path) -> None:
    """Flush a file's (or a directory's) contents to disk."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if path.is_dir() else os.O_RDONLY
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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


def _owner_alive(host: str, pid: int) -> bool:
    """Whether the process that named a temp dir may still be writing it."""
    if host != socket.gethostname():
        return True  # another machine on a shared disk: only the age rule applies
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM  # exists, owned by another user
    return True


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
        if _owner_alive(*owner) and (local or age < _STALE_AFTER_SECONDS):
            continue  # a live local builder is never swept, however slow
        with contextlib.suppress(OSError):
            removed += bytes_freed_by_removing(entry)
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    return removed


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
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if tmp.exists():
        # The caller did not publish it (for example, identical content already existed).
        shutil.rmtree(tmp, ignore_errors=True)


def publish_dir(tmp: Path, target: Path) -> None:
    """Move a complete, fsynced temp dir to ``target``, replacing any old one.

    Linux has no portable atomic exchange of two directories, so an existing
    target is first renamed aside, then the new one renamed in, then the old
    one deleted. Readers see the old or the new directory, except in the
    instant between the two renames.
    """
    fsync_path(tmp)
    old: Path | None = None
    if target.exists():
        old = (
            target.parent / f"{_tmp_prefix(target.name)}{socket.gethostname()}-{os.getpid()}-old{uuid.uuid4().hex[:6]}"
        )
        target.rename(old)
    try:
        tmp.rename(target)
    except BaseException:
        if old is not None:
            old.rename(target)
        raise
    fsync_path(target.parent)
    if old is not None:
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
