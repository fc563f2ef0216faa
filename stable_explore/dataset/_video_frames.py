"""``se.load`` of stable-datasets' ``lance-video-frames`` cache: one row per frame, read through pylance.

The layout (:mod:`stable_explore.storage.format.video_frames`) keeps one WebP frame per Lance row and
the videos in ``_metadata.json``. ``se.load(folder)`` gives its frames as a frame-level dataset:

- ``video_id`` (int32) and ``frame_idx`` (int32), as stored;
- ``frame``: an :class:`~stable_explore.Image` holding the WebP bytes as they are (never re-encoded);
- ``video_path``: the video's ``path``, and one column per field of the videos' ``metadata`` (a field
  named like one of the columns above gets the prefix ``metadata_``);
- each row's key is ``"<video_id>/<frame_idx>"``.

Row ``r`` is frame ``r - start_row`` of the video whose rows hold it, exactly the row stable-datasets'
reader takes for that frame, so windows over ``video_id`` and ``frame_idx`` (``ds.clips``) are its
windows. Every row is checked on the way in: its ``video_id`` and ``frame_idx`` must be those of its
place, each video must have ``T`` rows, and each frame must be ``H`` x ``W``; a cache that breaks one of
these is refused, naming the video and the field.

The rows are copied once, batch by batch (bounded memory), into a cache of ours under
``<home>/.foreign/video-frames-<digest>/`` (the digest as for any Lance dataset:
:func:`~stable_explore.storage.read.lance_rows.lance_identity`); the Lance folder is only read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore._optional import require
from stable_explore.errors import CacheCorruptionError, EncodingError, NotACacheError, SchemaError
from stable_explore.schema import Feature, Features, Image, Value
from stable_explore.schema.columns import KEY_COLUMN
from stable_explore.schema.image_header import image_header
from stable_explore.storage.format.cache_meta import METADATA_FILE
from stable_explore.storage.format.video_frames import FRAME_SCHEMA, VideoFramesMeta, VideoRecord
from stable_explore.storage.read.lance_rows import default_mirror_root, is_lance_dataset, lance_identity
from stable_explore.storage.read.open_meta import read_sharded_cache_meta
from stable_explore.storage.write.writer import write_sharded_arrow_cache

if TYPE_CHECKING:
    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["FRAME_COLUMNS", "has_frame_columns", "open_video_frames", "per_video_features"]

FRAME_COLUMNS = ("video_id", "frame_idx", "frame", "video_path")
"""The columns every frame-level dataset of the layout has, before the videos' metadata fields."""
_MIRROR_FORMAT = 1  # changes when what a mirror holds changes: old mirrors are then left for new ones
_BATCH_ROWS = 256  # frames read from Lance at a time


def has_frame_columns(schema: pa.Schema) -> bool:
    """Whether a Lance dataset's columns are those of the layout (``video_id``, ``frame_idx``, ``bytes``)."""
    return set(FRAME_SCHEMA.names) <= set(schema.names)


def _video(meta: VideoFramesMeta, position: int) -> str:
    record = meta.videos[position]
    return f"video {position} (id {record.id}, path {record.path!r})"


def _column_name(name: str) -> str:
    return f"metadata_{name}" if name in FRAME_COLUMNS else name


def per_video_features(meta: VideoFramesMeta, source: str) -> tuple[Features, dict[str, pa.Array]]:
    """The features of the frame-level rows, and each per-video column's values (one per video).

    The metadata fields' types are our features when the cache was our export, else inferred from
    the values (a field missing from a video is null there).
    """
    stored = Features.from_dict(dict(meta.features)) if meta.features is not None else None
    names: list[str] = []
    for record in meta.videos:
        names.extend(name for name in record.metadata if name not in names)
    columns: dict[str, Feature] = {
        "video_id": Value("int32"),
        "frame_idx": Value("int32"),
        "frame": Image(),
        "video_path": Value("string"),
    }
    values: dict[str, pa.Array] = {"video_path": pa.array([r.path for r in meta.videos], pa.string())}
    for name in names:
        column = _column_name(name)
        raw = [record.metadata.get(name) for record in meta.videos]
        feature = stored[column] if stored is not None and column in stored else None
        try:
            array = pa.array(raw, feature.arrow_type) if feature is not None else pa.array(raw)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            kinds = sorted({type(value).__name__ for value in raw if value is not None})
            msg = (
                f"{source}: the videos' metadata field {name!r} holds values of more than one kind ({kinds}: {exc}), "
                "which one column cannot hold; make the field one kind in every video"
            )
            raise SchemaError(msg) from None
        if pa.types.is_null(array.type):
            array = array.cast(pa.string())
        columns[column] = (
            feature if feature is not None else Features.from_arrow_schema(pa.schema([(column, array.type)]))[column]
        )
        values[column] = array
    return Features(columns), values


