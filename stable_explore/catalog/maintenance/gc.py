"""Garbage collection: delete versions nothing points at, and what dead builds left behind.

``gc`` and publishing share one lock per dataset (``<name>/.refs.lock``, see
:meth:`Catalog.refs_lock`): a publish holds it while it renames a version in and moves
``latest``; gc holds it while it reads the refs, decides, and renames what goes out of
``versions/`` (one atomic rename each; the files are deleted after the lock is let go). So gc
never deletes a version a ref points at, nor one published while it decided. A build that
reuses a version marks it used under the same lock (``<name>/.used/<version>``), and gc leaves a
version reused in the last :data:`GRACE_SECONDS` alone, so the builder that was just handed it can open it.
The signals kept for a version (``<name>/signals/<version>``, see :mod:`stable_explore.signals.cache`)
go with it.

Examples
--------
>>> import tempfile, stable_explore as se
>>> from stable_explore.catalog import Catalog
>>> home = tempfile.mkdtemp()
>>> for n in (1, 2):
...     _ = se.build([{"x": i} for i in range(n)], se.Features(x=se.Value("int64")), name="t", home=home,
...                  progress=False)
>>> report = collect_garbage(Catalog(home), "t", keep=0, grace=0)
>>> report > 0, len(report.removed)   # the first version: no ref points at it
(True, 1)
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.catalog.fingerprints.code_tokens import user_stacklevel
from stable_explore.catalog.fingerprints.file_state import LISTINGS
from stable_explore.catalog.names import EVALUATIONS_DIR, NAME_PATTERN, SIGNALS_DIR, VIDEO_PROBES_DIR
from stable_explore.catalog.publish import unpublish_version_dir
from stable_explore.catalog.remote import RemoteCatalog, collect_remote_garbage
from stable_explore.catalog.transfer import sweep_transfer_leftovers
from stable_explore.errors import CacheNotFoundError, GcProblemWarning, InvalidOptionError
from stable_explore.storage.backends.fsutil import bytes_freed_by_removing, is_leftover, sweep_stale_temp_dirs
from stable_explore.storage.backends.locks import try_remove_lock
from stable_explore.storage.format.cache_meta import METADATA_FILE
from stable_explore.storage.kept import forget

if TYPE_CHECKING:
    from stable_explore.catalog.catalog import Catalog

__all__ = ["GRACE_SECONDS", "GcReport", "collect_garbage"]

GRACE_SECONDS = 60.0
"""A version reused by a build (or a leftover younger than this) is left alone this long."""

_LISTING_TEMP_AGE = 3600.0
_ABANDONED_COPY_AGE = 24 * 3600.0  # a version folder without metadata this old: a copy nobody will resume
_EMPTY_DATASET_AGE = 60.0  # an empty dataset folder this old is a failed first build, not one starting now


class GcReport(int):
    """Bytes freed (an ``int``, as ``se.gc`` always returned), with what was removed, swept and found broken.

    Attributes
    ----------
    removed:
        ``name@version`` of each version deleted.
    swept:
        Each leftover removed (a temp file or dir of a dead process, a lock nobody holds, an empty dataset).
    problems:
        ``path: reason`` of each dataset (or file) gc could not read and left alone.
    """

    removed: list[str]
    swept: list[str]
    problems: list[str]

    def __new__(cls, freed: int, removed: list[str], swept: list[str], problems: list[str]) -> GcReport:
        """Make the report (an int of the bytes freed)."""
        report = super().__new__(cls, freed)
        report.removed, report.swept, report.problems = removed, swept, problems
        return report

    def summary(self) -> str:
        """What gc did, one line per version removed, leftover swept and problem, then the bytes freed."""
        lines = [f"removed {v}" for v in self.removed]
        lines += [f"swept {s}" for s in self.swept]
        lines += [f"problem: {p}" for p in self.problems]
        return "\n".join([*lines, f"freed {int(self):,} bytes"])


def collect_garbage(
    catalog: Catalog, name: str | None = None, *, keep: int = 1, grace: float = GRACE_SECONDS
) -> GcReport:
    """Delete versions that no ref points at, beyond the ``keep`` newest; sweep leftovers; report.

    Tagged versions (``latest`` included) are never deleted, nor a version a build reused in the
    last ``grace`` seconds. Leftovers of processes that are gone (temp dirs and files, lock files
    nobody holds, an empty dataset left by a failed first build) are swept. A dataset gc cannot
    read is reported (``GcProblemWarning``, and in ``problems``) and left alone; the others go on.
    """
    if keep < 0:
        msg = f"keep must be >= 0, got {keep}"
        raise InvalidOptionError(msg)
    if isinstance(catalog, RemoteCatalog):  # refs move by compare-and-swap there; no local leftovers to sweep
        freed, removed, swept = collect_remote_garbage(catalog, name, keep=keep, grace=grace)
        return GcReport(freed, removed, swept, [])
    report = GcReport(0, [], [], [])
    report.swept.extend(f"{path} (a temp folder a killed copy left)" for path in sweep_transfer_leftovers(catalog))
    freed = 0
    if name is not None:
        if not catalog.versions_dir(name).is_dir():
            msg = f"no dataset named {name!r} in {catalog.home}"
            raise CacheNotFoundError(msg)
        names = [name]
    else:
        names = _dataset_dirs(catalog)
    for dataset in names:
        try:
            freed += _collect_dataset(catalog, dataset, keep, grace, report)
        except (OSError, ValueError, RecursionError) as exc:
            where = getattr(exc, "path", None) or getattr(exc, "filename", None) or catalog.dataset_dir(dataset)
            problem = f"{where}: {getattr(exc, 'reason', None) or exc} (dataset {dataset!r} skipped)"
            report.problems.append(problem)
            warnings.warn(f"gc: {problem}", GcProblemWarning, stacklevel=user_stacklevel())
    return GcReport(freed, report.removed, report.swept, report.problems)


def _dataset_dirs(catalog: Catalog) -> list[str]:
    """Every folder of the home that holds a dataset, an empty one left by a failed first build included."""
    if not catalog.home.is_dir():
        return []
    return sorted(
        entry.name
        for entry in catalog.home.iterdir()
        if NAME_PATTERN.fullmatch(entry.name) and entry.is_dir() and (entry / "versions").is_dir()
    )


def _collect_dataset(catalog: Catalog, dataset: str, keep: int, grace: float, report: GcReport) -> int:
    versions = catalog.versions_dir(dataset)
    freed = _sweep(versions, report)
    for entry in sorted(versions.iterdir()):  # partial files a killed push or pull left inside a version's folder
        if not entry.name.startswith(".") and entry.is_dir() and not entry.is_symlink():
            freed += _sweep(entry, report)
            freed += _drop_abandoned_copy(entry, report)
    doomed: list[Path] = []
    try:
        with catalog.refs_lock(dataset):
            protected = set(catalog.refs(dataset).values())
            ids = catalog.version_ids(dataset)
            by_age = sorted(ids, key=lambda v: (_created_at(catalog, dataset, v), v), reverse=True)
            protected.update(by_age[:keep])
            now = time.time()
            removed: set[str] = set()
            for version_id in by_age:
                target = catalog.version_dir(dataset, version_id)
                if version_id in protected or now - _last_used(catalog, dataset, version_id) < grace:
                    continue
                size = bytes_freed_by_removing(target)
                doomed.append(unpublish_version_dir(target))
                freed += size
                removed.add(version_id)
                report.removed.append(f"{dataset}@{version_id}")
            _drop_dangling_sources(catalog, dataset, set(ids) - removed, grace, report)
            _drop_old_use_marks(catalog, dataset, set(ids) - removed, grace)
            freed += _drop_orphan_signals(catalog, dataset, set(ids) - removed, report)
    finally:  # what was taken out of versions/ is deleted even if a later step failed
        if doomed:
            forget(holding_files=True)  # a kept map of a deleted shard would hold its disk space
        for path in doomed:
            shutil.rmtree(path, ignore_errors=True)
    freed += _sweep(catalog.refs_dir(dataset), report) + _sweep(catalog.sources_dir(dataset), report)
    live = set(catalog.version_ids(dataset))
    freed += _drop_evaluations(catalog, dataset, live, report, EVALUATIONS_DIR)
    freed += _drop_evaluations(catalog, dataset, live, report, VIDEO_PROBES_DIR)
    _sweep_locks(catalog.dataset_dir(dataset), report)
    _remove_if_empty(catalog, dataset, report)
    return freed


def _drop_orphan_signals(catalog: Catalog, dataset: str, live: set[str], report: GcReport) -> int:
    """Remove the kept signals (``<name>/signals/<version>``) of versions that are gone; sweep dead writers' temps."""
    root = catalog.dataset_dir(dataset) / SIGNALS_DIR
    if not root.is_dir():
        return 0
    freed = 0
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir() or entry.is_symlink():
            continue
        if entry.name in live:
            freed += _sweep(entry, report)
            continue
        size = bytes_freed_by_removing(entry)
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            freed += size
            report.swept.append(f"{entry} (signals of a version that is gone)")
    with contextlib.suppress(OSError):
        root.rmdir()  # only when empty
    return freed


