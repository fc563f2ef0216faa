"""Tiny caches for tests and examples: a labelled image dataset in a temporary home, and stable-datasets' layout."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from stable_explore.schema import ClassLabel, Features, Image, Value

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta

__all__ = [
    "TINY_NAMES",
    "as_format_revision_1",
    "as_format_revision_2",
    "as_format_revision_3",
    "tiny_dataset",
    "tiny_features",
    "write_stable_datasets_v1_cache",
]

TINY_NAMES = ["cat", "dog", "bird"]


def tiny_features() -> Features:
    """An image, a label of :data:`TINY_NAMES`, a float score and a string name."""
    return Features(image=Image(), label=ClassLabel(names=TINY_NAMES), score=Value("float32"), name=Value("string"))


def _png(seed: int, size: int) -> bytes:
    from PIL import Image as PILImage

    pixels = np.random.default_rng(seed).integers(0, 255, (size, size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def tiny_dataset(home: str | Path, *, rows: int = 12, name: str = "tiny", image_size: int = 8) -> CachedDataset:
    """Build a small labelled image dataset in ``home`` (keys ``row-00000``...; labels cycle through the names)."""
    from stable_explore.api import build

    examples = [
        (
            f"row-{i:05d}",
            {"image": _png(i, image_size), "label": TINY_NAMES[i % 3], "score": i / 2, "name": f"n{i}"},
        )
        for i in range(rows)
    ]
    return build(examples, tiny_features(), name=name, home=home, progress=False)


def write_stable_datasets_v1_cache(cache_dir: Path, tables: list[pa.Table]) -> None:
    """A cache as stable-datasets' writer lays it out: shards and version-1 metadata only (no keys or digests)."""
    cache_dir.mkdir(parents=True)
    names = []
    for i, table in enumerate(tables):
        name = f"shard-{i:05d}.arrow"
        with pa.OSFile(str(cache_dir / name), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        names.append(name)
    meta = {
        "cache_format_version": 1,
        "schema_fingerprint": "0123456789abcdef",
        "num_rows": sum(t.num_rows for t in tables),
        "num_shards": len(tables),
        "shard_row_counts": [t.num_rows for t in tables],
        "shard_filenames": names,
        "shard_size_target_bytes": 256 * 1024 * 1024,
    }
    (cache_dir / "_metadata.json").write_text(json.dumps(meta, indent=2))


def _refuse_patches(meta: Any) -> None:
    from stable_explore.errors import InvalidOptionError

    if meta.cell_patches_field is not None:
        msg = f"{meta.cache_dir} has cell patches (format revision 5): earlier revisions cannot hold them"
        raise InvalidOptionError(msg)


def as_format_revision_2(cache_dir: Path) -> Path:
    """Rewrite a version's metadata exactly as format revision 2 wrote it; return its new directory.

    Revision 2 had one-stream content digests (no ``content_runs``), so the version id
    changes: inside a catalog the directory is renamed to it and the refs and source records
    that named the old id are moved. The shards are left as they are (revision 3 did not change them).
    """
    return _as_legacy_revision(cache_dir, 2)


def as_format_revision_1(cache_dir: Path) -> Path:
    """Rewrite a version's metadata exactly as format revision 1 wrote it; return its new directory.

    Revision 1 is revision 2 without ``batch_digests`` and without ``metadata_digest`` (the
    metadata was not sealed); the id changes as :func:`as_format_revision_2` says.
    """
    return _as_legacy_revision(cache_dir, 1)


def _as_legacy_revision(cache_dir: Path, revision: int) -> Path:
    from stable_explore.storage.check.verify import feed_rows
    from stable_explore.storage.format.cache_meta import METADATA_FILE
    from stable_explore.storage.format.hashing import LegacyContentDigest
    from stable_explore.storage.format.metadata import version_id_of
    from stable_explore.storage.read.open_meta import read_sharded_cache_meta
    from stable_explore.storage.write.writer import write_metadata

    meta = read_sharded_cache_meta(cache_dir)
    _refuse_patches(meta)
    raw = _inlined(meta)
    legacy = LegacyContentDigest()
    feed_rows(legacy, meta.shard_paths, meta.segments)
    raw.pop("content_runs", None)
    raw["format_revision"] = revision
    raw["content_digest"] = legacy.hexdigest()
    old_id = raw.get("version_id")
    target = cache_dir
    if old_id is not None:
        raw["version_id"] = version_id_of(raw)
        if cache_dir.parent.name == "versions":
            target = cache_dir.parent / raw["version_id"]
            cache_dir.rename(target)
            for pointers in ("refs", "sources"):
                folder = cache_dir.parent.parent / pointers
                for pointer in folder.iterdir() if folder.is_dir() else []:
                    if pointer.is_file() and pointer.read_text().strip() == old_id:
                        pointer.write_text(raw["version_id"] + "\n")
    (target / METADATA_FILE).unlink()
    if revision >= 2:
        write_metadata(target, raw)
    else:
        raw.pop("batch_digests", None)
        raw.pop("metadata_digest", None)
        (target / METADATA_FILE).write_text(json.dumps(raw, indent=2), encoding="utf-8")
    _remove_small_files(target, meta.raw or {})
    return target


def _inlined(meta: ShardedCacheMeta) -> dict[str, Any]:
    """The metadata fields with batch digests and content runs written inline, as revisions 2 and 3 did."""
    raw = dict(meta.raw or {})
    if meta.batch_digests is not None:
        raw["batch_digests"] = [None if d is None else d.to_json() for d in meta.batch_digests]
    if meta.content_runs is not None:
        raw["content_runs"] = [[rows, digest] for rows, digest in meta.content_runs]
    if meta.row_segments is not None:
        raw["row_segments"] = [list(segment) for segment in meta.row_segments]
    return raw


def _remove_small_files(cache_dir: Path, raw: Mapping[str, object]) -> None:
    from stable_explore.storage.format.version_files import version_files

    for file in version_files(raw):
        if file.small:
            (cache_dir / file.name).unlink(missing_ok=True)


def as_format_revision_3(cache_dir: Path) -> Path:
    """Rewrite a version's metadata exactly as format revision 3 wrote it (same id); return its directory.

    Revision 3 kept the batch digests, content runs and row segments inline in ``_metadata.json``; the small
    files revision 4 keeps beside it are removed.
    """
    from stable_explore.storage.read.open_meta import read_sharded_cache_meta
    from stable_explore.storage.write.writer import write_metadata

    meta = read_sharded_cache_meta(cache_dir)
    _refuse_patches(meta)
    raw = _inlined(meta)
    raw["format_revision"] = 3
    (cache_dir / "_metadata.json").unlink()
    write_metadata(cache_dir, raw)
    _remove_small_files(cache_dir, meta.raw or {})
    return cache_dir