def open_video_frames(path: Path, raw: dict[str, Any], *, root: Path | None = None) -> CachedDataset:
    """The frame-level dataset of the ``lance-video-frames`` cache at ``path`` (see the module).

    ``raw`` is its ``_metadata.json``, read; the copy goes under ``root`` (default: the local home's ``.foreign``).

    Raises
    ------
    NotACacheError
        No Lance dataset is in the folder.
    CacheCorruptionError
        ``_metadata.json`` and the rows disagree: names the video (position, id, path) and the field.
    """
    from stable_explore.dataset.cached_dataset import CachedDataset

    if not is_lance_dataset(path):
        msg = f"its {METADATA_FILE} names the 'lance-video-frames' layout, but no Lance dataset is here (no _versions/)"
        raise NotACacheError(path, msg)
    source = str(path / METADATA_FILE)
    meta = VideoFramesMeta.from_dict(raw, source=source)
    features, per_video = per_video_features(meta, source)
    digest = lance_identity(path)
    target = (root if root is not None else default_mirror_root()) / f"video-frames-{_MIRROR_FORMAT}-{digest}"
    if not (target / METADATA_FILE).is_file():
        lance = require("lance", "lance", "opening a stable-datasets video-frames cache")
        try:
            dataset = lance.dataset(str(path))
            schema = dataset.schema
            fragments = dataset.get_fragments()
        except (OSError, ValueError, RuntimeError) as exc:
            raise CacheCorruptionError(path, f"Lance cannot open it: {exc}") from exc
        _check_schema(path, schema)
        _check_counts(path, meta, fragments)
        rows = _frame_batches(path, meta, fragments, features, per_video)
        mirror_of = {"lance-video-frames": str(path.resolve()), "lance_version": int(dataset.version)}
        write_sharded_arrow_cache(rows, features, target, extra_metadata={"mirror_of": mirror_of})
    return CachedDataset(read_sharded_cache_meta(target))


def _check_schema(path: Path, schema: pa.Schema) -> None:
    for expected in FRAME_SCHEMA:
        if expected.name not in schema.names:
            msg = (
                f"the Lance dataset has no column {expected.name!r} (its columns: {schema.names}); the layout's "
                f"are {FRAME_SCHEMA.names}"
            )
            raise CacheCorruptionError(path, msg)
        found = schema.field(expected.name).type
        kind = (
            pa.types.is_integer
            if expected.name != "bytes"
            else (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t))
        )
        if not kind(found):
            msg = f"column {expected.name!r} is {found}, where the layout has {expected.type}"
            raise CacheCorruptionError(path, msg)


def _fragment_batches(path: Path, fragments: list[Any], columns: list[str]) -> Iterator[pa.RecordBatch]:
    for position, fragment in enumerate(fragments):
        try:
            yield from fragment.to_batches(batch_size=_BATCH_ROWS, columns=columns)
        except (OSError, ValueError, RuntimeError) as exc:
            raise CacheCorruptionError(path, f"Lance cannot read fragment {position}: {exc}") from exc


def _check_counts(path: Path, meta: VideoFramesMeta, fragments: list[Any]) -> None:
    """Each video has ``T`` rows, and no row names a video the list does not have (one pass over ``video_id``)."""
    counts: dict[int, int] = {}
    total = 0
    for batch in _fragment_batches(path, fragments, ["video_id"]):
        ids, found = np.unique(batch.column(0).to_numpy(zero_copy_only=False), return_counts=True)
        for video_id, count in zip(ids.tolist(), found.tolist(), strict=True):
            counts[video_id] = counts.get(video_id, 0) + count
        total += batch.num_rows
    positions: dict[int, int] = {}
    for position, record in enumerate(meta.videos):
        if record.id in positions:
            msg = (
                f"{_video(meta, position)} has the id of video {positions[record.id]} (field 'id'); each video "
                "needs its own"
            )
            raise CacheCorruptionError(path / METADATA_FILE, msg)
        positions[record.id] = position
        rows = counts.get(record.id, 0)
        if rows != record.frames:
            msg = (
                f"{_video(meta, position)}: field 'T' says {record.frames} frames, but the Lance dataset has {rows} "
                f"rows with video_id {record.id}; the cache was changed after it was written: rebuild it"
            )
            raise CacheCorruptionError(path / METADATA_FILE, msg)
    strays = sorted(set(counts) - set(positions))
    if strays:
        msg = (
            f"the Lance dataset has rows of video_id {strays[:5]}, which field 'videos' does not list; "
            "rebuild the cache"
        )
        raise CacheCorruptionError(path / METADATA_FILE, msg)
    if total != meta.num_rows:  # (only reachable with repeated ids, caught above; kept as the last word)
        msg = f"the Lance dataset has {total} rows, field 'num_rows' says {meta.num_rows}"
        raise CacheCorruptionError(path / METADATA_FILE, msg)


