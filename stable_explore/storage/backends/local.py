r"""The local implementation of the storage protocol: a directory, with fsync, atomic renames and hard links.

Conditional writes use what a local file system makes atomic: ``put_if_absent`` links a
complete temp file to its name (``link`` fails if the name exists), and ``swap`` holds a
file lock beside the record while it compares and replaces it.

Examples
--------
>>> import tempfile
>>> store = LocalStore(tempfile.mkdtemp())
>>> store.write_text("pets/sources/abc", "v1\n")
>>> store.read_text("pets/sources/abc"), store.read_text("pets/sources/missing")
('v1\n', None)
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock
from typing_extensions import override

from stable_explore.storage.backends.fsutil import fsync_path, replacing, temp_path_beside, writing
from stable_explore.storage.backends.locks import hold_lock
from stable_explore.storage.backends.protocol import Notify, Store, check_key

_COPY_CHUNK = 8 * 1024 * 1024

__all__ = ["LocalStore"]


class LocalStore(Store):
    """A home in a local directory (created on the first write)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        self.url = str(self.root)

    def __repr__(self) -> str:
        return f"LocalStore({self.url!r})"

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    @override
    def local_path(self, key: str) -> Path:
        return self._path(key)

    # -- reading -----------------------------------------------------------------

    @override
    def read_text(self, key: str) -> str | None:
        try:
            return self._path(key).read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return None

    @override
    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    @override
    def size(self, key: str) -> int | None:
        try:
            return self._path(key).stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            return None

    @override
    def get_file(self, key: str, path: Path, *, hasher: Any = None) -> None:
        source = self._path(key)
        with writing(path), replacing(path) as tmp:
            if hasher is None:
                shutil.copyfile(source, tmp)
                return
            with source.open("rb") as src, tmp.open("wb") as out:
                while chunk := src.read(_COPY_CHUNK):
                    hasher.update(chunk)
                    out.write(chunk)

    @override
    def list_dir(self, prefix: str) -> list[str]:
        folder = self._path(prefix) if prefix else self.root
        try:
            return sorted(entry.name for entry in os.scandir(folder) if not entry.name.startswith("."))
        except (FileNotFoundError, NotADirectoryError):
            return []

    # -- writing -----------------------------------------------------------------

    @override
    def write_text(self, key: str, text: str) -> None:
        path = self._path(key)
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            with replacing(path) as tmp:
                tmp.write_text(text, encoding="utf-8")

    @override
    def put_if_absent(self, key: str, text: str) -> bool:
        path = self._path(key)
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = temp_path_beside(path)
            try:
                tmp.write_text(text, encoding="utf-8")
                fsync_path(tmp)
                try:
                    os.link(tmp, path)  # atomic, and fails when the name exists
                except FileExistsError:
                    return False
            finally:
                tmp.unlink(missing_ok=True)
            fsync_path(path.parent)
        return True

    @override
    def swap(self, key: str, expected: str | None, text: str) -> bool:
        path = self._path(key)
        with self._record_lock(path):
            if self.read_text(key) != expected:
                return False
            self.write_text(key, text)
        return True

    @override
    def put_file(self, key: str, path: Path) -> None:
        target = self._path(key)
        with writing(target):
            target.parent.mkdir(parents=True, exist_ok=True)
            with replacing(target) as tmp:
                shutil.copyfile(path, tmp)

    @override
    def copy(self, source: str, key: str) -> None:
        origin, target = self._path(source), self._path(key)
        with writing(target):
            target.parent.mkdir(parents=True, exist_ok=True)
            with replacing(target) as tmp:
                try:
                    os.link(origin, tmp)  # versions are immutable: one file can serve both
                except OSError:
                    shutil.copyfile(origin, tmp)

    @override
    def delete(self, key: str) -> None:
        path = self._path(key)
        with writing(path):
            path.unlink(missing_ok=True)

    @contextlib.contextmanager
    @override
    def lock(self, key: str, *, timeout: float | None = None, notify: Notify | None = None) -> Iterator[None]:
        with hold_lock(self._path(key), timeout=timeout, notify=notify):
            yield

    def _record_lock(self, path: Path) -> FileLock:
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(path.with_name(f".{path.name}.lock")))
