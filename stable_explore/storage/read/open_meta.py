"""Opening a version's ``_metadata.json`` on disk: recovery, the checks against the files, then the parsed value.

``storage.format.cache_meta`` parses and checks the metadata as a value (``meta_from_dict`` and the field
checks); this module does the I/O around it: it recovers a replacement killed half-way, reads the file,
checks that every shard and small file it lists is there at its recorded size, remembers which files' seals
this process checked, and reads the marker of a bucket's version. The value it returns reads its small files
with :data:`~stable_explore.storage.read.small_files.SMALL_FILES`.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.storage.write.writer import write_sharded_arrow_cache
>>> out = pathlib.Path(tempfile.mkdtemp()) / "c"
>>> _ = write_sharded_arrow_cache(({"x": i} for i in range(3)), Features(x=Value("int64")), out)
>>> read_sharded_cache_meta(out).num_rows
3
>>> (out / "shard-00000.arrow").unlink()
>>> read_sharded_cache_meta(out)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
stable_explore.errors.CacheCorruptionError: ...shard-00000.arrow: shard file listed in _metadata.json is missing
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stable_explore.errors import CacheNotFoundError, NotACacheError, SchemaError
from stable_explore.schema import Features
from stable_explore.storage.backends.fsutil import recover_moved_aside, version_gone
from stable_explore.storage.format.cache_meta import (
    CACHE_FORMAT_VERSION,
    COMPRESSIONS,
    FORMAT_REVISION,
    KEY_TYPES,
    METADATA_FILE,
    REMOTE_FILE,
    SEGMENTED_FORMAT_VERSION,
    ShardedCacheMeta,
    check_implied_version_id,
    check_metadata_digest,
    check_seal,
    checked_batch_digests,
    checked_cell_patches,
    checked_column_groups,
    checked_content_runs,
    checked_segments,
    checked_shard_name,
    corrupt,
    expect_int_list,
    meta_from_dict,
    refuse_other_layouts,
)
from stable_explore.storage.format.metadata import VersionMetadata
from stable_explore.storage.format.remote_location import RemoteLocation
from stable_explore.storage.kept import Kept, identity_of, kept
from stable_explore.storage.read.shard_file import open_shard
from stable_explore.storage.read.small_files import SMALL_FILES, load_row_segments

if TYPE_CHECKING:
    from stable_explore.storage.format.file_ref import FileRef

__all__ = ["read_remote_marker", "read_sharded_cache_meta", "validate_sharded_cache"]


def _is_lance_dataset(folder: Path) -> bool:
    """A Lance dataset's folder (``_versions/`` with ``.manifest`` files), which has no ``_metadata.json``."""
    try:
        return (folder / "_versions").is_dir() and any(
            p.suffix == ".manifest" for p in (folder / "_versions").iterdir()
        )
    except OSError:
        return False


_SEALED: Kept[tuple[Any, ...], bool] = kept("sealed metadata", max_entries=4096)
"""Metadata files (folder, device, inode, size, mtime) whose seal and version id this process checked.

A notebook loads the same versions again and again; a file edited afterwards is a new identity."""


def _check_small_files(cache_dir: Path, refs: list[FileRef | None]) -> None:
    """Every small file the metadata names beside itself (revision 4) is there, at its recorded size."""
    for ref in refs:
        if ref is None:
            continue
        path = cache_dir / ref.file  # a plain name: checked when the metadata was parsed
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            gone = version_gone(cache_dir)
            if gone:
                raise CacheNotFoundError(gone) from None
            raise corrupt(path, f"listed in {METADATA_FILE} but missing") from None
        if size != ref.size:
            raise corrupt(path, f"is {size} bytes, but {ref.size} were written (truncated or modified)")


