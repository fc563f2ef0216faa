"""``fsck`` of a home in a bucket: every version fetched and re-hashed, every ref checked, problems named by URL.

A bucket has no folders to walk, so this goes through the catalog: each dataset's versions
(those whose metadata exists), each version's files fetched whole into a temp folder and checked
as a local version is (:func:`~stable_explore.storage.check.verify.check_cache_dir`), and each ref,
which must point at a version that passed. A version prefix holding files but no metadata is
reported too: an interrupted publish, or one still running on another machine; a prefix holding
nothing at all (SeaweedFS keeps one after gc deletes its objects) is no problem.

Examples
--------
``fsck_remote(RemoteCatalog("s3://team-bucket/cache"))`` returns an
:class:`~stable_explore.catalog.maintenance.fsck.FsckReport` whose problems name ``s3://`` URLs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.catalog.maintenance.fsck import FsckReport
from stable_explore.catalog.names import LATEST, NAME_PATTERN
from stable_explore.errors import CacheCorruptionError, CacheNotFoundError, StableExploreError
from stable_explore.storage.check.remote_verify import verify_remote
from stable_explore.storage.check.verify import CacheCheck, Problem, check_cache_dir
from stable_explore.storage.format.cache_meta import METADATA_FILE

if TYPE_CHECKING:
    from stable_explore.catalog.remote import RemoteCatalog

__all__ = ["fsck_remote"]


def fsck_remote(catalog: RemoteCatalog, name: str | None = None) -> FsckReport:
    """Check every dataset of a bucket's catalog (or only ``name``); return the report (damage never raises).

    Raises
    ------
    CacheNotFoundError
        ``name`` is given and the bucket holds no such dataset.
    """
    report = FsckReport(catalog.url)
    started = time.perf_counter()
    names = catalog.names()
    if name is not None:
        if name not in names:
            msg = f"no dataset named {name!r} in {catalog.url}; datasets: {names or 'none yet'}"
            raise CacheNotFoundError(msg)
        names = [name]
    for dataset in names:
        before = (len(report.problems), report.versions)
        live = _check_versions(catalog, dataset, report)
        if (len(report.problems), report.versions) == before and not catalog.store.list_dir(f"{dataset}/refs"):
            continue  # only empty prefixes (some servers keep them after their objects are deleted): no dataset
        report.datasets += 1
        _check_refs(catalog, dataset, live, report)
    report.seconds = time.perf_counter() - started
    return report


def _check_versions(catalog: RemoteCatalog, name: str, report: FsckReport) -> set[str]:
    """Fetch and check each version of ``name``; return the ids of those that are whole."""
    live: set[str] = set()
    prefix = f"{name}/versions"
    for entry in catalog.store.list_dir(prefix):
        url = f"{catalog.url}/{prefix}/{entry}"
        if not NAME_PATTERN.fullmatch(entry):
            report.problems.append(Problem(url, "not a version (its name is no version id)"))
            continue
        if not catalog.store.exists(f"{prefix}/{entry}/{METADATA_FILE}"):
            if not catalog.store.list_dir(f"{prefix}/{entry}"):
                continue  # an empty prefix (some servers keep one after gc deletes its objects): nothing is there
            msg = f"files without {METADATA_FILE}: an interrupted publish (or one still running elsewhere)"
            report.problems.append(Problem(url, msg))
            continue
        report.versions += 1
        try:
            meta = catalog.version_meta(name, entry)
            assert meta.remote is not None
            check: CacheCheck = verify_remote(meta, check_cache_dir)
        except CacheCorruptionError as exc:
            report.problems.append(Problem(_in_bucket(exc.path, url), exc.reason))
            continue
        except StableExploreError as exc:
            report.problems.append(Problem(url, str(exc)))
            continue
        report.problems.extend(Problem(_in_bucket(p.path, url), p.reason) for p in check.problems)
        report.nbytes += check.bytes_read
        report.batches += check.batches_checked
        report.shards += meta.num_shards
        if not check.problems:
            live.add(entry)
    return live


def _in_bucket(path: Path | str, version_url: str) -> str:
    """A problem's file named by its URL (checks run on a temp copy; a URL given already is kept)."""
    text = str(path)
    return text if "://" in text else f"{version_url}/{Path(text).name}"


def _check_refs(catalog: RemoteCatalog, name: str, live: set[str], report: FsckReport) -> None:
    tags = [t for t in catalog.store.list_dir(f"{name}/refs") if NAME_PATTERN.fullmatch(t)]
    if LATEST not in tags:
        report.problems.append(Problem(f"{catalog.url}/{name}/refs/{LATEST}", "the dataset has no 'latest' ref"))
    for tag in tags:
        url = f"{catalog.url}/{name}/refs/{tag}"
        try:
            version = catalog.read_ref(name, tag)
        except StableExploreError as exc:
            report.problems.append(Problem(url, str(getattr(exc, "reason", exc))))
            continue
        if version is not None and version not in live:
            report.problems.append(Problem(url, f"the ref points to version {version}, which is missing or damaged"))
