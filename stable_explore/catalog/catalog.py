"""The catalog: datasets and their versions under one home, refs and tags, source records, build locks.

Layout under the home (``$STABLE_EXPLORE_HOME``, default ``~/.cache/stable-explore``)::

    <name>/versions/<version-id>/shard-00000.arrow ... _metadata.json   # immutable once published
    <name>/refs/<tag>                                                     # one line: a version id
    <name>/sources/<source-fingerprint>                                   # one line: the version it built
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from stable_explore.catalog.names import LATEST, NAME_PATTERN, check_name, resolve_home
from stable_explore.errors import CacheNotFoundError, UnsafePathError
from stable_explore.storage.format import METADATA_FILE, ShardedCacheMeta, read_sharded_cache_meta
from stable_explore.storage.fsutil import write_text_durably

__all__ = ["Catalog", "VersionRef"]


@dataclass(frozen=True)
class VersionRef:
    """A resolved version: where it lives and what it is called."""

    name: str | None
    version_id: str
    cache_dir: Path
    home: Path | None


class Catalog:
    """The datasets and versions under one home.

    Example
    -------
    >>> import tempfile
    >>> catalog = Catalog(tempfile.mkdtemp())
    >>> catalog.names()
    []
    """

    def __init__(self, home: str | Path | None = None) -> None:
        self.home = resolve_home(home)

    # -- paths ---------------------------------------------------------------

    def dataset_dir(self, name: str) -> Path:
        return self.home / check_name(name)

    def versions_dir(self, name: str) -> Path:
        return self.dataset_dir(name) / "versions"

    def version_dir(self, name: str, version_id: str) -> Path:
        """``<home>/<name>/versions/<version_id>``; one that leads (by a symlink) outside the home is refused."""
        path = self.versions_dir(name) / check_name(version_id, "version id")
        resolved = path.resolve()
        if resolved != path.absolute() and not resolved.is_relative_to(self.home.resolve()):
            msg = (
                f"the version directory leads (through a symlink) to {resolved}, outside the catalog home "
                f"{self.home}; refusing to use it (move the data into the home, or remove the link)"
            )
            raise UnsafePathError(path, msg)
        return path

    def refs_dir(self, name: str) -> Path:
        return self.dataset_dir(name) / "refs"

    def sources_dir(self, name: str) -> Path:
        return self.dataset_dir(name) / "sources"

    # -- listing -------------------------------------------------------------

    def names(self) -> list[str]:
        """Every dataset name with at least one version, sorted."""
        if not self.home.is_dir():
            return []
        return sorted(p.name for p in self.home.iterdir() if (p / "versions").is_dir() and NAME_PATTERN.match(p.name))

    def version_ids(self, name: str) -> list[str]:
        """Published version ids of ``name`` (directories with metadata), unsorted."""
        root = self.versions_dir(name)
        if not root.is_dir():
            return []
        return [p.name for p in root.iterdir() if not p.name.startswith(".") and (p / METADATA_FILE).is_file()]

    def refs(self, name: str) -> dict[str, str]:
        """Tag -> version id for ``name`` (``latest`` included)."""
        root = self.refs_dir(name)
        if not root.is_dir():
            return {}
        found = {}
        for path in sorted(root.iterdir()):
            if path.name.startswith("."):
                continue
            found[path.name] = path.read_text(encoding="utf-8").strip()
        return found

    def read_ref(self, name: str, tag: str) -> str | None:
        path = self.refs_dir(name) / check_name(tag, "tag")
        try:
            return path.read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def write_ref(self, name: str, tag: str, version_id: str) -> None:
        """Point ``tag`` at a version (atomically)."""
        check_name(tag, "tag")
        if version_id not in self.version_ids(name):
            msg = f"{name}@{version_id} does not exist; versions: {sorted(self.version_ids(name))}"
            raise CacheNotFoundError(msg)
        root = self.refs_dir(name)
        root.mkdir(parents=True, exist_ok=True)
        write_text_durably(root / tag, version_id + "\n")

    def version_meta(self, name: str, version_id: str) -> ShardedCacheMeta:
        """The checked ``_metadata.json`` of one version."""
        return read_sharded_cache_meta(self.version_dir(name, version_id))

    # -- resolving -----------------------------------------------------------

    def resolve(self, ref: str) -> VersionRef:
        """``"name"`` (latest), ``"name@<tag>"`` or ``"name@<version-id prefix>"`` -> a version.

        Raises CacheNotFoundError listing what exists when nothing (or more than one version) matches.
        """
        name, _, wanted = ref.partition("@")
        check_name(name)
        ids = self.version_ids(name)
        if not ids:
            known = self.names()
            msg = f"no dataset named {name!r} in {self.home}; datasets: {known or 'none yet'}"
            raise CacheNotFoundError(msg)
        refs = self.refs(name)
        wanted = wanted or LATEST
        if wanted in refs and refs[wanted] in ids:
            return self.ref(name, refs[wanted])
        matches = sorted(v for v in ids if v.startswith(wanted))
        if len(matches) == 1:
            return self.ref(name, matches[0])
        if len(matches) > 1:
            msg = f"{ref!r} is ambiguous: it matches versions {matches}; give more characters"
            raise CacheNotFoundError(msg)
        msg = f"{name} has no version or tag {wanted!r}; versions: {sorted(ids)}; tags: {sorted(refs)}"
        raise CacheNotFoundError(msg)

    def ref(self, name: str, version_id: str) -> VersionRef:
        """The :class:`VersionRef` of a version of ``name`` (not checked to exist)."""
        return VersionRef(name, version_id, self.version_dir(name, version_id), self.home)

    # -- source fingerprints -------------------------------------------------

    def lookup_source(self, name: str, source_fingerprint: str) -> str | None:
        """The version a source fingerprint built, if that version still exists."""
        path = self.sources_dir(name) / source_fingerprint
        try:
            version_id = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return version_id if (self.version_dir(name, version_id) / METADATA_FILE).is_file() else None

    def record_source(self, name: str, source_fingerprint: str, version_id: str) -> None:
        root = self.sources_dir(name)
        root.mkdir(parents=True, exist_ok=True)
        write_text_durably(root / source_fingerprint, version_id + "\n")

    @contextlib.contextmanager
    def build_lock(self, name: str, key: str) -> Iterator[None]:
        """Held while building ``key``, so concurrent builders of one source build once."""
        root = self.dataset_dir(name)
        root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(root / f".build-{key}.lock")):
            yield
