"""The catalog: datasets and their versions under one home, refs and tags, source records, build locks.

Layout under the home (``$STABLE_EXPLORE_HOME``, default ``~/.cache/stable-explore``)::

    <name>/versions/<version-id>/shard-00000.arrow ... _metadata.json   # immutable once published
    <name>/refs/<tag>                                                     # one line: a version id
    <name>/sources/<source-fingerprint>                                   # one line: the version it built
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.catalog.fingerprints.code_tokens import user_stacklevel
from stable_explore.catalog.latest_seen import note_latest
from stable_explore.catalog.names import LATEST, NAME_PATTERN, check_name, resolve_home
from stable_explore.errors import (
    CacheCorruptionError,
    CacheNotFoundError,
    CacheWriteError,
    InvalidNameError,
    LockWaitWarning,
    RemoteStoreError,
    UnsafePathError,
)
from stable_explore.storage.backends.fsutil import PreparedFile, writing
from stable_explore.storage.backends.local import LocalStore
from stable_explore.storage.backends.locks import REFS_LOCK_TIMEOUT, Notify, lock_timeout
from stable_explore.storage.format.version_files import METADATA_FILE

if TYPE_CHECKING:
    from stable_explore.storage.backends.protocol import Store
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta

__all__ = ["REFS_LOCK", "Catalog", "StoreCatalog", "VersionRef", "warn_lock_wait"]

REFS_LOCK = ".refs.lock"


def warn_lock_wait(message: str) -> None:
    """Say (as a :class:`LockWaitWarning`) that this process waits for a lock, or took one over."""
    warnings.warn(message, LockWaitWarning, stacklevel=user_stacklevel())


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
    >>> from stable_explore.storage.backends.local import LocalStore
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
            if tag.startswith(".") or not NAME_PATTERN.fullmatch(tag):
                continue
            text = self._read_pointer(self._ref_key(name, tag), "ref")
            if text is not None:
                found[tag] = text.strip()
        return found

    def read_ref(self, name: str, tag: str) -> str | None:
        """The version id ``tag`` points at, or None when the tag is not set."""
        text = self._read_pointer(self._ref_key(name, tag), "ref")
        version_id = (text or "").strip() or None
        if tag == LATEST:
            note_latest(self.store.url, name, version_id)
        return version_id

    def _read_pointer(self, key: str, what: str) -> str | None:
        """A ref's or source record's text; one that is no readable UTF-8 file is a CacheCorruptionError naming it."""
        try:
            return self.store.read_text(key)
        except RemoteStoreError:
            raise  # the server failed or did not answer: a transport error, never a damaged ref
        except (OSError, UnicodeDecodeError) as exc:
            where = self.store.local_path(key) or f"{self.store.url}/{key}"
            reason = "is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"cannot be read ({exc})"
            msg = f"the {what} {reason}; point it at a version again (se.tag) or delete it"
            raise CacheCorruptionError(where, msg) from exc

    def write_ref(self, name: str, tag: str, version_id: str, *, prepared: PreparedFile | None = None) -> None:
        """Point ``tag`` at a version (atomically; under the refs lock, so gc cannot delete it meanwhile).

        ``prepared``: the ref's new file, written ahead by :meth:`prepare_ref` for this tag and version.
        """
        key = self._ref_key(name, tag)
        with self.refs_lock(name):
            self._check_version(name, version_id)
            if prepared is None:
                self.store.write_text(key, version_id + "\n")
            else:
                with writing(prepared.path):
                    prepared.commit()
        if tag == LATEST:
            note_latest(self.store.url, name, version_id)

    def prepare_ref(self, name: str, tag: str, version_id: str) -> PreparedFile | None:
        """The new file of ``tag``, written beside its ref now, for :meth:`write_ref` (``prepared=``) to put in place.

        A publish prepares ``latest`` before its version is in place and flushes it with the
        version's files, one flush fewer to wait for. None in a bucket (a ref is one request there)
        and before the dataset has a ``refs/`` folder (a first build that fails leaves no folder).
        The caller discards it (``PreparedFile.discard``) when the publish fails.
        """
        path = self.store.local_path(self._ref_key(name, tag))
        if path is None or not path.parent.is_dir():
            return None
        with writing(path):
            return PreparedFile(path, version_id + "\n")

    def check_ref_movable(self, name: str, tag: str) -> None:
        """Refuse, before any work, a tag that :meth:`write_ref` could not move: a bad name, an unreadable ref.

        A build or save that would only fail at its very end, with the version written, fails here instead.

        Raises
        ------
        InvalidNameError
            ``tag`` is no plain name.
        CacheWriteError
            The tag's ref file is a folder (or anything but a file) on a local home.
        CacheCorruptionError
            The ref file exists but cannot be read as text.
        """
        key = self._ref_key(name, tag)
        path = self.store.local_path(key)
        if path is not None and (path.is_dir() or (path.exists() and not path.is_file())):
            kind = "a folder" if path.is_dir() else "not a regular file"
            msg = (
                f"cannot point tag {tag!r} of {name!r} at a version: its ref {path} is {kind}, not a ref file; "
                f"move it away (or choose another tag), then run this again"
            )
            raise CacheWriteError(msg)
        self._read_pointer(key, "ref")

    def swap_ref(self, name: str, tag: str, expected: str | None, version_id: str) -> bool:
        """Point ``tag`` at a version only if it still points at ``expected`` (None: only if unset).

        False (and nothing changed) when another process moved it first: the caller re-reads and decides.
        """
        key = self._ref_key(name, tag)
        self._check_version(name, version_id)
        before = None if expected is None else expected + "\n"
        swapped = self.store.swap(key, before, version_id + "\n")
        if swapped and tag == LATEST:
            note_latest(self.store.url, name, version_id)
        return swapped

    def _check_version(self, name: str, version_id: str) -> None:
        if not self.store.exists(f"{check_name(name)}/versions/{check_name(version_id, 'version id')}/{METADATA_FILE}"):
            msg = f"{name}@{version_id} does not exist; versions: {self.version_ids(name)}"
            raise CacheNotFoundError(msg)

    # -- resolving -----------------------------------------------------------

    def resolve_id(self, ref: str) -> tuple[str, str]:
        """``"name"`` (latest), ``"name@<tag>"`` or ``"name@<version-id prefix>"`` -> (name, version id).

        Raises CacheNotFoundError listing what exists when nothing (or more than one version) matches.
        """
        name, at, wanted = ref.partition("@")
        check_name(name)
        if at and not wanted:  # "pets@" from f"{name}@{tag}" with an empty tag: never the latest by accident
            msg = (
                f"nothing after '@' in {ref!r}: give a tag or a version id prefix ({name}@clean), "
                f"or {name!r} for the latest"
            )
            raise InvalidNameError(msg)
        wanted = wanted or LATEST
        tagged = self._tagged_version(name, wanted)
        if tagged is not None:
            return name, tagged
        for attempt in (1, 2):
            # refs first: a version is published before a ref names it, so the listing read next has it
            # (unless gc deleted it meanwhile, after the ref moved on: then both are read once more)
            refs = self.refs(name)
            ids = self.version_ids(name)
            if wanted not in refs or refs[wanted] in ids or attempt == 2:
                break
        if not ids:
            known = self.names()
            msg = f"no dataset named {name!r} in {self.store.url}; datasets: {known or 'none yet'}"
            raise CacheNotFoundError(msg)
        if wanted in refs and refs[wanted] in ids:
            return name, refs[wanted]
        matches = sorted(v for v in ids if v.startswith(wanted))
        if len(matches) == 1:
            return name, matches[0]
        if len(matches) > 1:
            msg = f"{ref!r} is ambiguous: it matches versions {matches}; give more characters"
            raise CacheNotFoundError(msg)
        msg = f"{name} has no version or tag {wanted!r}; versions: {sorted(ids)}; tags: {sorted(refs)}"
        if re.fullmatch(r"[0-9a-f]{16}", wanted):  # a whole version id: one this home held may have been collected
            msg += "; if that version existed, gc (se.gc) deleted it (tag a version to keep it from gc)"
        raise CacheNotFoundError(msg)

    def _tagged_version(self, name: str, tag: str) -> str | None:
        """The published version ``tag`` points at, read alone (None: no such tag, or not published).

        One ref read and one existence check, where listing every ref and every version (what
        :meth:`resolve_id` does otherwise, to name what exists) costs a request per tag and per
        version in a bucket.
        """
        if not NAME_PATTERN.fullmatch(tag):
            return None
        version_id = (self._read_pointer(self._ref_key(name, tag), "ref") or "").strip()
        if not NAME_PATTERN.fullmatch(version_id):
            return None
        if not self._published(name, version_id):
            return None  # gc took it after the ref moved on: the listing says what there is
        return version_id

    def _published(self, name: str, version_id: str) -> bool:
        """Whether the version's metadata exists (a version is published once it does)."""
        return self.store.exists(f"{name}/versions/{version_id}/{METADATA_FILE}")

    # -- source fingerprints -------------------------------------------------

    def lookup_source(self, name: str, source_fingerprint: str) -> str | None:
        """The version a source fingerprint built, if that version still exists."""
        try:
            text = self._read_pointer(self._source_key(name, source_fingerprint), "source record")
        except CacheCorruptionError:
            return None  # a damaged record only costs a rebuild, which writes a good one
        version_id = (text or "").strip()
        if not version_id:
            return None
        return version_id if NAME_PATTERN.fullmatch(version_id) and self._published(name, version_id) else None

    def reuse_source(self, name: str, source_fingerprint: str) -> str | None:
        """:meth:`lookup_source`, and mark the version used, under the refs lock: gc then leaves it a while.

        In a home this process cannot write (a read-only share), nothing is marked: gc cannot run there either.
        """
        try:
            with self.refs_lock(name):
                version_id = self.lookup_source(name, source_fingerprint)
                if version_id is not None:
                    self._mark_used(name, version_id)
        except CacheWriteError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            return self.lookup_source(name, source_fingerprint)
        return version_id

    def _mark_used(self, name: str, version_id: str) -> None:
        """Record that a build was just handed this version (local homes).

        See :mod:`stable_explore.catalog.maintenance.gc`.
        """

    def record_source(self, name: str, source_fingerprint: str, version_id: str) -> None:
        """Remember that this source built ``version_id``."""
        self.store.write_text(self._source_key(name, source_fingerprint), version_id + "\n")

    def source_text(self, name: str, source_fingerprint: str) -> str | None:
        """The source record's text as it is (None: no record), to put it back with :meth:`restore_source`."""
        return self.store.read_text(self._source_key(name, source_fingerprint))

    def restore_source(self, name: str, source_fingerprint: str, text: str | None) -> None:
        """Put a source record back as :meth:`source_text` read it (None: remove it)."""
        key = self._source_key(name, source_fingerprint)
        if text is None:
            self.store.delete(key)
        else:
            self.store.write_text(key, text)

    @contextlib.contextmanager
    def build_lock(
        self, name: str, key: str, *, timeout: float | None = None, notify: Notify | None = None
    ) -> Iterator[None]:
        """Held while building ``key`` (``<name>/.build-<key>.lock``), so concurrent builders of one source build once.

        The store's lock: a lock file on a local home, a lease in a bucket. ``timeout`` (default
        ``$STABLE_EXPLORE_LOCK_TIMEOUT``, else no limit) and ``notify`` (who holds it, after a few seconds).
        """
        wait = lock_timeout(None) if timeout is None else timeout
        with self.store.lock(
            f"{check_name(name)}/.build-{check_name(key, 'build key')}.lock", timeout=wait, notify=notify
        ):
            yield

    def refs_lock(self, name: str) -> contextlib.AbstractContextManager[None]:
        """``<name>/.refs.lock``, held while refs move and while gc decides and deletes.

        Publishing holds it while it puts a version in place and moves refs, and gc while it decides
        what no ref points at and takes it out, so gc never deletes what a ref points to. It is the
        store's lock: a lock file on a local home, a lease in a bucket (two machines exclude each
        other). It is waited for at most ``$STABLE_EXPLORE_LOCK_TIMEOUT`` seconds (default 300).
        """
        return self.store.lock(
            f"{check_name(name)}/{REFS_LOCK}", timeout=lock_timeout(REFS_LOCK_TIMEOUT), notify=warn_lock_wait
        )

    def publish_lease_key(self, name: str, version_id: str) -> str:
        """``<name>/.publish-<version>.lock``: the lease a copy of that version's files into a bucket holds."""
        return f"{check_name(name)}/.publish-{check_name(version_id, 'version id')}.lock"

    def publishing(self, name: str, version_id: str) -> contextlib.AbstractContextManager[None]:
        """Held while a version's files are copied into a bucket home, before its metadata makes it a version.

        A lease (:meth:`publish_lease_key`) renewed for as long as the copy runs: gc sweeps a version
        prefix without ``_metadata.json`` (an interrupted publish) only when no live lease holds it, so it
        never takes the files of a publish still running on another machine. A local home needs none
        (a publish there is one rename of a private temp folder).
        """
        if self.store.local_path(check_name(name)) is not None:
            return contextlib.nullcontext()
        return self.store.lock(
            self.publish_lease_key(name, version_id), timeout=lock_timeout(REFS_LOCK_TIMEOUT), notify=warn_lock_wait
        )

    def check_refs_lock(self, name: str) -> None:
        """Raise :class:`~stable_explore.errors.LeaseLostError` if this process's refs lease of ``name`` was lost.

        Called before each step that must not happen without the lock (a local lock file cannot be lost).
        """
        check = getattr(self.store, "check_lock", None)
        if check is not None:
            check(f"{check_name(name)}/{REFS_LOCK}")


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

    def use_mark(self, name: str, version_id: str) -> Path:
        """``<name>/.used/<version>``: its modification time is when a build last reused that version."""
        return self.dataset_dir(name) / ".used" / check_name(version_id, "version id")

    def _mark_used(self, name: str, version_id: str) -> None:
        mark = self.use_mark(name, version_id)
        with writing(mark):
            mark.parent.mkdir(exist_ok=True)
            mark.touch()
            os.utime(mark)

    def version_meta(self, name: str, version_id: str) -> ShardedCacheMeta:
        """The checked ``_metadata.json`` of one version."""
        from stable_explore.storage.read.open_meta import read_sharded_cache_meta  # pyarrow: the schema's types

        return read_sharded_cache_meta(self.version_dir(name, version_id))

    def resolve(self, ref: str) -> VersionRef:
        """``"name"`` (latest), ``"name@<tag>"`` or ``"name@<version-id prefix>"`` -> a version and its folder.

        Raises CacheNotFoundError listing what exists when nothing (or more than one version) matches.
        """
        return self.ref(*self.resolve_id(ref))

    def ref(self, name: str, version_id: str) -> VersionRef:
        """The :class:`VersionRef` of a version of ``name`` (not checked to exist)."""
        return VersionRef(name, version_id, self.version_dir(name, version_id), self.where)
