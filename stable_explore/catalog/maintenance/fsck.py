"""``fsck``: check a whole catalog (or one dataset) and list every problem, one line each, naming the file.

It re-hashes every shard and record batch, checks each version directory's name against the
id its metadata implies, every ref and source record, row segments and content digests, and
reports what killed processes left behind. It never changes anything: ``gc`` cleans up.

Examples
--------
>>> import tempfile, stable_explore as se
>>> from stable_explore.catalog import Catalog
>>> home = tempfile.mkdtemp()
>>> _ = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=home, progress=False)
>>> report = fsck(Catalog(home))
>>> report.ok, report.versions, report.problems
(True, 1, [])
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore._units import format_size
from stable_explore.catalog.fingerprints.file_state import LISTING_NAME, LISTINGS, read_listing
from stable_explore.catalog.names import LATEST, NAME_PATTERN
from stable_explore.errors import CacheNotFoundError, InvalidNameError, UnsafePathError
from stable_explore.storage.backends.fsutil import is_leftover
from stable_explore.storage.check.verify import Problem, check_cache_dir
from stable_explore.storage.format.cache_meta import METADATA_FILE

if TYPE_CHECKING:
    from stable_explore.catalog.catalog import Catalog

__all__ = ["FsckReport", "fsck"]


@dataclass
class FsckReport:
    """What ``fsck`` found: every problem (one line each, naming the file) and how much it read, how fast."""

    home: Path | str
    problems: list[Problem] = field(default_factory=list)
    datasets: int = 0
    versions: int = 0
    shards: int = 0
    batches: int = 0
    nbytes: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    @property
    def mb_per_s(self) -> float:
        """Shard bytes re-hashed per second (MB = 10**6 bytes)."""
        return self.nbytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        """One line: what was checked, how fast, and how many problems."""
        verdict = "no problems" if self.ok else f"{len(self.problems)} problem(s)"
        # The rate in the unit that shows it: a small catalog re-hashes KiB, never "(0 MB/s)".
        rate = f" ({format_size(int(self.nbytes / self.seconds))}/s)" if self.seconds > 0 and self.nbytes else ""
        return (
            f"{verdict}: {self.datasets} dataset(s), {self.versions} version(s), {self.shards} shard(s), "
            f"{self.batches} record batch digest(s), {format_size(self.nbytes)} checked in {self.seconds:.2f} s"
            f"{rate} - {self.home}"
        )

    def __str__(self) -> str:
        return "\n".join([*(str(p) for p in self.problems), self.summary()])


def fsck(catalog: Catalog, name: str | None = None) -> FsckReport:
    """Check every dataset of ``catalog`` (or only ``name``); return the report (it never raises for damage).

    Raises
    ------
    CacheNotFoundError
        ``name`` is given and there is no such dataset.
    """
    report = FsckReport(catalog.home)
    started = time.perf_counter()
    if name is not None:
        if not catalog.versions_dir(name).is_dir():
            msg = f"no dataset named {name!r} in {catalog.home}; datasets: {catalog.names() or 'none yet'}"
            raise CacheNotFoundError(msg)
        names = [name]
    else:
        names = catalog.names()
    for dataset in names:
        report.datasets += 1
        live = _check_versions(catalog, dataset, report)
        _check_refs(catalog, dataset, live, report)
        _check_sources(catalog, dataset, live, report)
        _check_leftovers(catalog.dataset_dir(dataset), report)
    report.seconds = time.perf_counter() - started
    return report


def _check_versions(catalog: Catalog, name: str, report: FsckReport) -> set[str]:
    """Check each entry of ``versions/``; return the ids of versions that are whole."""
    live: set[str] = set()
    root = catalog.versions_dir(name)
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            _check_leftover(entry, report)
            continue
        if not NAME_PATTERN.match(entry.name):
            report.problems.append(Problem(entry, "not a version directory (its name is no version id)"))
            continue
        try:
            catalog.version_dir(name, entry.name)
        except (UnsafePathError, InvalidNameError) as exc:
            report.problems.append(Problem(entry, str(getattr(exc, "reason", exc))))
            continue
        if not entry.is_dir():
            report.problems.append(Problem(entry, "not a version directory (a file)"))
            continue
        try:
            inside = sorted(entry.iterdir())
        except OSError as exc:
            report.problems.append(Problem(entry, f"cannot list the version directory: {exc.strerror or exc}"))
            continue
        for leftover in inside:  # partial files a killed push or pull left
            if leftover.name.startswith("."):
                _check_leftover(leftover, report)
        if not (entry / METADATA_FILE).is_file():
            msg = (
                f"a version directory without {METADATA_FILE}: an interrupted pull, push or delete (a retry of the "
                "pull or push resumes it; gc removes it once nothing wrote to it for a day)"
            )
            report.problems.append(Problem(entry, msg))
            continue
        report.versions += 1
        check = check_cache_dir(entry)
        report.problems.extend(check.problems)
        report.nbytes += check.bytes_read
        report.batches += check.batches_checked
        if check.meta is not None:
            report.shards += check.meta.num_shards
        if not check.problems:
            live.add(entry.name)
    return live


def _read_pointer(path: Path, report: FsckReport, what: str) -> str | None:
    """The version id a ref or source record holds, or None (with the problem reported)."""
    if path.is_symlink() or not path.is_file():
        report.problems.append(Problem(path, f"a {what} must be a plain file"))
        return None
    try:
        text = path.read_bytes().decode("utf-8").strip()
    except UnicodeDecodeError:
        report.problems.append(Problem(path, f"the {what} is not UTF-8 text"))
        return None
    except OSError as exc:
        report.problems.append(Problem(path, f"cannot read the {what}: {exc.strerror or exc}"))
        return None
    if not NAME_PATTERN.match(text):
        report.problems.append(Problem(path, f"the {what} holds {text[:80]!r}, which is no version id"))
        return None
    return text


def _check_refs(catalog: Catalog, name: str, live: set[str], report: FsckReport) -> None:
    root = catalog.refs_dir(name)
    if not live and not root.is_dir() and not any(catalog.versions_dir(name).iterdir()):
        msg = "an empty dataset: no versions and no refs (left by a first build that failed)"
        report.problems.append(Problem(catalog.dataset_dir(name), msg))
        return
    if not root.is_dir() or not (root / LATEST).exists():
        report.problems.append(Problem(root / LATEST, "the dataset has no 'latest' ref"))
    if not root.is_dir():
        return
    for path in sorted(root.iterdir()):
        if path.name.startswith("."):
            _check_leftover(path, report)
            continue
        version = _read_pointer(path, report, "ref")
        if version is not None and version not in live:
            report.problems.append(Problem(path, f"the ref points to version {version}, which is missing or damaged"))


def _check_sources(catalog: Catalog, name: str, live: set[str], report: FsckReport) -> None:
    root = catalog.sources_dir(name)
    if not root.is_dir():
        return
    for path in sorted(root.iterdir()):
        if path.name.startswith("."):
            _check_leftover(path, report)
            continue
        if path.name == LISTINGS and path.is_dir() and not path.is_symlink():
            _check_listings(path, report)
            continue
        version = _read_pointer(path, report, "source record")
        if version is not None and version not in live:
            msg = f"the source record names version {version}, which is missing or damaged (gc drops the record)"
            report.problems.append(Problem(path, msg))


def _check_listings(root: Path, report: FsckReport) -> None:
    """The folder listings builds keep (``<digest>.json.gz``) to explain a rebuild; a damaged one is only named."""
    for path in sorted(root.iterdir()):
        if path.name.startswith("."):
            _check_leftover(path, report)
        elif not LISTING_NAME.fullmatch(path.name) or path.is_symlink() or not path.is_file():
            report.problems.append(Problem(path, "not a folder listing (<digest>.json.gz, a plain file)"))
        elif read_listing(root, path.name.split(".", 1)[0]) is None:
            msg = "an unreadable folder listing: a rebuild cannot name the files that changed (deleting it is safe)"
            report.problems.append(Problem(path, msg))


def _check_leftovers(dataset_dir: Path, report: FsckReport) -> None:
    for entry in sorted(dataset_dir.iterdir()):
        if entry.name.startswith("."):
            _check_leftover(entry, report)


def _check_leftover(entry: Path, report: FsckReport) -> None:
    reason = is_leftover(entry)
    if reason:
        report.problems.append(Problem(entry, reason))
