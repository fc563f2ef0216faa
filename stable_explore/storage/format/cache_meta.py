"""The on-disk format of one version: ``_metadata.json`` as a value, and its checks of shape and seal.

A version's directory holds ``shard-NNNNN.arrow`` files (Arrow IPC) and ``_metadata.json``.
The metadata keeps every field of stable-datasets' format version 1 (so that reader lists and reads
our shards) and adds the full ``features``, one content digest and byte size per shard, the key
type and the compression. Format 2 adds ``row_segments``, for a version whose rows are runs of
shards. Every shard also stores two row columns: ``__key__`` (the generator's key, or the running
index) and ``__row_hash__`` (a 64-bit content hash), so versions can be diffed row by row without
decoding images.

Format revision 2 (``format_revision``; ``cache_format_version`` stays 1 so that stable-datasets
still reads our shards) adds ``batch_digests`` (per shard: where each record batch ends in
the file and its xxh3 digest, checked on first read; see :mod:`stable_explore.storage.read.batches`)
and ``metadata_digest``, a digest of every other field, so that a hand edit of class names,
dtypes, descriptions or row segments is caught when the metadata is loaded. Caches of
revision 1 (or stable-datasets') have neither and keep working unchecked.

Format revision 3 defines the content digest over runs of rows and lists them (``content_runs``).
Revision 4 keeps both long lists out of ``_metadata.json``, in small files beside it that a save
links unchanged (see :mod:`stable_explore.storage.format.sidecars`): each shard's batch digests in
``shard-NNNNN.batches``, and the runs in ``content-runs.json`` plus a short list of splices.

Reading the file, recovering a replacement killed half-way and checking the files it lists are
:mod:`stable_explore.storage.read.open_meta`'s; the small files are read by the
:class:`~stable_explore.storage.format.sidecars.SmallFiles` a value is given (``files``), which
:mod:`stable_explore.storage.read.small_files` provides: nothing here reads or writes one.
"""

from __future__ import annotations

import copy
import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore._canonical import canonical_json
from stable_explore.errors import (
    CacheCorruptionError,
    NotACacheError,
    UnsafePathError,
)
from stable_explore.schema import Features
from stable_explore.storage.format.batch_digests import BatchDigests
from stable_explore.storage.format.column_groups import ColumnGroups
from stable_explore.storage.format.content_runs import RUNS, ParentRuns, checked_runs
from stable_explore.storage.format.file_ref import FileRef
from stable_explore.storage.format.hashing import digest_of_runs
from stable_explore.storage.format.metadata import VersionMetadata, version_id_of
from stable_explore.storage.format.sidecars import BatchDigestList, SmallFiles, no_reader
from stable_explore.storage.format.version_files import METADATA_FILE, REMOTE_FILE

if TYPE_CHECKING:
    from stable_explore.storage.format.cell_patches import CellPatches, ParentPatches
    from stable_explore.storage.format.remote_location import RemoteLocation
    from stable_explore.storage.format.row_segments import ParentSegments

__all__ = [
    "COMPRESSIONS",
    "VersionMetadata",
    "version_id_of",
    "DEFAULT_SHARD_SIZE_BYTES",
    "METADATA_FILE",
    "REMOTE_FILE",
    "ShardedCacheMeta",
    "meta_from_dict",
]

CACHE_FORMAT_VERSION = 1
SEGMENTED_FORMAT_VERSION = 2  # only for versions whose rows are runs of shards (see ShardedCacheMeta.segments)
FORMAT_NAME = "stable-explore"
FORMAT_REVISION = 6  # 2: batch_digests, metadata_digest; 3: content digest over runs; 4: both lists in files
PATCHES_FORMAT_REVISION = 5  # cell patches
GROUPS_FORMAT_REVISION = 6  # column groups (see storage.format.column_groups)
PLAIN_FORMAT_REVISION = 4  # what a version without cell patches is written as (releases before 5 read it)
METADATA_DIGEST_FIELD = "metadata_digest"
SHARD_NAME_FMT = "shard-{:05d}.arrow"
DEFAULT_SHARD_SIZE_BYTES = 256 * 1024 * 1024
COMPRESSIONS = (None, "lz4", "zstd")
KEY_TYPES = {"int64": pa.int64(), "string": pa.string()}


