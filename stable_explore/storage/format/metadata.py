"""What a version records about itself beyond its shards, typed and checked once, and the version id it implies.

``_metadata.json`` holds the shard fields (see :mod:`stable_explore.storage.format.cache_meta`) and
these: the version's id and name, when it was made, its parent and the operations that
made it from the parent, the source fingerprint that built it, its description, license,
the user's metadata, a message, and the content digest of its rows. A stable-datasets format-1 cache has
none of them (every field is then empty).

The version id is a hash of the canonical JSON of what defines the content (features,
the content digest, the row count, description, license, user metadata), never of
times or paths: the same content has the same id in any process and any home.

Examples
--------
>>> meta = VersionMetadata.from_json({"description": "digits", "metadata": {"source": "sklearn"}}, "x.json")
>>> meta.description, meta.metadata["source"], meta.parent
('digits', 'sklearn', None)
>>> len(version_id_of({"features": {}, "content_digest": "0", "num_rows": 0}))
16
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typing_extensions import TypedDict

from stable_explore._canonical import fingerprint, unencodable_text
from stable_explore.errors import CacheCorruptionError, InvalidNameError, InvalidOptionError, UnsafePathError

if TYPE_CHECKING:
    from stable_explore._json import Json

__all__ = ["VERSION_ID_LENGTH", "VersionMetadata", "VersionRecordJson", "version_id_of"]

VERSION_ID_LENGTH = 16

_TEXT_FIELDS = (
    "version_id",
    "name",
    "created_at",
    "parent",
    "source_fingerprint",
    "description",
    "license",
    "message",
    "content_digest",
)
# fields that become parts of paths (a dataset's folder, versions/<id>, sources/<fingerprint>, export folders)
_PATH_FIELDS = ("name", "version_id", "parent", "source_fingerprint")
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def version_id_of(fields: Mapping[str, object]) -> str:
    """The version id that a version's metadata fields imply (see the module docstring)."""
    defining = {
        "features": fields.get("features"),
        "content_digest": fields.get("content_digest"),
        "num_rows": fields.get("num_rows"),
        "description": fields.get("description"),
        "license": fields.get("license"),
        "metadata": fields.get("metadata") or {},
    }
    return fingerprint(defining, VERSION_ID_LENGTH)


class VersionRecordJson(TypedDict):
    """The fields of ``_metadata.json`` a :class:`VersionMetadata` writes (beside the shard fields).

    ``operations``, ``source`` and ``metadata`` are JSON objects: the edits that made the version, what
    built it (a source plan), and the user's own metadata.
    """

    name: str | None
    created_at: str | None
    parent: str | None
    operations: list[Mapping[str, Json]]
    source_fingerprint: str | None
    source: Mapping[str, Json] | None
    description: str | None
    license: str | None
    metadata: dict[str, Json]
    message: str | None


@dataclass(frozen=True)
class VersionMetadata:
    """A version's own record: identity, lineage, labels and the digest of its rows.

    Every field is None (or empty) for a cache that does not record it (stable-datasets' format 1).
    ``operations`` and ``metadata`` are JSON values; treat them as read-only.
    """

    version_id: str | None = None
    name: str | None = None
    created_at: str | None = None
    parent: str | None = None
    operations: tuple[Mapping[str, Json], ...] = ()
    source_fingerprint: str | None = None
    source: Mapping[str, Json] | None = None
    description: str | None = None
    license: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)  # JSON (checked where the user gives it)
    message: str | None = None
    content_digest: str | None = None

    def __post_init__(self) -> None:
        for name in _PATH_FIELDS:
            value = getattr(self, name)
            if value is not None and (not _PLAIN_NAME.match(value) or value in (".", "..")):
                msg = f"{name} {value!r} is not a plain name (letters, digits, '.', '_', '-'; at most 128)"
                raise InvalidNameError(msg)
        for name in ("description", "license", "message", "metadata", "source"):  # operations: ours, and long
            problem = unencodable_text(getattr(self, name))
            if problem:
                msg = f"{name} cannot be stored as UTF-8 ({problem}); clean the text first"
                raise InvalidOptionError(msg)

    @classmethod
    def from_json(cls, raw: Mapping[str, object], path: str | Path) -> VersionMetadata:
        """Check and type the fields of a parsed ``_metadata.json``; ``path`` names the file in errors.

        Raises
        ------
        CacheCorruptionError
            A field has the wrong JSON type; the message names the field and the file.
        """
        values: dict[str, Any] = {}
        for name in _TEXT_FIELDS:
            value = raw.get(name)
            if value is not None and not isinstance(value, str):
                msg = f"{name!r} must be a string or null, found {type(value).__name__} {value!r:.100}"
                raise CacheCorruptionError(path, msg)
            values[name] = value
        operations = raw.get("operations") or []
        if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
            msg = f"'operations' must be a list of objects, found {operations!r:.100}"
            raise CacheCorruptionError(path, msg)
        source = raw.get("source")
        if source is not None and not isinstance(source, dict):
            msg = f"'source' must be an object or null, found {type(source).__name__}"
            raise CacheCorruptionError(path, msg)
        metadata = raw.get("metadata") or {}
        if not isinstance(metadata, dict):
            msg = f"'metadata' must be an object, found {type(metadata).__name__} {metadata!r:.100}"
            raise CacheCorruptionError(path, msg)
        try:
            return cls(**values, operations=tuple(operations), source=source, metadata=metadata)
        except InvalidNameError as exc:  # a hand-made file naming paths outside the catalog
            raise UnsafePathError(path, f"{exc}; refusing to use it as part of a path") from exc
        except InvalidOptionError as exc:
            raise CacheCorruptionError(path, str(exc)) from exc

    def to_json(self) -> VersionRecordJson:
        """The JSON fields, as written into ``_metadata.json``."""
        return {
            "name": self.name,
            "created_at": self.created_at,
            "parent": self.parent,
            "operations": list(self.operations),
            "source_fingerprint": self.source_fingerprint,
            "source": self.source,
            "description": self.description,
            "license": self.license,
            "metadata": dict(self.metadata),
            "message": self.message,
        }
