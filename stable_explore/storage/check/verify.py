"""Checking a version end to end: every shard's digest and structure, and the digest of its rows.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.storage.write.writer import write_sharded_arrow_cache
>>> out = pathlib.Path(tempfile.mkdtemp()) / "c"
>>> _ = write_sharded_arrow_cache(({"x": i} for i in range(3)), Features(x=Value("int64")), out)
>>> verify(out).num_rows
3
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.errors import CacheCorruptionError, NotACacheError
from stable_explore.schema import HASH_COLUMN, KEY_COLUMN
from stable_explore.storage.format.cache_meta import METADATA_FILE, ShardedCacheMeta
from stable_explore.storage.format.hashing import (
    CONTENT_DIGEST_ALGORITHM,
    FILE_HASH_ALGORITHM,
    ContentDigest,
    LegacyContentDigest,
    hash_file,
)
from stable_explore.storage.format.sidecars import BatchDigestList
from stable_explore.storage.kept import FileIdentity, Kept, identity_of, kept
from stable_explore.storage.read.batches import BATCH_HASH_ALGORITHM, bad_columns, split_matches
from stable_explore.storage.read.file_batches import FileBatches
from stable_explore.storage.read.open_files import kept_as
from stable_explore.storage.read.open_meta import read_sharded_cache_meta
from stable_explore.storage.read.shard_file import open_shard
from stable_explore.storage.read.small_files import SMALL_FILES

if TYPE_CHECKING:
    import pyarrow as pa

    from stable_explore.storage.format.cell_patches import CellPatches
    from stable_explore.storage.read.batches import BatchDigests

__all__ = [
    "CacheCheck",
    "Problem",
    "VerifyReport",
    "check_cache_dir",
    "check_rows",
    "content_digest_of",
    "content_digest_of_files",
    "feed_rows",
    "verify",
]


def content_digest_of(meta: ShardedCacheMeta) -> str:
    """The content digest of a cache's rows in order, read from the key and row-hash columns only.

    The definition is the one the recorded digest names (as shard digests name theirs): runs
    of rows (``xxh3_128-runs:``, format revision 3 on, :class:`ContentDigest`), or one stream
    (``xxh3_128:``, revisions 1 and 2, :class:`LegacyContentDigest`), so an old cache is
    checked as it was written and its id is never recomputed.
    """
    recorded = meta.version_metadata.content_digest or ""
    if meta.column_groups is not None:
        return _joined_content_digest(meta)
    if recorded.startswith(CONTENT_DIGEST_ALGORITHM + ":") or (not recorded and meta.format_revision >= 3):
        return content_digest_of_files(
            meta.shard_paths, meta.segments, patches=meta.cell_patches, shard_digests=meta.shard_hashes
        )
    legacy = LegacyContentDigest()
    feed_rows(legacy, meta.shard_paths, meta.segments)
    return legacy.hexdigest()


_JOINED_ROWS = 65536  # rows of a version with column groups hashed at a time


def _joined_content_digest(meta: ShardedCacheMeta) -> str:
    """The content digest of a version with column groups: keys from its shards, row hashes joined with its groups."""
    from stable_explore.storage.read.joined import open_reader

    reader = open_reader(meta)
    digest = ContentDigest()
    for start in range(0, meta.num_rows, _JOINED_ROWS):
        table = reader.slice(start, _JOINED_ROWS, [KEY_COLUMN, HASH_COLUMN])
        digest.update(table.column(0).combine_chunks(), table.column(1).to_numpy())
    return digest.hexdigest()


def content_digest_of_files(
    paths: list[Path],
    segments: Iterable[Iterable[int]],
    *,
    patches: CellPatches | None = None,
    shard_digests: list[str] | None = None,
) -> str:
    """The content digest (format revision 3) of the rows ``segments`` (shard, start, count) pick from ``paths``.

    ``patches`` (with the ``shard_digests`` they name shards by) replace the row hashes of patched rows.
    """
    digest = ContentDigest()
    feed_rows(digest, paths, segments, patches=patches, shard_digests=shard_digests)
    return digest.hexdigest()


_OPENED: Kept[FileIdentity, pa.Table] = kept("verify row columns", max_entries=64, holds_files=True)


def _row_columns(path: Path) -> pa.Table | FileBatches:
    """The key and row-hash columns of a shard, memory-mapped; kept for the file's inode.

    Shards never change once written, and saves link them into each new version, so a chain of
    saves reopens the same inodes: the table (a map, no copy) is kept per (device, inode, size,
    mtime) for the next save instead of reading a footer of thousands of batches again. A shard
    a reader of this process has open (a save's parent, whose rows the save took) gives its
    record batches instead: a save that hashes a few runs again reads only the batches they span.
    """
    key = identity_of(path.stat())
    read = kept_as(key, "")
    if read is not None and isinstance(read.batches, FileBatches):
        return read.batches.seen_from(path)
    table = _OPENED.get(key)
    if table is None:
        table = open_shard(path, validate=False, columns=[KEY_COLUMN, HASH_COLUMN])
        _OPENED.put(key, table)
    return table


def _row_slice(source: pa.Table | FileBatches, start: int, length: int) -> pa.Table:
    """Rows [start, start + length) of a shard's key and row-hash columns (of a table, or of its batches)."""
    if isinstance(source, FileBatches):
        return source.rows(start, length, [KEY_COLUMN, HASH_COLUMN])
    return source.slice(start, length)


def feed_rows(
    digest: ContentDigest | LegacyContentDigest,
    paths: list[Path],
    segments: Iterable[Iterable[int]],
    start: int = 0,
    stop: int | None = None,
    tables: dict[int, pa.Table | FileBatches] | None = None,
    *,
    open_columns: Callable[[int], pa.Table | None] | None = None,
    patches: CellPatches | None = None,
    shard_digests: list[str] | None = None,
) -> None:
    """Feed ``digest`` the keys and row hashes of rows ``start:stop`` of the version that ``segments`` describe.

    ``tables`` caches the opened shards across calls (only the two row columns are read, and
    only the rows fed are validated in full; a shard a reader has open gives the batches that hold
    them, each of whose structure is checked whole as it is read). ``open_columns`` may give a shard's two row
    columns from elsewhere (a shard in a bucket); when it returns None, ``paths`` is read.
    ``patches`` replace the row hashes of the rows they patch (shards named by ``shard_digests``).
    """
    tables = {} if tables is None else tables
    position = 0
    for shard, first, count in segments:
        lo, hi = max(start, position), min(position + count, stop if stop is not None else position + count)
        position += count
        if lo >= hi:
            if stop is not None and position >= stop:
                break
            continue
        if shard not in tables:
            found = open_columns(shard) if open_columns is not None else None
            tables[shard] = found if found is not None else _row_columns(paths[shard])
        table = tables[shard]
        offset = first + lo - (position - count)
        piece = _row_slice(table, offset, hi - lo)
        piece.validate(full=True)  # only the two small columns, of the rows fed
        # fed a few large slices at a time (the digest does not depend on how rows are cut), not one call per
        # record batch; memory stays bounded however large the shard
        for at in range(0, len(piece), _FEED_ROWS):
            part = piece.slice(at, _FEED_ROWS)
            hashes = part.column(1).to_numpy()
            if patches is not None and shard_digests is not None:  # only the rows fed are patched, not the shard
                hashes = patches.patched_row_hashes(shard_digests[shard], offset + at, hashes, table.num_rows)
            digest.update(part.column(0).combine_chunks(), hashes)


_FEED_ROWS = 1 << 16  # rows of keys and row hashes fed to a digest at once (about 1.5 MB of short string keys)


_MAX_BATCH_LINES = 20  # per shard: a shard damaged throughout is not a thousand lines


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a cache: the file (a path, or a URL in a bucket), and what is wrong with it."""

    path: Path | str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True, repr=False)
class VerifyReport:
    """What ``verify`` checked: all of it passed, or it would have raised."""

    cache_dir: Path
    num_shards: int
    num_rows: int
    nbytes: int
    seconds: float
    hashed: bool
    batch_digests: int = 0
    """How many record batches were checked against their own digests (0: the cache records none)."""
    location: str | None = None
    """Where the version lives when that is not ``cache_dir``: a bucket's URL (``cache_dir`` is its local copy)."""

    def __str__(self) -> str:
        how = (
            f"{FILE_HASH_ALGORITHM} digests match"
            if self.hashed
            else "structure valid (stable-datasets format-1 cache: no digests)"
        )
        if self.hashed:
            how += (
                f", {self.batch_digests} record batch digests match"
                if self.batch_digests
                else "; no record batch digests (written before format revision 2: plain reads are not checked)"
            )
        return (
            f"ok: {self.num_shards} shard(s), {self.num_rows} rows, {self.nbytes} bytes; "
            f"{how} ({self.seconds:.2f} s) - {self.location or self.cache_dir}"
        )

    def __repr__(self) -> str:
        return str(self)


@dataclass
class CacheCheck:
    """Everything :func:`check_cache_dir` found about one cache directory."""

    cache_dir: Path
    problems: list[Problem]
    meta: ShardedCacheMeta | None = None
    bytes_read: int = 0
    batches_checked: int = 0


def check_cache_dir(cache_dir: Path) -> CacheCheck:
    """Check one cache directory end to end, collecting every problem instead of stopping at the first.

    Reads each shard once (its whole-file digest and each record batch's digest in one pass),
    then checks its Arrow structure and row count, the rows' content digest, and the version id
    (and, inside a catalog, that the directory is named after it).
    """
    cache_dir = Path(cache_dir)
    check = CacheCheck(cache_dir, [])
    try:
        meta = read_sharded_cache_meta(cache_dir)
    except (CacheCorruptionError, NotACacheError) as exc:  # another layout is named as such, not as damage
        check.problems.append(Problem(exc.path, exc.reason))
        return check
    check.meta = meta
    for position, path in enumerate(meta.shard_paths):
        try:  # revision 4: the shard's .batches file, read here first; damaged, it is one more problem
            batches = meta.batch_digests[position] if meta.batch_digests is not None else None
        except CacheCorruptionError as exc:
            check.problems.append(Problem(exc.path, exc.reason))
            batches = None
        ref = meta.batch_digests.file_ref(position) if meta.batch_digests is not None else None
        _check_file(
            check,
            path,
            digest=meta.shard_hashes[position] if meta.shard_hashes is not None else None,
            size=meta.shard_sizes[position] if meta.shard_sizes else None,
            rows=meta.shard_row_counts[position],
            batches=batches,
            batches_file=meta.cache_dir / (ref.file if ref is not None else METADATA_FILE),
        )
    for group in meta.column_groups.groups if meta.column_groups is not None else ():  # revision 6
        group_rows = [f.rows for f in group.files]
        digests = BatchDigestList(meta.cache_dir, [f.batches for f in group.files], group_rows, files=SMALL_FILES)
        for position, file in enumerate(group.files):
            try:
                batches = digests[position]
            except CacheCorruptionError as exc:
                check.problems.append(Problem(exc.path, exc.reason))
                batches = None
            _check_file(
                check,
                meta.cache_dir / file.file,
                digest=file.digest,
                size=file.size,
                rows=file.rows,
                batches=batches,
                batches_file=meta.cache_dir / (file.batches.file if file.batches is not None else METADATA_FILE),
            )
    patches = _patches_problem(meta)  # the patches file is checked even where the shards are damaged
    if patches is not None:
        check.problems.append(patches)
    elif not check.problems and (rows := _rows_problem(meta)) is not None:
        check.problems.append(rows)
    try:
        _check_version_id(meta)
    except CacheCorruptionError as exc:
        check.problems.append(Problem(exc.path, exc.reason))
    return check


def _check_file(
    check: CacheCheck,
    path: Path,
    *,
    digest: str | None,
    size: int | None,
    rows: int,
    batches: BatchDigests | None,
    batches_file: Path,
) -> None:
    """Check one shard (or column group) file: its whole-file digest, its Arrow structure, batch digests and rows."""
    whole_file_ok = False
    if digest is not None:
        found = hash_file(path)
        check.bytes_read += size if size is not None else path.stat().st_size
        whole_file_ok = found == digest
        if not whole_file_ok:
            check.problems.append(Problem(path, f"content digest {found} does not match the recorded {digest}"))
    try:
        table = open_shard(path)
    except CacheCorruptionError as exc:
        check.problems.append(Problem(exc.path, exc.reason))
        return
    if batches is not None:
        # the bytes the batch digests were made from, unchanged: they match, if they describe this file's
        # batches and columns (a reader checks that first); else name the damaged batches
        split = table.to_batches()
        lined_up = split_matches(batches, split)
        bad = [] if whole_file_ok and lined_up else bad_columns(batches, split)
        if not lined_up:
            msg = f"the record batch digests of {path.name} describe other batches or columns than it holds"
            check.problems.append(Problem(batches_file, msg))
        for batch, column in bad[:_MAX_BATCH_LINES]:
            msg = f"record batch {batch}, column {column!r} does not match its {BATCH_HASH_ALGORITHM} digest"
            check.problems.append(Problem(path, msg))
        if len(bad) > _MAX_BATCH_LINES:
            msg = f"... and {len(bad) - _MAX_BATCH_LINES} more (batch, column) digests do not match"
            check.problems.append(Problem(path, msg))
        check.batches_checked += len(batches.digests)
    if table.num_rows != rows:
        check.problems.append(Problem(path, f"shard holds {table.num_rows} rows, metadata says {rows}"))


def check_rows(cache_dir: Path) -> None:
    """Check a cache's rows against its recorded content digest, and its version id; shard files are not re-hashed.

    For a copy whose shard digests were checked as the bytes arrived (``se.pull``): the rest of
    :func:`verify`, reading only the key and row-hash columns.

    Raises
    ------
    CacheCorruptionError
        Names the metadata file when the rows or the id do not match.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from stable_explore import Features, Value
    >>> from stable_explore.storage.write.writer import write_sharded_arrow_cache
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "c"
    >>> _ = write_sharded_arrow_cache(({"x": i} for i in range(3)), Features(x=Value("int64")), out)
    >>> check_rows(out)
    """
    meta = read_sharded_cache_meta(Path(cache_dir))
    problem = _rows_problem(meta)
    if problem is not None:
        raise CacheCorruptionError(problem.path, problem.reason)
    _check_version_id(meta)


def _patches_problem(meta: ShardedCacheMeta) -> Problem | None:
    """What is wrong with the version's cell patches file (its digest, its entries), or None."""
    try:
        meta.cell_patches  # noqa: B018 - reads and checks the patches file (revision 5)
    except CacheCorruptionError as exc:
        return Problem(exc.path, exc.reason)
    return None


def _rows_problem(meta: ShardedCacheMeta) -> Problem | None:
    """The rows' content digest against the recorded one (read from the key and row-hash columns), or None."""
    recorded = meta.version_metadata.content_digest
    if recorded is None:
        return None
    try:
        meta.content_runs  # noqa: B018 - reads the runs file (revision 4): its digest, and that the runs combine
        found = content_digest_of(meta)  # applies the cell patches, which may name rows no shard has
    except CacheCorruptionError as exc:
        return Problem(exc.path, exc.reason)
    if found == recorded:
        return None
    msg = f"the rows (keys and row hashes, in order) give {found}, but {recorded} is recorded"
    return Problem(meta.cache_dir / METADATA_FILE, msg)


def verify(target: Any) -> VerifyReport:
    """Re-hash every shard and record batch of a cache, check its structure, its rows' digest and its version id.

    Parameters
    ----------
    target:
        A cache directory, or anything with a ``cache_dir`` attribute (a dataset).

    Returns
    -------
    VerifyReport
        A short report when all is well; it says whether the cache records batch digests.

    Raises
    ------
    CacheCorruptionError
        Names the first shard (or metadata file) that does not match.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from stable_explore import Features, Value
    >>> from stable_explore.storage.write.writer import write_sharded_arrow_cache
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "c"
    >>> _ = write_sharded_arrow_cache(({"x": i} for i in range(3)), Features(x=Value("int64")), out)
    >>> verify(out).num_rows
    3
    """
    cache_dir = Path(getattr(target, "cache_dir", target))
    started = time.perf_counter()
    meta = read_sharded_cache_meta(cache_dir)  # a missing cache raises CacheNotFoundError, as it always did
    if meta.remote is not None:
        from stable_explore.storage.check.remote_verify import verify_remote

        report = verify_remote(meta, verify)
        return dataclasses.replace(report, location=f"{meta.remote.url}/{meta.remote.prefix}")
    check = check_cache_dir(cache_dir)
    if check.problems:
        first = check.problems[0]
        raise CacheCorruptionError(first.path, first.reason)
    return VerifyReport(
        cache_dir=cache_dir,
        num_shards=meta.num_shards,
        num_rows=meta.num_rows,
        nbytes=meta.nbytes,
        seconds=time.perf_counter() - started,
        hashed=meta.shard_hashes is not None,
        batch_digests=check.batches_checked,
    )


def _check_version_id(meta: ShardedCacheMeta) -> None:
    """The recorded version id (and the directory's name, inside a catalog) must be what the content implies."""
    recorded = meta.version_metadata.version_id
    if recorded is None:
        return
    expected = meta.implied_version_id
    cache_dir = meta.cache_dir
    if recorded != expected or (cache_dir.parent.name == "versions" and cache_dir.name != recorded):
        msg = (
            f"version id {recorded} (directory {cache_dir.name}) does not match the content "
            f"and labels recorded in the metadata, which give {expected}"
        )
        raise CacheCorruptionError(cache_dir / METADATA_FILE, msg)