@dataclass(frozen=True)
class ShardedCacheMeta:
    """What ``_metadata.json`` says about a cache directory: a value, made from the parsed file by :meth:`from_dict`.

    The first six fields are stable-datasets'; the rest are empty for a cache that
    stable-datasets' writer produced. Checking it against the files it lists, and reading the file, are
    :func:`~stable_explore.storage.read.open_meta.read_sharded_cache_meta`'s. The small files it names
    (content runs, cell patches) are read the first time they are asked for, by its ``files``.

    Examples
    --------
    >>> raw = {"num_rows": 3, "num_shards": 1, "shard_filenames": ["shard-00000.arrow"], "shard_row_counts": [3],
    ...        "cache_format_version": 1, "schema_fingerprint": "f"}
    >>> meta = ShardedCacheMeta.from_dict(Path("/tmp/v"), raw)
    >>> meta.segments, meta.to_dict() == raw
    ([(0, 0, 3)], True)
    >>> meta.num_rows = 4
    Traceback (most recent call last):
    ...
    dataclasses.FrozenInstanceError: cannot assign to field 'num_rows'
    """

    cache_dir: Path
    num_rows: int
    num_shards: int
    shard_filenames: list[str]
    shard_row_counts: list[int]
    schema_fingerprint: str
    shard_hashes: list[str] | None = None
    shard_sizes: list[int] | None = None
    features: Features | None = None
    key_type: str = "int64"
    compression: str | None = None
    raw: dict[str, Any] | None = None
    row_segments: list[tuple[int, int, int]] | None = None
    version_metadata: VersionMetadata = field(default_factory=VersionMetadata)
    shard_size_target_bytes: int | None = None
    batch_digests: BatchDigestList | None = None
    """Per shard, its record batches' digests, read when first asked for (None for a cache, or a shard,
    written before revision 2)."""
    remote: RemoteLocation | None = None
    """For a version in a bucket: where its shards are (``cache_dir`` is then a local copy of its metadata only)."""
    segments_file: ParentSegments | None = None
    """Revision 4: the file that holds this version's row segments, for a save to link (None: inline, or none)."""
    content_runs_field: Any = None
    """``content_runs`` as recorded (checked in shape): inline runs (revision 3), or a file and splices (4)."""
    cell_patches_field: Any = None
    """Revision 5: ``cell_patches`` as recorded (checked in shape; its file is read when first asked for)."""
    column_groups: ColumnGroups | None = None
    """Revision 6: columns kept in group files beside the shards (None: every column is in the shards)."""
    files: SmallFiles | None = field(default=None, repr=False, compare=False)
    """What reads the small files it names (None: made from a dict alone; asking for one of them raises)."""
    _runs: tuple[list[tuple[int, str]], ParentRuns | None] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _patches: tuple[CellPatches, ParentPatches] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_dict(cls, cache_dir: Path, raw: Mapping[str, object], files: SmallFiles | None = None) -> ShardedCacheMeta:
        """The metadata ``raw`` (``_metadata.json`` parsed) of the version in ``cache_dir``; no file is read.

        ``files`` reads the small files it names when they are first asked for (without it, asking
        raises). See :func:`meta_from_dict`, which also takes the fields a caller has checked already.
        """
        return meta_from_dict(cache_dir, raw, files=files)

    def to_dict(self) -> dict[str, Any]:
        """The metadata as ``_metadata.json`` holds it (a copy: changing it changes nothing here)."""
        return copy.deepcopy(self.raw) if self.raw is not None else {}

    @property
    def cell_patches(self) -> CellPatches | None:
        """The label cells this version changes in its shards without copying their rows (None: none)."""
        loaded = self._load_patches()
        return None if loaded is None else loaded[0]

    @property
    def patches_file(self) -> ParentPatches | None:
        """The cell patches file of this version and its entries, for a save to link (None: none)."""
        loaded = self._load_patches()
        return None if loaded is None else loaded[1]

    def _load_patches(self) -> tuple[CellPatches, ParentPatches] | None:
        if self.cell_patches_field is None:
            return None
        if self._patches is None:
            meta_path = self.cache_dir / METADATA_FILE
            sealed_by = (self.raw or {}).get(METADATA_DIGEST_FIELD)
            if self.files is None:
                raise no_reader(meta_path)
            patches, parent = self.files.cell_patches(
                self.cache_dir, self.cell_patches_field, meta_path, self.remote, sealed_by=sealed_by
            )
            known = set(self.shard_hashes or ())
            stray = next((digest for digest in patches.digests() if digest not in known), None)
            if stray is not None:
                raise corrupt(meta_path, f"'cell_patches' names shard digest {stray}, which no shard has")
            object.__setattr__(self, "_patches", (patches, parent))  # read once, on first use
        return self._patches

    def remember_small_files(
        self,
        runs: tuple[list[tuple[int, str]], ParentRuns | None] | None = None,
        patches: tuple[CellPatches, ParentPatches] | None = None,
    ) -> None:
        """Take this version's runs and cell patches from the save that wrote them, instead of reading its files.

        A save holds both in memory when it publishes; the version it returns (and the next save
        from it) would otherwise read back, check and parse the small files it has just written.
        Each is taken only where this value records the field and has not read its file yet.
        """
        if runs is not None and self.content_runs_field is not None and self._runs is None:
            object.__setattr__(self, "_runs", runs)
        if patches is not None and self.cell_patches_field is not None and self._patches is None:
            object.__setattr__(self, "_patches", patches)

    @property
    def content_runs(self) -> list[tuple[int, str]] | None:
        """(row count, digest) of each run of rows the content digest is made of (revision 3 on; None before).

        Read (from ``content-runs.json`` in revision 4) and checked against the content digest
        the first time it is asked for.
        """
        loaded = self._load_runs()
        return None if loaded is None else loaded[0]

    @property
    def runs_file(self) -> ParentRuns | None:
        """The runs file of this version and its runs, for a save to link (None before revision 4)."""
        loaded = self._load_runs()
        return None if loaded is None else loaded[1]

    def _load_runs(self) -> tuple[list[tuple[int, str]], ParentRuns | None] | None:
        if self.content_runs_field is None:
            return None
        if self._runs is None:
            raw = self.raw or {}
            meta_path = self.cache_dir / METADATA_FILE
            if isinstance(self.content_runs_field, list):  # inline (revision 3): no file to read
                runs, parent = checked_runs(self.content_runs_field, "'content_runs'", meta_path), None
            elif self.files is None:
                raise no_reader(meta_path)
            else:
                runs, parent = self.files.content_runs(self.cache_dir, self.content_runs_field, meta_path, self.remote)
            _check_runs_total(runs, raw, self.num_rows, meta_path)
            object.__setattr__(self, "_runs", (runs, parent))  # read once, on first use
        return self._runs

    @property
    def format_revision(self) -> int:
        """Which revision of the format wrote this cache (1 for caches that do not say, stable-datasets' too)."""
        revision = (self.raw or {}).get("format_revision", 1)
        return revision if isinstance(revision, int) else 1

    @property
    def implied_version_id(self) -> str | None:
        """The version id this metadata's content fields give (None for a stable-datasets cache: it has none)."""
        if self.is_stable_datasets_v1:
            return None
        return version_id_of(self.raw or {})

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """The rows in order, as (shard index, first row in that shard, row count) runs.

        Format version 1 reads every shard whole; version 2 (an edited version that reuses
        parts of its parent's shards) lists the runs explicitly.
        """
        if self.row_segments is not None:
            return list(self.row_segments)
        return [(i, 0, count) for i, count in enumerate(self.shard_row_counts)]

    @property
    def shard_paths(self) -> list[Path]:
        """Absolute paths of the shard files, in row order."""
        return [self.cache_dir / name for name in self.shard_filenames]

    @property
    def shard_features(self) -> Features | None:
        """The features of the shard files: :attr:`features` less the columns kept in column groups."""
        return self.column_groups.base_features if self.column_groups is not None else self.features

    @property
    def is_stable_datasets_v1(self) -> bool:
        """True for a cache written by stable-datasets (no row keys, hashes or features)."""
        return self.shard_hashes is None

    @property
    def nbytes(self) -> int:
        """Bytes of shard files on disk, and of column group files (revision 6)."""
        groups = sum(f.size for f in self.column_groups.files()) if self.column_groups is not None else 0
        if self.shard_sizes is not None:
            return sum(self.shard_sizes) + groups
        return sum(p.stat().st_size for p in self.shard_paths) + groups


