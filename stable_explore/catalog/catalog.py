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
from typing import TYPE_CHECKING

from stable_explore.catalog.names import LATEST, NAME_PATTERN, check_name, resolve_home
from stable_explore.errors import CacheNotFoundError, UnsafePathError
from stable_explore.storage.format import METADATA_FILE, ShardedCacheMeta, read_sharded_cache_meta
from stable_explore.storage.local import LocalStore

if TYPE_CHECKING:
    from stable_explore.storage.protocol import Store

__all__ = ["Catalog", "StoreCatalog", "VersionRef"]


@dataclass(frozen=True)
class VersionRef:
    """A resolved version: where it lives and what it is called."""

    name: str | None
    version_id: str
    cache_dir: Path
    home: Path | str | None
    """The home as datasets carry it: a folder, or a bucket's URL."""


class StoreCatalog:
    """The datasets, versions, refs and source records of one home, through its :class:`Store` (local or remote).

    Examples
    --------
    >>> import tempfile
    >>> from stable_explore.storage.local import LocalStore
    >>> StoreCatalog(LocalStore(tempfile.mkdtemp())).names()
    []
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    @staticmethod
    def _ref_key(name: str, tag: str) -> str:
        return f"{check_name(name)}/refs/{check_name(tag, 'tag')}"

    @staticmethod
    def _source_key(name: str, source_fingerprint: str) -> str:
        return f"{check_name(name)}/sources/{check_name(source_fingerprint, 'source fingerprint')}"

    # -- listing -------------------------------------------------------------

    def names(self) -> list[str]:
        """Every dataset name with at least one version directory, sorted."""
        return [
            n for n in self.store.list_dir("") if NAME_PATTERN.fullmatch(n) and self.store.list_dir(f"{n}/versions")
        ]

    def version_ids(self, name: str) -> list[str]:
        """Published version ids of ``name`` (directories with metadata), sorted."""
        prefix = f"{check_name(name)}/versions"
        return [
            v
            for v in self.store.list_dir(prefix)
            if not v.startswith(".") and self.store.exists(f"{prefix}/{v}/{METADATA_FILE}")
        ]

    def refs(self, name: str) -> dict[str, str]:
        """Tag -> version id for ``name`` (``latest`` included)."""
        found = {}
        for tag in self.store.list_dir(f"{check_name(name)}/refs"):
            if tag.startswith("."):
                continue
            text = self.store.read_text(self._ref_key(name, tag))
            if text is not None:
                found[tag] = text.strip()
        return found

    def read_ref(self, name: str, tag: str) -> str | None:
        """The version id ``tag`` points at, or None when the tag is not set."""
        text = self.store.read_text(self._ref_key(name, tag))
        return (text or "").strip() or None

    def write_ref(self, name: str, tag: str, version_id: str) -> None:
        """Point ``tag`` at a version (atomically)."""
        key = self._ref_key(name, tag)
        self._check_version(name, version_id)
        self.store.write_text(key, version_id + "\n")

    def swap_ref(self, name: str, tag: str, expected: str | None, version_id: str) -> bool:
        """Point ``tag`` at a version only if it still points at ``expected`` (None: only if unset).

        False (and nothing changed) when another process moved it first: the caller re-reads and decides.
        """
        key = self._ref_key(name, tag)
        self._check_version(name, version_id)
        before = None if expected is None else expected + "\n"
        return self.store.swap(key, before, version_id + "\n")

    def _check_version(self, name: str, version_id: str) -> None:
        if not self.store.exists(f"{check_name(name)}/versions/{check_name(version_id, 'version id')}/{METADATA_FILE}"):
            msg = f"{name}@{version_id} does not exist; versions: {self.version_ids(name)}"
            raise CacheNotFoundError(msg)

    # -- resolving -----------------------------------------------------------

    def resolve_id(self, ref: str) -> tuple[str, str]:
        """``"name"`` (latest), ``"name@<tag>"`` or ``"name@<version-id prefix>"`` -> (name, version id).

        Raises CacheNotFoundError listing what exists when nothing (or more than one version) matches.
        """
        name, _, wanted = ref.partition("@")
        check_name(name)
        ids = self.version_ids(name)
        if not ids:
            known = self.names()
            msg = f"no dataset named {name!r} in {self.store.url}; datasets: {known or 'none yet'}"
            raise CacheNotFoundError(msg)
        refs = self.refs(name)
        wanted = wanted or LATEST
        if wanted in refs and refs[wanted] in ids:
            return name, refs[wanted]
        matches = sorted(v for v in ids if v.startswith(wanted))
        if len(matches) == 1:
            return name, matches[0]
        if len(matches) > 1:
            msg = f"{ref!r} is ambiguous: it matches versions {matches}; give more characters"
            raise CacheNotFoundError(msg)
        msg = f"{name} has no version or tag {wanted!r}; versions: {sorted(ids)}; tags: {sorted(refs)}"
        raise CacheNotFoundError(msg)

    # -- source fingerprints -------------------------------------------------

    def lookup_source(self, name: str, source_fingerprint: str) -> str | None:
        """The version a source fingerprint built, if that version still exists."""
        text = self.store.read_text(self._source_key(name, source_fingerprint))
        version_id = (text or "").strip()
        if not version_id:
            return None
        return version_id if self.store.exists(f"{name}/versions/{version_id}/{METADATA_FILE}") else None

    def record_source(self, name: str, source_fingerprint: str, version_id: str) -> None:
        """Remember that this source built ``version_id``."""
        self.store.write_text(self._source_key(name, source_fingerprint), version_id + "\n")

    @contextlib.contextmanager
    def build_lock(self, name: str, key: str) -> Iterator[None]:
        """Held while building ``key``, so concurrent builders of one source build once."""
        with self.store.lock(f"{check_name(name)}/.build-{check_name(key, 'build key')}.lock"):
            yield


class Catalog(StoreCatalog):
    """The datasets and versions under one local home (a folder), with the paths of their files.

    Examples
    --------
    >>> import tempfile
    >>> catalog = Catalog(tempfile.mkdtemp())
    >>> catalog.names()
    []
    """

    def __init__(self, home: str | Path | None = None) -> None:
        self.home = resolve_home(home)
        super().__init__(LocalStore(self.home))

    @property
    def where(self) -> Path | str:
        """The home as the user names it: this folder (a bucket's URL for a remote catalog)."""
        return self.home

    # -- paths ---------------------------------------------------------------

    def dataset_dir(self, name: str) -> Path:
        """The folder of dataset ``name``."""
        return self.home / check_name(name)

    def versions_dir(self, name: str) -> Path:
        """The folder that holds every version of ``name``."""
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
        """The folder of ``name``'s refs (``latest`` and tags)."""
        return self.dataset_dir(name) / "refs"

    def sources_dir(self, name: str) -> Path:
        """The folder of ``name``'s source records (source fingerprint -> version id)."""
        return self.dataset_dir(name) / "sources"

    def version_meta(self, name: str, version_id: str) -> ShardedCacheMeta:
        """The checked ``_metadata.json`` of one version."""
        return read_sharded_cache_meta(self.version_dir(name, version_id))

    def resolve(self, ref: str) -> VersionRef:
        """``"name"`` (latest), ``"name@<tag>"`` or ``"name@<version-id prefix>"`` -> a version and its folder.

        Raises CacheNotFoundError listing what exists when nothing (or more than one version) matches.
        """
        return self.ref(*self.resolve_id(ref))

    def ref(self, name: str, version_id: str) -> VersionRef:
        """The :class:`VersionRef` of a version of ``name`` (not checked to exist)."""
        return VersionRef(name, version_id, self.version_dir(name, version_id), self.where)