def _sweep(folder: Path, report: GcReport) -> int:
    """Remove leftovers of dead processes in ``folder``; list each in the report."""
    if not folder.is_dir():
        return 0
    before = {e.name for e in folder.iterdir() if e.name.startswith(".") and is_leftover(e)}
    freed = sweep_stale_temp_dirs(folder)
    report.swept.extend(str(folder / n) for n in sorted(before) if not (folder / n).exists())
    return freed


def _drop_abandoned_copy(folder: Path, report: GcReport) -> int:
    """A version folder without metadata that nothing wrote to for a day: a copy (pull, push) given up on.

    A retry of the copy resumes from its whole files, so it is kept while it may still be retried;
    a folder with a live writer's temp file is never touched.
    """
    if (folder / METADATA_FILE).exists():
        return 0
    try:
        entries = list(folder.iterdir())
        newest = max([folder.stat().st_mtime, *(e.lstat().st_mtime for e in entries)])
    except OSError:
        return 0
    if time.time() - newest < _ABANDONED_COPY_AGE or any(e.name.startswith(".") for e in entries):
        return 0
    size = bytes_freed_by_removing(folder)
    shutil.rmtree(unpublish_version_dir(folder), ignore_errors=True)
    report.swept.append(f"{folder} (a copy without {METADATA_FILE} nothing wrote to for a day)")
    return size