def refuse_other_layouts(raw: Mapping[str, object], meta_path: Path) -> None:
    """Metadata of another layout (stable-datasets' Lance rows) is no damage: say which layout it is, by name."""
    named = raw.get("layout")  # a stable-explore cache never has one
    if named == "arrow-shards" and raw.get("format") == "arrow":
        return  # stable-datasets' Arrow layout: its format version 1 plus these two names, read as format 1
    if named is None:
        if raw.get("format") in (None, FORMAT_NAME) or "cache_format_version" in raw:
            return
        named = raw.get("format")
    shown = repr(named) if isinstance(named, str) and len(named) <= 80 else f"{str(named)[:80]!r}"
    msg = (
        f"layout {shown} is not a stable-explore cache (its {METADATA_FILE} names that layout, where a "
        f"stable-explore cache has 'cache_format_version' and Arrow shards); open it with the library that "
        "wrote it (stable_datasets), or rebuild it here with se.build"
    )
    raise NotACacheError(meta_path, msg)


def corrupt(path: Path, reason: str) -> CacheCorruptionError:
    return CacheCorruptionError(path, reason)


def expect_int_list(raw: Mapping[str, object], field: str, length: int, path: Path) -> list[int]:
    values = raw.get(field)
    if (
        not isinstance(values, list)
        or len(values) != length
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)
    ):
        msg = f"{field!r} must be a list of {length} non-negative ints, found {values!r:.200}"
        raise corrupt(path, msg)
    return values