def _frame_batches(
    path: Path,
    meta: VideoFramesMeta,
    fragments: list[Any],
    features: Features,
    per_video: dict[str, pa.Array],
) -> Iterator[pa.RecordBatch]:
    """The frame-level rows, batch by batch, each checked against the video its place belongs to."""
    order = sorted(range(len(meta.videos)), key=lambda p: meta.videos[p].start_row)
    starts = np.array([meta.videos[p].start_row for p in order], np.int64)
    ends = starts + np.array([meta.videos[p].frames for p in order], np.int64)
    ids = np.array([meta.videos[p].id for p in order], np.int64)
    by_place = np.array(order, np.int64)
    schema = features.to_arrow_schema()
    first = 0
    for batch in _fragment_batches(path, fragments, list(FRAME_SCHEMA.names)):
        rows = np.arange(first, first + batch.num_rows, dtype=np.int64)
        place = np.searchsorted(starts, rows, side="right") - 1
        video_ids = batch.column(0).to_numpy(zero_copy_only=False).astype(np.int64)
        frame_idx = batch.column(1).to_numpy(zero_copy_only=False).astype(np.int64)
        inside = (place >= 0) & (rows < ends[np.maximum(place, 0)])
        expected_ids = np.where(inside, ids[np.maximum(place, 0)], -1)
        expected_frames = rows - starts[np.maximum(place, 0)]
        wrong = np.flatnonzero(~inside | (video_ids != expected_ids) | (frame_idx != expected_frames))
        if wrong.size:
            _refuse_row(
                path,
                meta,
                int(rows[wrong[0]]),
                by_place,
                place[wrong[0]],
                inside[wrong[0]],
                video_ids[wrong[0]],
                frame_idx[wrong[0]],
            )
        positions = by_place[place]
        blobs = batch.column(2)
        for offset, blob in enumerate(blobs.to_pylist()):
            _check_size(path, meta, int(positions[offset]), int(frame_idx[offset]), int(rows[offset]), blob)
        columns: dict[str, pa.Array] = {
            "video_id": batch.column(0).cast(pa.int32()),
            "frame_idx": batch.column(1).cast(pa.int32()),
            "frame": blobs.cast(pa.large_binary()),
        }
        take = pa.array(positions)
        for name, values in per_video.items():
            columns[name] = values.take(take)
        keys = [f"{v}/{f}" for v, f in zip(video_ids.tolist(), frame_idx.tolist(), strict=True)]
        arrays = [columns[name].cast(schema.field(name).type) for name in features]
        yield pa.record_batch([*arrays, pa.array(keys, pa.string())], names=[*features, KEY_COLUMN])
        first += batch.num_rows


def _refuse_row(
    path: Path,
    meta: VideoFramesMeta,
    row: int,
    by_place: np.ndarray,
    place: int,
    inside: bool,
    video_id: int,
    frame_idx: int,
) -> None:
    if not inside:
        msg = (
            f"row {row} (video_id {video_id}, frame_idx {frame_idx}) is in no video's rows (field 'start_row' and "
            "'T' of each video say which rows are its frames); rebuild the cache"
        )
        raise CacheCorruptionError(path / METADATA_FILE, msg)
    position = int(by_place[place])
    record: VideoRecord = meta.videos[position]
    msg = (
        f"{_video(meta, position)}: row {row} should hold its frame {row - record.start_row} (field 'start_row' is "
        f"{record.start_row}), but holds video_id {video_id}, frame_idx {frame_idx}; its reader would hand out "
        "the wrong frames: rebuild the cache"
    )
    raise CacheCorruptionError(path / METADATA_FILE, msg)


def _check_size(path: Path, meta: VideoFramesMeta, position: int, frame: int, row: int, blob: bytes | None) -> None:
    record = meta.videos[position]
    if blob is None:
        msg = f"{_video(meta, position)}: frame {frame} (row {row}) has no bytes (column 'bytes' is null)"
        raise CacheCorruptionError(path, msg)
    try:
        _, width, height = image_header(blob)
    except EncodingError as exc:
        msg = f"{_video(meta, position)}: frame {frame} (row {row}) is not a readable image ({exc})"
        raise CacheCorruptionError(path, msg) from None
    if (height, width) != (record.height, record.width):
        msg = (
            f"{_video(meta, position)}: frame {frame} (row {row}) is {height}x{width} (H x W), but fields 'H' and 'W' "
            f"say {record.height}x{record.width}: a video's frames must all be its size; rebuild the cache"
        )
        raise CacheCorruptionError(path, msg)