def _sweep_locks(dataset_dir: Path, report: GcReport) -> None:
    """Remove build and refs lock files nobody holds (one is left per source built; a held one is never touched)."""
    for path in sorted(dataset_dir.glob(".*.lock")):
        if (path.name.startswith(".build-") or path.name == ".refs.lock") and try_remove_lock(path):
            report.swept.append(f"{path} (a lock nobody held)")


def _remove_if_empty(catalog: Catalog, dataset: str, report: GcReport) -> None:
    """Remove a dataset folder left empty by a failed first build (only empty folders, never files)."""
    root = catalog.dataset_dir(dataset)
    versions = catalog.versions_dir(dataset)
    try:
        if any(versions.iterdir()) or time.time() - versions.stat().st_mtime < _EMPTY_DATASET_AGE:
            return
        if any(e for e in root.iterdir() if e.name != "versions"):
            return  # refs, sources or a held lock: not an empty dataset
        versions.rmdir()
        root.rmdir()
    except OSError:
        return  # something appeared meanwhile (a build starting): leave it
    report.swept.append(f"{root} (an empty dataset left by a failed first build)")


def _last_used(catalog: Catalog, name: str, version_id: str) -> float:
    """When a build last reused this version (0 when none did)."""
    try:
        return catalog.use_mark(name, version_id).stat().st_mtime
    except OSError:
        return 0.0


def _drop_evaluations(catalog: Catalog, name: str, live: set[str], report: GcReport, kind: str) -> int:
    """Remove what is kept per version (``<name>/<kind>/<version>``: evaluations, video probes) of gone versions."""
    folder = catalog.dataset_dir(name) / kind
    if not folder.is_dir():
        return 0
    freed = 0
    for entry in sorted(folder.iterdir()):
        if entry.name in live or not entry.is_dir() or entry.is_symlink():
            continue
        size = sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            freed += size
            report.swept.append(str(entry))
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when empty
    return freed


def _drop_old_use_marks(catalog: Catalog, name: str, live: set[str], grace: float) -> None:
    folder = catalog.use_mark(name, "x").parent
    if not folder.is_dir():
        return
    now = time.time()
    for path in folder.iterdir():
        with contextlib.suppress(OSError):
            if path.name not in live or now - path.stat().st_mtime >= grace:
                path.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when empty


def _created_at(catalog: Catalog, name: str, version_id: str) -> str:
    """When a version was made, read leniently: a damaged version must not stop gc of the others."""
    try:
        raw = json.loads((catalog.version_dir(name, version_id) / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return ""
    return str(raw.get("created_at", "")) if isinstance(raw, dict) else ""


def _drop_dangling_sources(catalog: Catalog, name: str, live: set[str], grace: float, report: GcReport) -> None:
    """Drop source records of deleted versions, and file listings no live version's source names."""
    root = catalog.sources_dir(name)
    if not root.is_dir():
        return
    for path in root.iterdir():
        if path.name.startswith(".") or path.is_dir():
            continue
        try:
            version_id = path.read_bytes().decode("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            problem = f"{path}: an unreadable source record ({exc}); left as it is"
            report.problems.append(problem)
            warnings.warn(f"gc: {problem}", GcProblemWarning, stacklevel=user_stacklevel())
            continue
        if version_id not in live:
            path.unlink(missing_ok=True)
    listings = root / LISTINGS
    if not listings.is_dir():
        return
    named: set[str] = set()
    for version_id in live:
        with contextlib.suppress(OSError, ValueError, RecursionError):
            raw = json.loads((catalog.version_dir(name, version_id) / METADATA_FILE).read_text(encoding="utf-8"))
            _collect_digests(raw.get("source") if isinstance(raw, dict) else None, named)
    now = time.time()
    for path in listings.iterdir():
        digest = path.name.split(".", 1)[0]
        if path.name.startswith("."):  # a listing being written (.<digest>.<pid>.tmp): swept once an hour old
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime >= _LISTING_TEMP_AGE:
                    path.unlink()
                    report.swept.append(f"{path} (a listing a dead build was writing)")
            continue
        if digest in named:
            continue
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime >= grace:
                path.unlink()
                report.swept.append(f"{path} (a file listing no version's source names)")


def _collect_digests(value: object, into: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "digest" and isinstance(item, str):
                into.add(item)
            else:
                _collect_digests(item, into)
    elif isinstance(value, list):
        for item in value:
            _collect_digests(item, into)