def checked_shard_name(name: object, cache_dir: Path, meta_path: Path, resolved_dir: Path | None = None) -> str:
    """Reject shard names that could point outside the cache directory (``resolved_dir``: it, resolved)."""
    if not isinstance(name, str) or not name:
        raise UnsafePathError(meta_path, f"shard file name must be a non-empty string, found {name!r}")
    separators = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    if name in (".", "..") or any(s in name for s in separators) or "\x00" in name or Path(name).is_absolute():
        raise UnsafePathError(meta_path, f"shard file name {name!r} is not a plain file name inside the cache")
    if resolved_dir is None:
        resolved_dir = cache_dir.resolve()
    # a plain name inside a resolved folder stays there unless it is a link (one lstat, not one per folder)
    candidate = resolved_dir / name
    resolved = candidate.resolve() if candidate.is_symlink() else candidate
    if resolved.parent != resolved_dir:
        raise UnsafePathError(meta_path, f"shard file {name!r} resolves to {resolved}, outside {cache_dir}")
    return name


def metadata_digest(raw: Mapping[str, object]) -> str:
    """The digest of every field of ``_metadata.json`` but the digest itself (canonical JSON, SHA-256)."""
    import hashlib

    body = {k: v for k, v in raw.items() if k != METADATA_DIGEST_FIELD}
    return "sha256:" + hashlib.sha256(canonical_json(body).encode("utf-8", "surrogatepass")).hexdigest()


