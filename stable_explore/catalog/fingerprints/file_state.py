"""File-state fingerprints: what the files under a path a build reads look like now.

A generator that reads ``root`` reads the files under it, so a cache hit must see those files:
one added inside a class folder, one rewritten in place, one removed. The state of a path is a
recursive listing of (relative path, size, modification time in ns), made with ``os.scandir``;
with ``check_content=True`` each file's bytes are hashed too, for file systems whose
modification times cannot be trusted. The listing is kept beside the catalog's source records,
so a rebuild can say which files were added, removed or changed.

Examples
--------
>>> import pathlib, tempfile
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "cat").mkdir()
>>> _ = (root / "cat" / "a.jpg").write_bytes(b"a")
>>> before = file_state(str(root))
>>> _ = (root / "cat" / "b.jpg").write_bytes(b"b")
>>> after = file_state(str(root))
>>> before.files, after.files, describe_listing_changes(before.entries, after.entries)
(1, 2, '1 added (cat/b.jpg)')
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import xxhash

__all__ = [
    "FILE_LIMIT",
    "LISTINGS",
    "LISTING_NAME",
    "SKIPPED_NAMES",
    "FileState",
    "describe_listing_changes",
    "file_state",
    "read_listing",
    "write_listing",
]

FILE_LIMIT = 2_000_000
"""A listing stops here: a path with more files is not fingerprinted (its build always runs, with a warning)."""

SKIPPED_NAMES = frozenset({".git", ".ipynb_checkpoints", "__pycache__"})
"""Folders never listed: version control, notebook autosaves and bytecode are not data."""

_CHUNK = 1 << 20

Entry = tuple[int, int, str]
"""A file's (size, mtime_ns, content hash or "") in a listing keyed by relative path."""


@dataclass(frozen=True)
class FileState:
    """The state of one path: its digest, how many files it holds, and (for explaining a rebuild) the listing."""

    path: str
    digest: str
    files: int
    complete: bool = True
    entries: dict[str, Entry] = field(default_factory=dict, repr=False, compare=False)


def _file_digest(path: str) -> str:
    hasher = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def file_state(
    path: str,
    *,
    check_content: bool = False,
    exclude: Iterable[str | Path] = (),
    limit: int = FILE_LIMIT,
) -> FileState | None:
    """The state of the file or folder ``path`` names, or None when it names nothing on disk.

    Folders are listed recursively (symbolic links followed, each folder once), skipping
    :data:`SKIPPED_NAMES` and the folders in ``exclude`` (the catalog's home, whose files a
    build itself changes). Past ``limit`` files the state is ``complete=False``.
    """
    try:
        top = os.stat(path)  # noqa: PTH116 - the text may be relative, as the user wrote it
    except (OSError, ValueError):
        return None
    entries: dict[str, Entry] = {}
    if not stat.S_ISDIR(top.st_mode):
        name = os.path.basename(path) or path  # noqa: PTH119
        content = _file_digest(path) if check_content else ""
        entries[name] = (top.st_size, top.st_mtime_ns, content)
        return FileState(path, _digest(entries), 1, True, entries)
    excluded = {os.path.abspath(p) for p in exclude}  # noqa: PTH100
    is_regular = stat.S_ISREG
    seen_dirs = {(top.st_dev, top.st_ino)}
    stack = [(os.path.abspath(path), "")]  # noqa: PTH100
    complete = True
    while stack and complete:
        directory, prefix = stack.pop()
        try:
            with os.scandir(directory) as listing:
                found = list(listing)  # any order: the digest sorts the paths
        except OSError:
            continue  # unreadable: the build cannot read it either
        files = []
        for entry in found:
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if not is_dir:
                files.append(entry)
            elif entry.name not in SKIPPED_NAMES and entry.path not in excluded:
                try:
                    info = entry.stat()
                except OSError:
                    continue  # a broken link
                if (info.st_dev, info.st_ino) not in seen_dirs:  # else a link back to a folder already listed
                    seen_dirs.add((info.st_dev, info.st_ino))
                    stack.append((entry.path, prefix + entry.name + "/"))
        for entry in files:  # the hot loop: one stat per file
            try:
                info = entry.stat()
            except OSError:
                continue  # removed while listing, or a broken link
            if is_regular(info.st_mode):
                entries[prefix + entry.name] = (
                    info.st_size,
                    info.st_mtime_ns,
                    _file_digest(entry.path) if check_content else "",
                )
        if len(entries) > limit:
            complete = False
    return FileState(path, _digest(entries), len(entries), complete, entries)


def _digest(entries: Mapping[str, Entry]) -> str:
    text = "".join(
        [f"{name}\x00{size}\x00{mtime}\x00{content}\n" for name, (size, mtime, content) in sorted(entries.items())]
    )
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8", "surrogateescape"))


def describe_listing_changes(before: Mapping[str, Entry], after: Mapping[str, Entry], *, show: int = 3) -> str:
    """'2 added (a.jpg, b.jpg), 1 changed (c.jpg)': the first few files of each kind and a count."""
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    parts = []
    for what, names in (("added", added), ("removed", removed), ("changed", changed)):
        if names:
            shown = ", ".join(names[:show]) + (f", and {len(names) - show} more" if len(names) > show else "")
            parts.append(f"{len(names)} {what} ({shown})")
    return ", ".join(parts) or "file times changed"


LISTINGS = "files"
"""The folder, in a dataset's ``sources/``, that keeps the listings of folders builds read."""
LISTING_NAME = re.compile(r"[0-9a-f]{32}\.json\.gz")
"""A listing's file name: the digest of the folder state it lists."""


def _listing_path(directory: Path, digest: str) -> Path:
    return directory / f"{digest}.json.gz"


def write_listing(directory: Path, state: FileState) -> None:
    """Keep a listing (by its digest) so a later rebuild can name the files that changed."""
    target = _listing_path(directory, state.digest)
    if target.exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    temp = directory / f".{state.digest}.{os.getpid()}.tmp"
    rows = [[name, *entry] for name, entry in state.entries.items()]
    try:
        with gzip.open(temp, "wt", encoding="utf-8", compresslevel=1) as f:
            json.dump(rows, f, separators=(",", ":"))
        temp.replace(target)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink()  # an explanation is a nicety: never fail a build for it


def read_listing(directory: Path, digest: str) -> dict[str, Entry] | None:
    """A listing kept by :func:`write_listing`, or None when it is gone or unreadable."""
    try:
        with gzip.open(_listing_path(directory, digest), "rt", encoding="utf-8") as f:
            rows = json.load(f)
        return {row[0]: (int(row[1]), int(row[2]), str(row[3])) for row in rows}
    except (OSError, ValueError, TypeError, IndexError, EOFError):
        return None