def read_sharded_cache_meta(cache_dir: Path | str) -> ShardedCacheMeta:
    """Read and check ``_metadata.json`` of a cache directory.

    Checks that the file is valid JSON of the expected shape, that counts add
    up, that every shard name is a plain file inside the directory, and that
    every shard exists with the recorded size.

    Raises
    ------
    CacheNotFoundError
        No cache at ``cache_dir``.
    CacheCorruptionError
        The metadata or a shard does not match; the message names the file.
    """
    cache_dir = Path(cache_dir)
    meta_path = cache_dir / METADATA_FILE
    if not meta_path.is_file():
        recover_moved_aside(cache_dir)  # a replacement killed between its two renames left the old copy aside
        if not meta_path.is_file():
            if _is_lance_dataset(cache_dir):
                msg = "layout 'lance' is not a stable-explore cache: a Lance dataset (open it with lance)"
                raise NotACacheError(cache_dir, msg)
            msg = f"no cache at {cache_dir} (missing {METADATA_FILE})"
            raise CacheNotFoundError(msg)
    try:
        with meta_path.open("rb") as source:
            stat = os.fstat(source.fileno())
            raw = json.loads(source.read().decode("utf-8"))
    except FileNotFoundError:  # gc took the version out between the check above and the open
        msg = version_gone(cache_dir) or f"no cache at {cache_dir} (missing {METADATA_FILE})"
        raise CacheNotFoundError(msg) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise corrupt(meta_path, f"not valid JSON: {exc}") from exc
    except RecursionError as exc:  # nested deeper than the parser goes: no metadata of ours is
        raise corrupt(meta_path, "not valid metadata: JSON nested too deeply to read") from exc
    if not isinstance(raw, dict):
        raise corrupt(meta_path, f"expected a JSON object, found {type(raw).__name__}")
    refuse_other_layouts(raw, meta_path)
    version = raw.get("cache_format_version")
    if version not in (CACHE_FORMAT_VERSION, SEGMENTED_FORMAT_VERSION):
        expected = f"{CACHE_FORMAT_VERSION} or {SEGMENTED_FORMAT_VERSION}"
        msg = f"unsupported cache_format_version {version!r} (expected {expected})"
        raise corrupt(meta_path, msg)
    revision = raw.get("format_revision", 1)
    if type(revision) is not int or not 1 <= revision <= FORMAT_REVISION:
        msg = (
            f"format revision {revision!r} is not one this version of stable-explore reads (1 to {FORMAT_REVISION}): "
            "the cache was written by a newer stable-explore; upgrade it (pip install -U stable-explore)"
        )
        raise corrupt(meta_path, msg)
    num_shards = raw.get("num_shards")
    num_rows = raw.get("num_rows")
    if not isinstance(num_shards, int) or not isinstance(num_rows, int) or num_shards < 0 or num_rows < 0:
        raise corrupt(
            meta_path, f"num_shards and num_rows must be non-negative ints, found {num_shards!r}, {num_rows!r}"
        )
    names = raw.get("shard_filenames")
    if not isinstance(names, list) or len(names) != num_shards:
        raise corrupt(meta_path, f"metadata claims {num_shards} shards but lists {names!r:.200}")
    resolved_dir = cache_dir.resolve()  # once: resolving walks every part of the path
    names = [checked_shard_name(n, cache_dir, meta_path, resolved_dir) for n in names]
    if len(set(names)) != len(names):
        raise corrupt(meta_path, "a shard file is listed twice")
    counts = expect_int_list(raw, "shard_row_counts", num_shards, meta_path)
    remote = read_remote_marker(cache_dir)
    segments, segments_file = None, None
    if version == SEGMENTED_FORMAT_VERSION:
        field_value = raw.get("row_segments")
        if isinstance(field_value, Mapping):  # revision 4: a file beside the metadata, and splices
            checked_shard_name(field_value.get("file"), cache_dir, meta_path, resolved_dir)
            loaded, segments_file = load_row_segments(cache_dir, field_value, meta_path, remote)
            field_value = [list(segment) for segment in loaded]
        segments = checked_segments(field_value, counts, meta_path)
    total = sum(length for _, _, length in segments) if segments is not None else sum(counts)
    if total != num_rows:
        raise corrupt(meta_path, f"shard row counts add up to {total}, but num_rows is {num_rows}")

    hashes = raw.get("shard_hashes")
    sizes = None
    features = None
    if hashes is not None:
        if not isinstance(hashes, list) or len(hashes) != num_shards or not all(isinstance(h, str) for h in hashes):
            raise corrupt(meta_path, f"'shard_hashes' must list {num_shards} digests")
        sizes = expect_int_list(raw, "shard_sizes", num_shards, meta_path)
        try:
            features = Features.from_dict(raw.get("features"))  # type: ignore[arg-type]
        except SchemaError as exc:
            raise corrupt(meta_path, f"'features' is not a valid schema: {exc}") from exc
        if raw.get("key_type") not in KEY_TYPES:
            raise corrupt(meta_path, f"'key_type' must be one of {list(KEY_TYPES)}, found {raw.get('key_type')!r}")
        if raw.get("compression") not in COMPRESSIONS:
            raise corrupt(meta_path, f"'compression' must be one of {COMPRESSIONS}, found {raw.get('compression')!r}")
    groups = checked_column_groups(raw, num_rows, features, meta_path, names)

    group_files = groups.files() if groups is not None else []
    expected_sizes: list[int | None] = list(sizes) if sizes is not None else [None] * len(names)
    listed = [*zip(names, expected_sizes, strict=True), *((f.file, f.size) for f in group_files)]
    for name, expected_size in listed if remote is None else ():  # remote shards: sizes checked as read
        path = cache_dir / name
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            gone = version_gone(cache_dir)
            if gone:
                raise CacheNotFoundError(gone) from None
            check_seal(raw, cache_dir, meta_path)  # a damaged shard name or size is the metadata's damage
            raise corrupt(path, "shard file listed in _metadata.json is missing") from None
        if expected_size is not None and size != expected_size:
            check_seal(raw, cache_dir, meta_path)
            raise corrupt(path, f"shard is {size} bytes, but {expected_size} were written (truncated or modified)")

    batch_digests = checked_batch_digests(raw, counts, meta_path, resolved_dir, remote, SMALL_FILES)
    # last, so that the specific checks above name what is wrong where they can
    VersionMetadata.from_json(raw, meta_path)  # names that become path parts are plain, text is UTF-8
    sealed = (str(cache_dir), *identity_of(stat))
    if not _SEALED.get(sealed):  # both checks encode the whole metadata: once per process and file
        check_implied_version_id(raw, cache_dir, meta_path)
        check_metadata_digest(raw, meta_path)
        _SEALED.put(sealed, True)
    # after the seal: a hand edit is named as one
    _, runs_file = checked_content_runs(raw, num_rows, meta_path, resolved_dir)
    _, patches_file = checked_cell_patches(raw, meta_path, resolved_dir)
    if remote is None:  # a bucket's mirror reads a missing small file from the bucket
        small = [batch_digests.file_ref(i) for i in range(len(batch_digests))] if batch_digests else []
        segments_base = segments_file.record.base if segments_file else None
        group_batches = [f.batches for f in group_files]
        _check_small_files(cache_dir, [*small, runs_file, segments_base, patches_file, *group_batches])
    return meta_from_dict(
        cache_dir,
        raw,
        names=names,
        features=features,
        segments=segments,
        batch_digests=batch_digests,
        column_groups=groups,
        segments_file=segments_file,
        remote=remote,
        files=SMALL_FILES,
    )