def check_metadata_digest(raw: Mapping[str, object], meta_path: Path) -> None:
    recorded = raw.get(METADATA_DIGEST_FIELD)
    if recorded is None:
        return  # written before format revision 2
    found = metadata_digest(raw)
    if recorded != found:
        msg = (
            f"the metadata does not match its own {METADATA_DIGEST_FIELD!r}: it was edited or damaged after it "
            "was written (class names, dtypes, descriptions or row segments changed by hand?); restore it from "
            "a copy, or rebuild this version (force=True)"
        )
        raise corrupt(meta_path, msg)


def check_seal(raw: Mapping[str, object], cache_dir: Path, meta_path: Path) -> None:
    """Raise naming ``_metadata.json`` when it is not what was written (before blaming a file it lists)."""
    check_implied_version_id(raw, cache_dir, meta_path)
    check_metadata_digest(raw, meta_path)


def check_implied_version_id(raw: Mapping[str, object], cache_dir: Path, meta_path: Path) -> None:
    """A recorded version id must be what the content fields give (and the directory's name, in a catalog)."""
    recorded = raw.get("version_id")
    if not isinstance(recorded, str):
        return
    expected = version_id_of(raw)
    if recorded != expected or (cache_dir.parent.name == "versions" and cache_dir.name != recorded):
        msg = (
            f"version id {recorded} (directory {cache_dir.name}) does not match the content and labels "
            f"recorded in the metadata, which give {expected}: the features, description, license, "
            "metadata or row digest were edited after the version was published"
        )
        raise corrupt(meta_path, msg)


def checked_batch_digests(
    raw: Mapping[str, object],
    counts: list[int],
    meta_path: Path,
    resolved_dir: Path | None = None,
    remote: RemoteLocation | None = None,
    files: SmallFiles | None = None,
) -> BatchDigestList | None:
    """Check ``batch_digests``: per shard, digests inline (revisions 2-3), a file beside the shard (4), or None."""
    entries = raw.get("batch_digests")
    if entries is None:
        return None
    if not isinstance(entries, list) or len(entries) != len(counts):
        raise corrupt(
            meta_path, f"'batch_digests' must list one entry per shard ({len(counts)}), found {entries!r:.100}"
        )
    checked: list[BatchDigests | FileRef | None] = []
    for position, entry in enumerate(entries):
        if entry is None:
            checked.append(None)
        elif isinstance(entry, Mapping) and "file" in entry:
            ref = FileRef.from_json(entry, meta_path, f"'batch_digests' of shard {position}")
            checked_shard_name(ref.file, meta_path.parent, meta_path, resolved_dir)
            checked.append(ref)
        else:
            digests = BatchDigests.from_json(entry, meta_path, position)
            if sum(digests.rows) != counts[position]:
                msg = f"'batch_digests' of shard {position} count {sum(digests.rows)} rows, not {counts[position]}"
                raise corrupt(meta_path, msg)
            checked.append(digests)
    return BatchDigestList(meta_path.parent, checked, counts, remote, files)


def checked_column_groups(
    raw: Mapping[str, object], num_rows: int, features: Features | None, meta_path: Path, shard_names: list[str]
) -> ColumnGroups | None:
    """Check ``column_groups`` (revision 6): its files' names and rows, and that it gives the version's features."""
    value = raw.get("column_groups")
    if value is None:
        return None
    if features is None:
        raise corrupt(meta_path, "'column_groups' needs the stable-explore fields (features, shard digests)")
    groups = ColumnGroups.from_json(value, meta_path, num_rows=num_rows)
    if groups.features().to_dict() != features.to_dict():
        msg = "'column_groups' do not give the version's 'features' (base features with each group's applied)"
        raise corrupt(meta_path, msg)
    taken = set(shard_names)
    for f in groups.files():
        if f.file in taken or (f.batches is not None and f.batches.file in taken):
            raise corrupt(meta_path, f"column group file {f.file!r} has the name of another file of the version")
    return groups


