"""``ds.export(path, layout="stable-datasets-video")``: stable-datasets' ``lance-video-frames`` layout.

The layout (:mod:`stable_explore.storage.format.video_frames`) is one Lance row per frame (``video_id``,
``frame_idx``, the frame's WebP bytes) and ``_metadata.json`` listing the videos. Two kinds of dataset
are written:

- **frame-level** rows (a video column, ``video=``, default ``"video_id"``; a frame index column, ``frame=``,
  default ``"frame_idx"``; an ``Image`` column, ``image=``, default the only one): each video's rows are
  gathered (in the order of the videos' first rows), its frame indices must be ``0 .. T-1``, each once, and
  its frames one size. WebP frames are kept byte for byte; other images are decoded and encoded as WebP.
- rows with a **Video** column (``video=``, default the only one): each video is decoded frame by frame
  with PyAV (one frame in memory at a time), and each frame encoded as WebP.

WebP frames are encoded with Pillow at ``quality`` (stable-datasets' default, 65), or losslessly with
``lossless=True``. Every other column becomes the videos' ``metadata`` (scalars only: ``Value`` and
``ClassLabel``, stored as their codes; in frame-level rows, one value per video); a ``video_path`` column
gives each video's ``path`` (else a video column's path, else its key as text). An integer video column's
values are the videos' ids (``video_id``); another kind of key is kept in ``metadata`` under its column's
name and the ids are the videos' places. Our features ride in ``_metadata.json`` (its reader ignores the key),
so ``se.load`` of the copy gives back the frame-level rows with class names.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore._optional import require
from stable_explore.dataset._export_target import export_folder, write_export_marker
from stable_explore.errors import (
    CacheWriteError,
    ColumnNotFoundError,
    EncodingError,
    InvalidOptionError,
    SchemaError,
    VideoDecodeError,
)
from stable_explore.schema import ClassLabel, Feature, Features, Image, Value, Video
from stable_explore.schema.image_formats import sniff
from stable_explore.schema.image_header import image_header
from stable_explore.schema.video import video_cell
from stable_explore.storage.backends.fsutil import publish_dir, temp_dir_beside
from stable_explore.storage.format.cache_meta import METADATA_FILE
from stable_explore.storage.format.stable_datasets import feature_repr
from stable_explore.storage.format.video_frames import (
    FRAME_SCHEMA,
    FRAMES_VIDEO_REPR,
    VideoFramesMeta,
    VideoRecord,
)

if TYPE_CHECKING:
    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["LAYOUT", "write_video_frames"]

LAYOUT = "stable-datasets-video"
_PATH_COLUMN = "video_path"
_LOADED_COLUMNS = ("video_id", "frame_idx", "frame", _PATH_COLUMN)  # what se.load of the copy names its columns
_FRAMES_PER_BATCH = 64  # frames handed to Lance at a time
_ROWS_PER_READ = 256  # frame-level rows read at a time

JsonScalar: TypeAlias = str | int | float | bool | None  # a video's key and metadata values, as its record holds them


@dataclass
class _Video:
    """A video as it is written: what its record will say, filled in as its frames pass."""

    id: int
    key: JsonScalar
    path: str
    metadata: dict[str, JsonScalar]
    label: str  # how messages name it
    start_row: int = 0
    frames: int = 0
    size: tuple[int, int] | None = None  # (H, W) of its frame 0
    first_values: dict[str, object] = field(default_factory=dict)

    def record(self) -> VideoRecord:
        assert self.size is not None
        return VideoRecord(
            id=self.id,
            key=self.key,
            path=self.path,
            frames=self.frames,
            height=self.size[0],
            width=self.size[1],
            start_row=self.start_row,
            metadata=self.metadata,
        )


def _check_quality(quality: object, lossless: object) -> None:
    if isinstance(quality, bool) or not isinstance(quality, int) or not 0 <= quality <= 100:
        msg = f"quality must be a whole number from 0 to 100 (WebP's quality), got {quality!r}"
        raise InvalidOptionError(msg)
    if not isinstance(lossless, bool):
        msg = f"lossless must be True or False, got {lossless!r}"
        raise InvalidOptionError(msg)


def _webp(frame: np.ndarray, quality: int, lossless: bool) -> bytes:
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.fromarray(np.ascontiguousarray(frame, dtype=np.uint8)).convert("RGB").save(
        buffer, format="WEBP", quality=quality, lossless=lossless, method=4
    )
    return buffer.getvalue()


def _as_webp(blob: bytes, quality: int, lossless: bool) -> bytes:
    """WebP bytes as they are; any other image decoded (RGB) and encoded as WebP."""
    kind = sniff(blob)
    if kind is not None and kind.name == "WEBP":
        return blob
    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(blob)) as image:
        return _webp(np.asarray(image.convert("RGB")), quality, lossless)


def _metadata_feature(name: str, feature: Feature) -> None:
    """Refuse a column the layout's per-video ``metadata`` (scalars) cannot hold."""
    scalar = isinstance(feature, ClassLabel) or (
        isinstance(feature, Value) and not feature.dtype.startswith(("binary", "large_binary"))
    )
    if not scalar:
        msg = (
            f"column {name!r} ({feature!r}) cannot go into the layout's per-video metadata, which holds strings, "
            f"numbers and booleans only; leave it out first (ds.remove_columns([{name!r}]))"
        )
        raise SchemaError(msg)


