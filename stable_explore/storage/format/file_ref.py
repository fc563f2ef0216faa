"""A small file of a version as ``_metadata.json`` records it: its name, the digest of its bytes, its size.

Every small file beside ``_metadata.json`` (see :mod:`.sidecars`) is named by a :class:`FileRef`,
and the lists that saves splice (:mod:`.spliced_file`) name their file by one too; this module is
the value alone, so both can use it without the other.

Examples
--------
>>> ref = FileRef("notes.json", small_file_digest(b'{"a":1}'), 7)
>>> matches(b'{"a":1}', ref), matches(b'{"a":2}', ref)
(True, False)
>>> FileRef.from_json(ref.to_json(), "_metadata.json", "a test file") == ref
True
>>> ref.renamed("notes-2.json").file
'notes-2.json'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xxhash

from stable_explore.errors import CacheCorruptionError

__all__ = ["SMALL_FILE_ALGORITHM", "FileRef", "matches", "mismatch", "small_file_digest"]

SMALL_FILE_ALGORITHM = "xxh3_128"


def small_file_digest(data: bytes) -> str:
    """The digest ``_metadata.json`` records of a small file's bytes."""
    return f"{SMALL_FILE_ALGORITHM}:{xxhash.xxh3_128_hexdigest(data)}"


@dataclass(frozen=True)
class FileRef:
    """A small file of a version: its name beside ``_metadata.json``, the digest of its bytes and its size."""

    file: str
    digest: str
    size: int

    def to_json(self) -> dict[str, Any]:
        """The form ``_metadata.json`` records."""
        return {"file": self.file, "digest": self.digest, "size": self.size}

    def renamed(self, file: str) -> FileRef:
        """The same bytes under another name (a linked or moved copy)."""
        return FileRef(file, self.digest, self.size)

    @classmethod
    def from_json(cls, raw: object, meta_path: str | Path, where: str) -> FileRef:
        """Check and type a recorded file; ``where`` says which field it is in, for errors."""
        ok = (
            isinstance(raw, Mapping)
            and isinstance(raw.get("file"), str)
            and isinstance(raw.get("digest"), str)
            and str(raw["digest"]).startswith(SMALL_FILE_ALGORITHM + ":")
            and type(raw.get("size")) is int
            and raw["size"] >= 0
        )
        if not ok:
            msg = f"{where} must be an object with a 'file' name, its {SMALL_FILE_ALGORITHM} 'digest' and 'size'"
            raise CacheCorruptionError(meta_path, f"{msg}, found {raw!r:.150}")
        assert isinstance(raw, Mapping)
        return cls(str(raw["file"]), str(raw["digest"]), int(raw["size"]))


def matches(data: bytes, ref: FileRef) -> bool:
    """Whether ``data`` are the bytes ``ref`` records (its size and digest)."""
    return len(data) == ref.size and small_file_digest(data) == ref.digest


def mismatch(data: bytes, ref: FileRef, meta_path: Path) -> str:
    """What a file whose bytes are not the recorded ones is told (for its :class:`CacheCorruptionError`)."""
    return (
        f"is {len(data)} bytes that do not match the {ref.size} bytes and digest recorded in {meta_path.name}: "
        "the file was damaged or replaced"
    )