def checked_content_runs(
    raw: Mapping[str, object], num_rows: int, meta_path: Path, resolved_dir: Path | None = None
) -> tuple[Any, FileRef | None]:
    """Check ``content_runs`` as far as the metadata alone allows: the field (None: not recorded), and its file.

    Inline runs (revision 3) are checked at once; a runs file (revision 4) when first read.
    """
    entries = raw.get("content_runs")
    if entries is None:
        return None, None
    if isinstance(entries, Mapping):
        record = RUNS.record_from_json(entries, meta_path)
        checked_shard_name(record.base.file, meta_path.parent, meta_path, resolved_dir)
        return entries, record.base
    if not isinstance(entries, list):
        RUNS.record_from_json(entries, meta_path)  # neither runs nor a file: named as a file's field would be
    runs = checked_runs(entries, "'content_runs'", meta_path)
    _check_runs_total(runs, raw, num_rows, meta_path)
    return entries, None


def checked_cell_patches(
    raw: Mapping[str, Any], meta_path: Path, resolved_dir: Path | None = None
) -> tuple[Any, FileRef | None]:
    """Check ``cell_patches`` as far as the metadata alone allows: the field (None: none), and its file."""
    value = raw.get("cell_patches")
    if value is None:
        return None, None
    if raw.get("shard_hashes") is None or len(set(raw["shard_hashes"])) != len(raw["shard_hashes"]):
        raise corrupt(meta_path, "'cell_patches' needs shards with distinct digests to name them by")
    base = FileRef.from_json(value, meta_path, "'cell_patches'")  # its entries are checked when first read
    checked_shard_name(base.file, meta_path.parent, meta_path, resolved_dir)
    return value, base


def _check_runs_total(runs: list[tuple[int, str]], raw: Mapping[str, object], num_rows: int, meta_path: Path) -> None:
    """Runs must cover every row and combine into the recorded content digest."""
    if sum(rows for rows, _ in runs) != num_rows:
        msg = f"'content_runs' count {sum(rows for rows, _ in runs)} rows, but num_rows is {num_rows}"
        raise corrupt(meta_path, msg)
    combined = digest_of_runs(str(raw.get("key_type", "int64")), runs)
    if combined != raw.get("content_digest"):
        msg = f"'content_runs' combine into {combined}, not the recorded content digest {raw.get('content_digest')}"
        raise corrupt(meta_path, msg)


def checked_segments(segments: object, counts: list[int], meta_path: Path) -> list[tuple[int, int, int]]:
    """Check the row segments: each run names a listed shard and stays inside its rows."""
    if not isinstance(segments, list):
        raise corrupt(meta_path, f"format version {SEGMENTED_FORMAT_VERSION} needs a 'row_segments' list")
    if len(segments) > _MANY_RUNS and _segments_fit(segments, counts):
        return list(map(tuple, segments))
    checked = []  # something is wrong: find the first bad run, to name it
    for run in segments:
        ok = isinstance(run, list) and len(run) == 3 and all(type(v) is int for v in run)
        if not ok or not (0 <= run[0] < len(counts) and run[1] >= 0 and 0 < run[2] <= counts[run[0]] - run[1]):
            raise corrupt(meta_path, f"row segment {run!r:.100} is not [shard, start, count] inside a listed shard")
        checked.append((run[0], run[1], run[2]))
    return checked


_MANY_RUNS = 128  # more row segments than this are checked in arrays (fewer: a loop is quicker)


