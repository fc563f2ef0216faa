"""Names -> versions: the on-disk catalog, refs and tags, source fingerprints, builds and gc.

Layout under the home (``$STABLE_EXPLORE_HOME``, default ``~/.cache/stable-explore``)::

    <name>/versions/<version-id>/shard-00000.arrow ... _metadata.json   # immutable once published
    <name>/refs/<tag>                                                     # one line: a version id
    <name>/sources/<source-fingerprint>                                   # one line: the version it built

A version id is a hash of the canonical JSON of what defines the content
(features, the row content digest, row count, description, license, user
metadata), never of times or paths: the same content has the same id in any
process and any home.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import inspect
import json
import os
import re
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from stable_explore._canonical import canonical_json, fingerprint
from stable_explore._fingerprint import fingerprint_parts, function_token, token
from stable_explore._table import Table
from stable_explore._units import format_size, parse_size
from stable_explore.errors import CacheCorruptionError, CacheNotFoundError
from stable_explore.schema import Features
from stable_explore.storage.format import METADATA_FILE, read_sharded_cache_meta
from stable_explore.storage.fsutil import fsync_path, sweep_stale_temp_dirs, temp_dir_beside, write_text_durably
from stable_explore.storage.writer import write_metadata, write_shards

__all__ = ["Catalog", "BuildResult", "VersionRef", "resolve_home", "version_id_of"]

HOME_ENV = "STABLE_EXPLORE_HOME"
LATEST = "latest"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_VERSION_ID_LENGTH = 16


def resolve_home(home: str | Path | None = None) -> Path:
    """The catalog root: ``home``, else ``$STABLE_EXPLORE_HOME``, else ``~/.cache/stable-explore``."""
    if home is not None:
        return Path(home).expanduser()
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "stable-explore"


def check_name(name: Any, what: str = "dataset name") -> str:
    """Names and tags are plain file names: letters, digits, ``.``, ``_``, ``-``."""
    if not isinstance(name, str) or not _NAME_RE.match(name) or name in (".", ".."):
        msg = (
            f"{what} must start with a letter or digit and use only letters, digits, '.', '_' and '-' "
            f"(at most 128 characters), got {name!r}"
        )
        raise ValueError(msg)
    return name


def version_id_of(raw: Mapping[str, Any]) -> str:
    """The version id that a version's metadata implies (see the module docstring)."""
    defining = {
        "features": raw.get("features"),
        "content_digest": raw.get("content_digest"),
        "num_rows": raw.get("num_rows"),
        "description": raw.get("description"),
        "license": raw.get("license"),
        "metadata": raw.get("metadata") or {},
    }
    return fingerprint(defining, _VERSION_ID_LENGTH)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class VersionRef:
    """A resolved version: where it lives and what it is called."""

    name: str | None
    version_id: str
    cache_dir: Path
    home: Path | None