def _json_scalar(value: object) -> JsonScalar:
    if isinstance(value, (np.generic,)):
        return _json_scalar(value.item())
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)  # dates and decimals: as text


def _fingerprint(video_column: str, metadata: Features) -> str:
    """The ``schema_fingerprint`` its writer records for a builder of these columns."""
    import hashlib

    parts = [f"{video_column!r}: {FRAMES_VIDEO_REPR}"]
    parts.extend(f"{name!r}: {feature_repr(feature)}" for name, feature in metadata.items())
    return hashlib.sha256(("{" + ", ".join(parts) + "}").encode()).hexdigest()[:16]


def _loaded_name(name: str) -> str:
    return f"metadata_{name}" if name in _LOADED_COLUMNS else name


def _loaded_features(metadata: Features) -> Features:
    """The features ``se.load`` gives the copy (frame-level rows), class names included."""
    columns: dict[str, Feature] = {
        "video_id": Value("int32"),
        "frame_idx": Value("int32"),
        "frame": Image(),
        _PATH_COLUMN: Value("string"),
    }
    for name, feature in metadata.items():
        columns[_loaded_name(name)] = feature
    return Features(columns)


def write_video_frames(
    ds: CachedDataset,
    path: Path,
    *,
    video: str | None = None,
    frame: str = "frame_idx",
    image: str | None = None,
    quality: int = 65,
    lossless: bool = False,
    overwrite: bool = False,
) -> Path:
    """Write ``ds``'s videos at ``path`` in stable-datasets' ``lance-video-frames`` layout (see the module)."""
    _check_quality(quality, lossless)
    lance = require("lance", "lance", f"ds.export(layout={LAYOUT!r})")
    features = ds.features
    videos = [name for name, feature in features.items() if isinstance(feature, Video)]
    if video is None and len(videos) > 1:
        msg = f"the dataset has {len(videos)} Video columns ({videos}); say which with video="
        raise InvalidOptionError(msg)
    if video is None and videos:
        video = videos[0]
    if video is not None and video not in features:
        msg = f"no column {video!r} to take the videos from (video=); columns are {list(features)}"
        raise ColumnNotFoundError(msg)
    if len(ds) == 0:
        msg = f"the dataset has no rows; the {LAYOUT} layout needs at least one video (its reader refuses none)"
        raise InvalidOptionError(msg)
    source: _VideoSource | _FrameSource
    if video is not None and isinstance(features[video], Video):
        source = _VideoSource(ds, video, quality, lossless)
    else:
        source = _FrameSource(ds, video or "video_id", frame, image, quality, lossless)
    path = export_folder(path, layout=LAYOUT, ds=ds, overwrite=overwrite)
    with temp_dir_beside(path) as tmp:
        failed: list[BaseException] = []
        reader = pa.RecordBatchReader.from_batches(FRAME_SCHEMA, _kept_errors(source.batches(), failed))
        try:
            lance.write_dataset(reader, str(tmp), schema=FRAME_SCHEMA, mode="create")
        except (OSError, ValueError, RuntimeError) as exc:
            if failed:  # our own error, raised while Lance read the frames: as it was, not as Lance words it
                raise failed[0] from None
            msg = f"Lance could not write {path}: {exc}"
            raise CacheWriteError(msg) from exc
        if failed:
            raise failed[0]
        records = tuple(v.record() for v in source.videos)
        meta = VideoFramesMeta(
            videos=records,
            num_rows=sum(r.frames for r in records),
            schema_fingerprint=_fingerprint(source.video_column, source.metadata),
            quality=None if lossless else quality,
            lossless=lossless,
            video_column=source.video_column,
            features=_loaded_features(source.metadata).to_dict(),
        )
        (tmp / METADATA_FILE).write_text(json.dumps(meta.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")
        write_export_marker(tmp, layout=LAYOUT, ds=ds)
        publish_dir(tmp, path)
    return path


def _kept_errors(batches: Iterator[pa.RecordBatch], failed: list[BaseException]) -> Iterator[pa.RecordBatch]:
    """``batches``, keeping the exception that ends them (Lance hands it back as its own error, in text)."""
    try:
        yield from batches
    except BaseException as exc:
        failed.append(exc)
        raise


def _frame_batch(video_id: int, first: int, blobs: list[bytes]) -> pa.RecordBatch:
    return pa.record_batch(
        [
            pa.array([video_id] * len(blobs), pa.int32()),
            pa.array(range(first, first + len(blobs)), pa.int32()),
            pa.array(blobs, pa.large_binary()),
        ],
        schema=FRAME_SCHEMA,
    )


def _frame_size(blob: bytes, what: Callable[[], str]) -> tuple[int, int]:
    try:
        _, width, height = image_header(blob)
    except EncodingError as exc:
        msg = f"{what()}: {exc}"
        raise EncodingError(msg) from None
    return height, width


def _note_size(entry: _Video, number: int, size: tuple[int, int], where: Callable[[], str]) -> None:
    if entry.size is None:
        entry.size = size
    elif size != entry.size:
        msg = (
            f"{entry.label}, frame {number}{where()} is {size[0]}x{size[1]} (H x W) but its frame 0 is "
            f"{entry.size[0]}x{entry.size[1]}: the layout keeps one H and W per video; make the video's frames "
            "one size first (resize them in a map)"
        )
        raise EncodingError(msg)


class _VideoSource:
    """Rows with a Video column: each video decoded frame by frame and encoded as WebP."""

    def __init__(self, ds: CachedDataset, column: str, quality: int, lossless: bool) -> None:
        self.ds = ds
        self.video_column = column
        self.quality = quality
        self.lossless = lossless
        others = [name for name in ds.features if name not in (column, _PATH_COLUMN)]
        for name in others:
            _metadata_feature(name, ds.features[name])
        self.metadata = Features({name: ds.features[name] for name in others})
        self.videos: list[_Video] = []

    def batches(self) -> Iterator[pa.RecordBatch]:
        from stable_explore.dataset._export import row_keys
        from stable_explore.schema.video_codec import iter_frames, probe

        keys = row_keys(self.ds).to_pylist()
        row = 0
        names = [self.video_column, *self.metadata, *([_PATH_COLUMN] if _PATH_COLUMN in self.ds.features else [])]
        arrow = self.ds.select_columns(names).with_format("arrow")
        for table in arrow.iter(batch_size=16):
            for values in table.to_pylist():
                index = len(self.videos)
                stored = values[self.video_column]
                source, shown = _video_source(stored, index, keys[index], self.video_column)
                path = values.get(_PATH_COLUMN) or shown
                entry = _Video(
                    id=index,
                    key=_json_scalar(keys[index]),
                    path=str(path),
                    metadata={name: _json_scalar(values[name]) for name in self.metadata},
                    label=f"video {index} (row {index}, key {keys[index]!r}, column {self.video_column!r})",
                    start_row=row,
                )
                self.videos.append(entry)
                try:
                    count = probe(source).frames
                    pending: list[bytes] = []
                    for number, decoded in iter_frames(source, range(count)):
                        _note_size(entry, number, (int(decoded.shape[0]), int(decoded.shape[1])), str)
                        pending.append(_webp(decoded, self.quality, self.lossless))
                        if len(pending) == _FRAMES_PER_BATCH:
                            yield _frame_batch(index, entry.frames, pending)
                            entry.frames += len(pending)
                            pending = []
                except VideoDecodeError as exc:
                    raise exc.located(field=self.video_column, index=index, key=keys[index]) from None
                if pending:
                    yield _frame_batch(index, entry.frames, pending)
                    entry.frames += len(pending)
                if entry.frames == 0:
                    msg = f"{entry.label} has no frames; the layout needs at least one per video"
                    raise VideoDecodeError(msg, field=self.video_column, index=index, key=keys[index])
                row += entry.frames


def _video_source(stored: object, index: int, key: object, column: str) -> tuple[str | bytes, str]:
    """The decodable source of a stored Video cell, and the ``path`` its record names (else the row's key)."""
    video = video_cell(stored)
    if video is None:
        msg = f"row {index} (key {key!r}) has no video in column {column!r}; the layout needs one per row"
        raise EncodingError(msg)
    return video.source, video.path if video.path is not None else str(key)


class _FrameSource:
    """Frame-level rows: a video key, a frame index and an image per row, gathered video by video."""

    def __init__(
        self,
        ds: CachedDataset,
        video: str,
        frame: str,
        image: str | None,
        quality: int,
        lossless: bool,
    ) -> None:
        features = ds.features
        for name, option in ((video, "video="), (frame, "frame=")):
            if name not in features:
                msg = (
                    f"no column {name!r} ({option}): the {LAYOUT} layout is written from frame-level rows (a video "
                    f"key, a frame index and an Image per row) or from a Video column; columns are {list(features)}"
                )
                raise ColumnNotFoundError(msg)
        if image is None:
            images = [name for name, feature in features.items() if isinstance(feature, Image)]
            if len(images) != 1:
                msg = f"the dataset has {len(images)} Image columns ({images}); say which holds the frames with image="
                raise InvalidOptionError(msg)
            image = images[0]
        if image not in features or not isinstance(features[image], Image):
            msg = f"image= must name an Image column, got {image!r}; columns are {dict(features)}"
            raise InvalidOptionError(msg)
        frame_feature = features[frame]
        if not (isinstance(frame_feature, Value) and frame_feature.dtype.startswith(("int", "uint"))):
            msg = f"the frame index column {frame!r} (frame=) must hold integers, it is {frame_feature!r}"
            raise SchemaError(msg)
        self.ds = ds
        self.video = video
        self.frame = frame
        self.image = image
        self.quality = quality
        self.lossless = lossless
        self.video_column = "video"  # the name its builder's Video(storage='frames') column would have
        key_feature = features[video]
        self.int_ids = isinstance(key_feature, ClassLabel) or (
            isinstance(key_feature, Value) and key_feature.dtype.startswith(("int", "uint"))
        )
        others = [name for name in features if name not in (video, frame, image, _PATH_COLUMN)]
        if not (video == "video_id" and self.int_ids):
            _metadata_feature(video, key_feature)
            others.insert(0, video)  # the key comes back as a column of its own name
        for name in others:
            _metadata_feature(name, features[name])
        self.metadata = Features({name: features[name] for name in others})
        self.videos: list[_Video] = []
        self.order, self.counts, self.keys = self._plan()

    def _plan(self) -> tuple[np.ndarray, np.ndarray, list[Any]]:
        """Rows in the order they are written (video by video, frame 0 first), frames per video, the video keys."""
        keys = self.ds.arrow_column(self.video)
        frames = self.ds.arrow_column(self.frame)
        for column, values in ((self.video, keys), (self.frame, frames)):
            if values.null_count:
                row = int(pc.index(pc.is_null(values), True).as_py())
                msg = f"row {row} (key {self._key_at(row)!r}) has no value in column {column!r}"
                raise EncodingError(msg)
        encoded = pc.dictionary_encode(keys)  # the videos in the order of their first rows
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        indices = frames.to_numpy(zero_copy_only=False).astype(np.int64)
        order = np.lexsort((indices, codes))
        counts = np.bincount(codes, minlength=len(encoded.dictionary))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        expected = np.arange(len(order)) - np.repeat(starts, counts)
        wrong = np.flatnonzero(indices[order] != expected)
        video_keys = encoded.dictionary.to_pylist()
        if wrong.size:
            self._refuse_frames(video_keys, codes, indices, int(codes[order[wrong[0]]]))
        if self.int_ids:
            too_big = [k for k in video_keys if not -(2**31) <= int(k) < 2**31]
            if too_big:
                msg = f"video {too_big[0]!r} (column {self.video!r}) does not fit the layout's video_id (int32)"
                raise EncodingError(msg)
        return order, counts, video_keys

    def _where(self, row: int) -> str:
        return f" (row {row}, key {self._key_at(row)!r}, column {self.image!r})"

    def _frame_label(self, label: str, number: int, row: int) -> str:
        return f"{label}, frame {number}{self._where(row)}"

    def _key_at(self, row: int) -> object:
        key: object = self.ds.select([row]).keys()[0]
        return key

    def _refuse_frames(self, video_keys: list[Any], codes: np.ndarray, indices: np.ndarray, code: int) -> None:
        mine = np.sort(indices[codes == code])
        seen, repeats = np.unique(mine, return_counts=True)
        missing = sorted(set(range(len(mine))) - set(seen.tolist()))
        if (repeats > 1).any():
            found = f"frame {int(seen[np.argmax(repeats > 1)])} more than once"
        else:
            found = f"no frame {missing[0]}" if missing else "other numbers"
        msg = (
            f"video {video_keys[code]!r} (column {self.video!r}): its frame indices (column {self.frame!r}) must be "
            f"0 to T-1, each once (its reader takes frame f from row start_row + f), but it has {len(mine)} rows "
            f"with {found} (indices from {int(mine[0])} to {int(mine[-1])}); renumber its frames first"
        )
        raise EncodingError(msg)

    def batches(self) -> Iterator[pa.RecordBatch]:
        names = [self.video, self.frame, self.image, *[n for n in self.metadata if n != self.video]]
        if _PATH_COLUMN in self.ds.features:
            names.append(_PATH_COLUMN)
        view = self.ds.select(self.order).select_columns(list(dict.fromkeys(names))).with_format("arrow")
        code = -1
        remaining = 0
        row = 0
        done = 0
        pending: list[bytes] = []
        entry: _Video | None = None
        for table in view.iter(batch_size=_ROWS_PER_READ):
            for values in table.to_pylist():
                if remaining == 0:
                    if entry is not None and pending:
                        yield _frame_batch(entry.id, entry.frames, pending)
                        entry.frames += len(pending)
                        pending = []
                    code += 1
                    remaining = int(self.counts[code])
                    entry = self._start(code, values, row)
                assert entry is not None
                number = int(values[self.frame])
                at = int(self.order[done])
                where = partial(self._where, at)
                self._same_metadata(entry, values, number, at)
                blob = values[self.image]
                if blob is None:
                    msg = f"{entry.label}, frame {number}{where()} has no image"
                    raise EncodingError(msg)
                blob = _as_webp(bytes(blob), self.quality, self.lossless)
                size = _frame_size(blob, partial(self._frame_label, entry.label, number, at))
                _note_size(entry, number, size, where)
                pending.append(blob)
                if len(pending) == _FRAMES_PER_BATCH:
                    yield _frame_batch(entry.id, entry.frames, pending)
                    entry.frames += len(pending)
                    pending = []
                remaining -= 1
                row += 1
                done += 1
        if entry is not None and pending:
            yield _frame_batch(entry.id, entry.frames, pending)
            entry.frames += len(pending)

    def _start(self, code: int, values: dict[str, object], row: int) -> _Video:
        key = self.keys[code]
        label = f"video {key!r} (column {self.video!r})"
        path = values.get(_PATH_COLUMN)
        entry = _Video(
            id=int(key) if self.int_ids else code,
            key=_json_scalar(key),
            path=str(path if path is not None else key),
            metadata={name: _json_scalar(values[name]) for name in self.metadata},
            label=label,
            start_row=row,
            first_values={name: values.get(name) for name in [*self.metadata, _PATH_COLUMN]},
        )
        self.videos.append(entry)
        return entry

    def _same_metadata(self, entry: _Video, values: dict[str, object], number: int, row: int) -> None:
        for name, first in entry.first_values.items():
            value = values.get(name)
            if value != first:
                msg = (
                    f"{entry.label}: column {name!r} is {first!r} in its first frame but {value!r} in frame {number} "
                    f"(row {row}, key {self._key_at(row)!r}); the layout keeps one value per video: make it one per "
                    f"video, or leave the column out (ds.remove_columns([{name!r}]))"
                )
                raise EncodingError(msg)