def read_remote_marker(cache_dir: Path) -> RemoteLocation | None:
    """The :data:`REMOTE_FILE` of a local copy of a bucket's version's metadata: where its shards are."""
    try:
        raw = json.loads((cache_dir / REMOTE_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise corrupt(cache_dir / REMOTE_FILE, f"not valid JSON: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("url"), str) or not isinstance(raw.get("prefix"), str):
        raise corrupt(cache_dir / REMOTE_FILE, "expected an object with the home's 'url' and the version's 'prefix'")
    return RemoteLocation(raw["url"], raw["prefix"])


def validate_sharded_cache(cache_dir: Path | str, features: Features) -> ShardedCacheMeta:
    """Read a cache's metadata and check that it was written with ``features``.

    For a cache with stored features the schema fingerprints are compared;
    for a stable-datasets format-1 cache the shards' Arrow column types are.

    Raises
    ------
    SchemaError
        The cache holds a different schema; the message says how it differs.
    """
    meta = read_sharded_cache_meta(cache_dir)
    if meta.features is not None:
        if meta.features.fingerprint() != features.fingerprint():
            msg = (
                f"cache at {meta.cache_dir} was written with {meta.features!r}, not {features!r}; "
                "rebuild it (force=True) or load it with its own features"
            )
            raise SchemaError(msg)
        return meta
    if meta.num_shards:
        stored = open_shard(meta.shard_paths[0]).schema
        expected = features.to_arrow_schema()
        for arrow_field in expected:
            if arrow_field.name not in stored.names:
                msg = f"cache at {meta.cache_dir} has no column {arrow_field.name!r}; it has {stored.names}"
                raise SchemaError(msg)
            found = stored.field(arrow_field.name).type
            if found != arrow_field.type and not _binary_compatible(found, arrow_field.type):
                if _video_paths(found, arrow_field.type):
                    continue  # a Video column of path strings: how older caches (and stable-datasets') store one
                msg = (
                    f"column {arrow_field.name!r} of {meta.cache_dir} is {found}, "
                    f"but features expect {arrow_field.type}"
                )
                raise SchemaError(msg)
    return meta


def _video_paths(found: pa.DataType, expected: pa.DataType) -> bool:
    return (
        pa.types.is_string(found) and pa.types.is_struct(expected) and {f.name for f in expected} == {"bytes", "path"}
    )


def _binary_compatible(found: pa.DataType, expected: pa.DataType) -> bool:
    binaries = (pa.binary(), pa.large_binary())
    return found in binaries and expected in binaries