@dataclass
class BuildResult:
    """What a build returned: the version, and why it was reused or (re)built."""

    ref: VersionRef
    reused: bool
    info: str
    seconds: float = 0.0
    changes: list[str] = field(default_factory=list)


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
        return self.versions_dir(name) / check_name(version_id, "version id")

    def _refs_dir(self, name: str) -> Path:
        return self.dataset_dir(name) / "refs"

    def _sources_dir(self, name: str) -> Path:
        return self.dataset_dir(name) / "sources"

    # -- listing -------------------------------------------------------------

    def names(self) -> list[str]:
        """Every dataset name with at least one version, sorted."""
        if not self.home.is_dir():
            return []
        return sorted(p.name for p in self.home.iterdir() if (p / "versions").is_dir() and _NAME_RE.match(p.name))

    def version_ids(self, name: str) -> list[str]:
        """Published version ids of ``name`` (directories with metadata), unsorted."""
        root = self.versions_dir(name)
        if not root.is_dir():
            return []
        return [p.name for p in root.iterdir() if not p.name.startswith(".") and (p / METADATA_FILE).is_file()]

    def refs(self, name: str) -> dict[str, str]:
        """Tag -> version id for ``name`` (``latest`` included)."""
        root = self._refs_dir(name)
        if not root.is_dir():
            return {}
        found = {}
        for path in sorted(root.iterdir()):
            if path.name.startswith("."):
                continue
            found[path.name] = path.read_text(encoding="utf-8").strip()
        return found

    def read_ref(self, name: str, tag: str) -> str | None:
        path = self._refs_dir(name) / check_name(tag, "tag")
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
        root = self._refs_dir(name)
        root.mkdir(parents=True, exist_ok=True)
        write_text_durably(root / tag, version_id + "\n")

    def version_raw(self, name: str, version_id: str) -> dict[str, Any]:
        """The raw ``_metadata.json`` of one version."""
        meta = read_sharded_cache_meta(self.version_dir(name, version_id))
        return dict(meta.raw or {})

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
            return self._ref(name, refs[wanted])
        matches = sorted(v for v in ids if v.startswith(wanted))
        if len(matches) == 1:
            return self._ref(name, matches[0])
        if len(matches) > 1:
            msg = f"{ref!r} is ambiguous: it matches versions {matches}; give more characters"
            raise CacheNotFoundError(msg)
        msg = f"{name} has no version or tag {wanted!r}; versions: {sorted(ids)}; tags: {sorted(refs)}"
        raise CacheNotFoundError(msg)

    def _ref(self, name: str, version_id: str) -> VersionRef:
        return VersionRef(name, version_id, self.version_dir(name, version_id), self.home)

    # -- source fingerprints -------------------------------------------------

    def lookup_source(self, name: str, source_fingerprint: str) -> str | None:
        """The version a source fingerprint built, if that version still exists."""
        path = self._sources_dir(name) / source_fingerprint
        try:
            version_id = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return version_id if (self.version_dir(name, version_id) / METADATA_FILE).is_file() else None

    def record_source(self, name: str, source_fingerprint: str, version_id: str) -> None:
        root = self._sources_dir(name)
        root.mkdir(parents=True, exist_ok=True)
        write_text_durably(root / source_fingerprint, version_id + "\n")

    @contextlib.contextmanager
    def build_lock(self, name: str, key: str) -> Iterator[None]:
        """Held while building ``key``, so concurrent builders of one source build once."""
        root = self.dataset_dir(name)
        root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(root / f".build-{key}.lock")):
            yield

    # -- publishing ----------------------------------------------------------

    def publish(self, name: str, staging: Path, raw: dict[str, Any]) -> tuple[VersionRef, bool]:
        """Name a complete staging dir by its version id and move it into ``versions/``.

        Returns the version and whether identical content was already there
        (then the staging dir is left for its owner to delete).
        """
        version_id = version_id_of(raw)
        raw["version_id"] = version_id
        target = self.version_dir(name, version_id)
        if (target / METADATA_FILE).is_file():
            try:
                read_sharded_cache_meta(target)
                return self._ref(name, version_id), True
            except CacheCorruptionError:
                _remove_dir(target)  # a damaged copy of this content: replace it with the good one
        elif target.exists():
            _remove_dir(target)  # a leftover without metadata (an interrupted delete): not a version
        write_metadata(staging, raw)
        fsync_path(staging)  # the directory entries must be durable before the rename publishes them
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            staging.rename(target)
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            return self._ref(name, version_id), True  # another process published the same content
        with contextlib.suppress(OSError):
            fsync_path(target.parent)
        return self._ref(name, version_id), False

    # -- listings ------------------------------------------------------------

    def versions_table(self, name: str) -> Table:
        """Every version of ``name``, newest first, with lineage and tags."""
        refs = self.refs(name)
        tags_of: dict[str, list[str]] = {}
        for tag, version_id in refs.items():
            tags_of.setdefault(version_id, []).append(tag)
        rows: list[dict[str, Any]] = []
        for version_id in self.version_ids(name):
            try:
                meta = read_sharded_cache_meta(self.version_dir(name, version_id))
            except (CacheCorruptionError, CacheNotFoundError) as exc:
                rows.append({"version": version_id, "created": "", "message": f"unreadable: {exc}"})
                continue
            raw = meta.raw or {}
            rows.append(
                {
                    "version": version_id,
                    "created": raw.get("created_at", ""),
                    "rows": meta.num_rows,
                    "bytes": meta.nbytes,
                    "size": format_size(meta.nbytes),
                    "parent": raw.get("parent"),
                    "message": raw.get("message") or "",
                    "tags": sorted(tags_of.get(version_id, [])),
                }
            )
        rows.sort(key=lambda r: (r.get("created") or "", r["version"]), reverse=True)
        columns = ["version", "created", "rows", "size", "parent", "message", "tags"]
        return Table(columns, rows, title=f"versions of {name}")

    def datasets_table(self) -> Table:
        """Every dataset: its latest version, rows, size and number of versions."""
        rows = []
        for name in self.names():
            latest = self.read_ref(name, LATEST)
            row: dict[str, Any] = {"name": name, "latest": latest, "versions": len(self.version_ids(name))}
            if latest:
                try:
                    meta = read_sharded_cache_meta(self.version_dir(name, latest))
                    row.update(rows=meta.num_rows, size=format_size(meta.nbytes), bytes=meta.nbytes)
                    row["created"] = (meta.raw or {}).get("created_at", "")
                except (CacheCorruptionError, CacheNotFoundError):
                    row["created"] = "unreadable"
            row["tags"] = sorted(t for t in self.refs(name) if t != LATEST)
            rows.append(row)
        columns = ["name", "latest", "rows", "size", "versions", "created", "tags"]
        return Table(columns, rows, title=f"datasets in {self.home}")

    # -- garbage collection --------------------------------------------------

    def gc(self, name: str | None = None, *, keep: int = 1) -> int:
        """Delete versions that no ref points at, beyond the ``keep`` newest; return bytes freed.

        Tagged versions (``latest`` included) are never deleted. Temp dirs of
        dead builds are swept too.
        """
        if keep < 0:
            msg = f"keep must be >= 0, got {keep}"
            raise ValueError(msg)
        freed = 0
        for dataset in [name] if name is not None else self.names():
            versions = self.versions_dir(dataset)
            if not versions.is_dir():
                msg = f"no dataset named {dataset!r} in {self.home}"
                raise CacheNotFoundError(msg)
            freed += sweep_stale_temp_dirs(versions)
            protected = set(self.refs(dataset).values())
            by_age = sorted(self.version_ids(dataset), key=lambda v: (self._created_at(dataset, v), v), reverse=True)
            protected.update(by_age[:keep])
            for version_id in by_age:
                if version_id in protected:
                    continue
                target = self.version_dir(dataset, version_id)
                freed += _unique_bytes(target)
                _remove_dir(target)
            self._drop_dangling_sources(dataset)
        return freed

    def _created_at(self, name: str, version_id: str) -> str:
        """When a version was made, read leniently: a damaged version must not stop gc of the others."""
        try:
            raw = json.loads((self.version_dir(name, version_id) / METADATA_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ""
        return str(raw.get("created_at", "")) if isinstance(raw, dict) else ""

    def _drop_dangling_sources(self, name: str) -> None:
        root = self._sources_dir(name)
        if not root.is_dir():
            return
        live = set(self.version_ids(name))
        for path in root.iterdir():
            if path.name.startswith("."):
                continue
            if path.read_text(encoding="utf-8").strip() not in live:
                path.unlink(missing_ok=True)


def _remove_dir(directory: Path) -> None:
    """Delete a version directory: first renamed to a temp name (one atomic step), then removed.

    An interrupted delete leaves a temp dir that the next sweep finishes, never a half-deleted version.
    """
    doomed = directory.parent / f".{directory.name}.tmp-{socket.gethostname()}-{os.getpid()}-gc{uuid.uuid4().hex[:6]}"
    directory.rename(doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def _unique_bytes(directory: Path) -> int:
    """Bytes that deleting ``directory`` frees (files hard-linked elsewhere do not count)."""
    total = 0
    for path in directory.rglob("*"):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            if stat.st_nlink <= 1:
                total += stat.st_size
    return total


# --- building ---------------------------------------------------------------


@dataclass
class SourcePlan:
    """How a build source is fingerprinted: the parts (for explaining a miss) and their digest."""

    parts: dict[str, Any] | None
    fingerprint: str | None


def plan_source(
    source: Any,
    features: Features,
    *,
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    key: str | None = None,
    compression: str | None = None,
    labels: Mapping[str, Any] | None = None,
) -> SourcePlan:
    """Fingerprint a build: explicit ``key``, or a generator function's code and arguments.

    A plain iterable has no fingerprint (it always builds).
    """
    common: dict[str, Any] = {
        "features": features.fingerprint(),
        "compression": compression,
        # description, license and user metadata shape the version id, so a hit must match them too
        "labels": fingerprint(dict(labels or {})),
    }
    if key is not None:
        parts = {"kind": "key", "key": str(key), **common}
    elif callable(source) and (inspect.isgeneratorfunction(source) or inspect.isfunction(source)):
        code = function_token(source)
        try:
            bound = inspect.signature(source).bind(*args, **(kwargs or {}))
            bound.apply_defaults()  # a default read from a notebook variable is an input too
        except TypeError as exc:
            msg = f"{getattr(source, '__name__', source)} cannot take these arguments: {exc}"
            raise TypeError(msg) from exc
        arguments = {arg: fingerprint(token(value, f"argument {arg!r}")) for arg, value in bound.arguments.items()}
        parts = {
            "kind": "function",
            "function": getattr(source, "__qualname__", "?"),
            "code": code["source"],
            "globals": {n: fingerprint(v) for n, v in code["globals"].items()},
            "arguments": arguments,
            **common,
        }
    else:
        return SourcePlan(None, None)
    return SourcePlan(parts, fingerprint_parts(parts))


def explain_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """What differs between two source plans, in words."""
    if not old or not new:
        return []
    if old.get("kind") != new.get("kind"):
        return [f"source kind changed ({old.get('kind')} -> {new.get('kind')})"]
    changes = []
    if old.get("code") != new.get("code"):
        changes.append("cell changed" if new.get("kind") == "cell" else "generator source changed")
    if old.get("key") != new.get("key"):
        changes.append(f"key changed ({old.get('key')!r} -> {new.get('key')!r})")
    for label, group in (("argument", "arguments"), ("variable", "globals")):
        before, after = old.get(group) or {}, new.get(group) or {}
        for item in sorted(set(before) | set(after)):
            if before.get(item) != after.get(item):
                changes.append(f"{label} {item!r} changed")
    if old.get("features") != new.get("features"):
        changes.append("features changed")
    if old.get("compression") != new.get("compression"):
        changes.append("compression changed")
    if old.get("labels") != new.get("labels"):
        changes.append("description, license or metadata changed")
    return changes


def build_version(
    catalog: Catalog,
    name: str,
    source: Any,
    features: Features | Mapping[str, Any],
    *,
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    description: str | None = None,
    license: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    shard_size: int | str = "256MB",
    batch_size: int = 1000,
    compression: str | None = None,
    tag: str | None = None,
    force: bool = False,
    key: str | None = None,
    progress: bool = True,
    plan: SourcePlan | None = None,
    message: str | None = None,
) -> BuildResult:
    """Reuse the version this source built before, or build and publish a new one."""
    import time

    started = time.perf_counter()
    check_name(name)
    if tag is not None:
        check_name(tag, "tag")
    if not isinstance(features, Features):
        features = Features(features)
    user_metadata = dict(metadata or {})
    try:
        canonical_json(user_metadata)
    except (TypeError, ValueError) as exc:
        msg = f"metadata must be JSON-serialisable (str, numbers, lists, dicts): {exc}"
        raise TypeError(msg) from exc
    shard_bytes = parse_size(shard_size)
    if plan is None:
        labels = {"description": description, "license": license, "metadata": user_metadata}
        plan = plan_source(source, features, args=args, kwargs=kwargs, key=key, compression=compression, labels=labels)

    previous = catalog.read_ref(name, LATEST) if catalog.version_ids(name) else None

    def reuse(version_id: str, why: str) -> BuildResult:
        if previous != version_id:  # a hit on the latest version writes nothing
            catalog.write_ref(name, LATEST, version_id)
        if tag:
            catalog.write_ref(name, tag, version_id)
        ref = catalog._ref(name, version_id)
        return BuildResult(ref, True, why, time.perf_counter() - started)

    if plan.fingerprint is not None and not force:
        hit = catalog.lookup_source(name, plan.fingerprint)
        if hit is not None:
            return reuse(hit, "reused: same source, arguments and features")

    lock = catalog.build_lock(name, plan.fingerprint) if plan.fingerprint else contextlib.nullcontext()
    with lock:
        if plan.fingerprint is not None and not force:
            hit = catalog.lookup_source(name, plan.fingerprint)
            if hit is not None:
                return reuse(hit, "reused: built by another process while this one waited")
        changes: list[str] = []
        if force:
            why = "rebuilt: force=True"
        elif plan.fingerprint is None:
            why = "built: a plain iterable has no fingerprint (pass key= to reuse it next time)"
        elif previous is None:
            why = f"built: first build of {name}"
        else:
            old_parts = catalog.version_raw(name, previous).get("source")
            changes = explain_changes(old_parts, plan.parts)
            why = "rebuilt: " + ("; ".join(changes) if changes else "no earlier build of this source")
        examples = source(*args, **(kwargs or {})) if callable(source) else source
        total = len(examples) if hasattr(examples, "__len__") else None
        with (
            temp_dir_beside(catalog.versions_dir(name) / "staging") as staging,
            progress_bar(progress, name, total) as on_batch,
        ):
            raw = write_shards(
                examples,
                features,
                staging,
                shard_size_bytes=shard_bytes,
                batch_size=batch_size,
                compression=compression,
                on_batch=on_batch,
            )
            raw.update(
                name=name,
                created_at=_now(),
                parent=None,
                operations=[],
                source_fingerprint=plan.fingerprint,
                source=plan.parts,
                description=description,
                license=license,
                metadata=user_metadata,
                message=message,
            )
            ref, existed = catalog.publish(name, staging, raw)
        if existed:
            why += " (identical content: reusing the existing version)"
        if plan.fingerprint is not None:
            catalog.record_source(name, plan.fingerprint, ref.version_id)
        catalog.write_ref(name, LATEST, ref.version_id)
        if tag:
            catalog.write_ref(name, tag, ref.version_id)
    return BuildResult(ref, False, why, time.perf_counter() - started, changes)


@contextlib.contextmanager
def progress_bar(
    enabled: bool, name: str, total: int | None, *, verb: str = "caching"
) -> Iterator[Callable[[int, int], None] | None]:
    """A tqdm.auto bar (a widget in notebooks, text in terminals) fed by the writer's batch callback."""
    if not enabled:
        yield None
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit=" rows", unit_scale=True, desc=f"{verb} {name}", dynamic_ncols=True)

    def on_batch(rows: int, nbytes: int) -> None:
        bar.set_postfix_str(f"{format_size(nbytes)} written", refresh=False)
        bar.update(rows)

    try:
        yield on_batch
    finally:
        bar.close()