def _segments_fit(segments: list[Any], counts: list[int]) -> bool:
    """Whether every run is [shard, start, count] of ints inside a listed shard, checked in arrays.

    A version of many saves has thousands of runs: a loop of Python per run cost a read of it a
    measurable share of its time (see benchmarks/bench_versions.py --table).
    """
    if set(map(type, segments)) != {list} or set(map(len, segments)) != {3}:
        return False
    if set(map(type, itertools.chain.from_iterable(segments))) != {int}:  # bools and floats are not runs
        return False
    try:
        runs = np.array(list(itertools.chain.from_iterable(segments)), dtype=np.int64).reshape(-1, 3)
    except OverflowError:
        return False
    shard, start, count = runs[:, 0], runs[:, 1], runs[:, 2]
    if shard.min() < 0 or shard.max() >= len(counts):
        return False
    rows = np.asarray(counts, dtype=np.int64)[shard]
    return bool(np.all(start >= 0) and np.all(count > 0) and np.all(count <= rows - start))


def meta_from_dict(
    cache_dir: Path,
    raw: Mapping[str, Any],
    *,
    names: list[str] | None = None,
    features: Features | None = None,
    segments: list[tuple[int, int, int]] | None = None,
    batch_digests: BatchDigestList | None = None,
    column_groups: ColumnGroups | None = None,
    segments_file: ParentSegments | None = None,
    remote: RemoteLocation | None = None,
    files: SmallFiles | None = None,
) -> ShardedCacheMeta:
    """The metadata ``raw`` (``_metadata.json`` parsed) as a :class:`ShardedCacheMeta` of ``cache_dir``, no file read.

    The fields already checked may be given (``names``, ``features``, ``segments``, ``batch_digests``,
    ``column_groups``), and what the folder says beside the file (``segments_file``, ``remote``); ``files``
    reads the small files it names (see :class:`~stable_explore.storage.format.sidecars.SmallFiles`). The
    checks against the files it lists are :func:`~stable_explore.storage.read.open_meta.read_sharded_cache_meta`'s.

    Examples
    --------
    >>> raw = {"num_rows": 2, "num_shards": 1, "shard_filenames": ["shard-00000.arrow"], "shard_row_counts": [2],
    ...        "cache_format_version": 1}
    >>> meta = meta_from_dict(Path("/tmp/v"), raw)
    >>> meta.num_rows, meta.shard_paths
    (2, [PosixPath('/tmp/v/shard-00000.arrow')])
    """
    if features is None and raw.get("features") is not None:
        features = Features.from_dict(raw["features"])
    if batch_digests is None and raw.get("batch_digests") is not None:
        counts = list(raw["shard_row_counts"])
        batch_digests = checked_batch_digests(raw, counts, cache_dir / METADATA_FILE, remote=remote, files=files)
    return ShardedCacheMeta(
        cache_dir=cache_dir,
        num_rows=raw["num_rows"],
        num_shards=raw["num_shards"],
        shard_filenames=list(names if names is not None else raw["shard_filenames"]),
        shard_row_counts=list(raw["shard_row_counts"]),
        schema_fingerprint=raw.get("schema_fingerprint", ""),
        shard_hashes=raw.get("shard_hashes"),
        shard_sizes=raw.get("shard_sizes"),
        features=features,
        key_type=raw.get("key_type", "int64"),
        compression=raw.get("compression"),
        raw=dict(raw),
        version_metadata=VersionMetadata.from_json(raw, cache_dir / METADATA_FILE),
        shard_size_target_bytes=_optional_size(raw.get("shard_size_target_bytes")),
        # format 1 reads every shard whole, whatever else the file says
        row_segments=segments if raw.get("cache_format_version") == SEGMENTED_FORMAT_VERSION else None,
        batch_digests=batch_digests,
        content_runs_field=raw.get("content_runs"),
        cell_patches_field=raw.get("cell_patches"),
        column_groups=column_groups
        if column_groups is not None or raw.get("column_groups") is None
        else ColumnGroups.from_json(raw["column_groups"], cache_dir / METADATA_FILE, num_rows=raw["num_rows"]),
        segments_file=segments_file,
        remote=remote,
        files=files,
    )


def _optional_size(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
