"""``ds.clips(...)``: frame windows of videos as rows, cut by stable-datasets' rule (see ``_clip_windows``).

Two sources of frames:

- a ``Video`` column: one row per video; a window decodes only its own span (from the key frame
  before it), and the decoder stays where it stopped for the video's next window (see ``_video_cursor``);
- frame-level data: one row per frame, an ``Image`` column, a column naming the video and one
  giving the frame's index; rows are grouped by video and ordered by frame index.

Frame counts come from ``probe`` (``Video``) or from the grouping (frames), once per video: a
video's probe is kept by :mod:`~stable_explore.dataset.video_probes` (which the browser shares), in
memory and in the home, so another ``clips`` call (other window sizes), a new kernel or the
browser does not probe it again; the view pickles its plan, so workers never probe.

Examples
--------
>>> import tempfile, stable_explore as se
>>> from stable_explore.testing.videos import frame_index, indexed_video
>>> ds = se.build([{"video": indexed_video(10), "label": "a"}, {"video": indexed_video(4), "label": "b"}],
...               se.Features(video=se.Video(), label=se.Value("string")), name="v",
...               home=tempfile.mkdtemp(), progress=False)
>>> clips = ds.clips(window_length=3, hop_size=4)
>>> len(clips), [frame_index(f) for f in clips[1]["frames"]], clips[2]["label"], clips[2]["video_row"]
(3, [4, 5, 6], 'b', 1)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from typing_extensions import TypedDict

from stable_explore.dataset._clip_windows import WindowPlan, plan_windows
from stable_explore.dataset._selection import position_of
from stable_explore.dataset._sharding import check_part, contiguous_bounds
from stable_explore.errors import (
    CacheCorruptionError,
    ColumnNotFoundError,
    ImageTooLargeError,
    InvalidArgumentTypeError,
    InvalidOptionError,
    SchemaError,
    VideoDecodeError,
)
from stable_explore.schema import Image, Video
from stable_explore.schema.video import video_cell

if TYPE_CHECKING:
    from stable_explore.dataset._iterable import RowStream
    from stable_explore.dataset._video_cursor import FrameCursor
    from stable_explore.dataset.cached_dataset import CachedDataset
    from stable_explore.schema import Features
    from stable_explore.schema.video_codec import VideoInfo

__all__ = ["ClipView", "clip_view"]

_OUT_NAMES = ("frames", "frame_indices", "start_frame", "video_row")
_VIDEO_KEYS = ("video_id", "video", "video_key", "clip_id")
_FRAME_KEYS = ("frame_idx", "frame_index", "frame", "frame_id")
_PROBE_THREADS = 4
_PROBE_BATCH = 32  # videos whose stored cells are read at once for probing


class _State(TypedDict):
    """What a pickled ClipView carries to a DataLoader worker (never its open decoders)."""

    ds: CachedDataset
    source: _Source
    plan: WindowPlan
    windows: np.ndarray | None


@dataclass(frozen=True)
class _Source:
    """Where a clip view's frames come from: a Video column, or frame rows grouped by video."""

    video_column: str | None  # a Video column, or None for frame-level data
    image_column: str | None  # frame-level: the Image column
    key_column: str | None  # frame-level: the column naming the video
    frame_column: str | None  # frame-level: the frame's index in its video
    video_rows: np.ndarray  # per video: its row in the dataset (Video), or its first frame's row (frames)
    frame_rows: np.ndarray | None  # frame-level: every video's frame rows, in frame order, videos one after another
    frame_offsets: np.ndarray | None  # frame-level: where each video's frame rows start in frame_rows
    frame_values: np.ndarray | None  # frame-level: the frame index stored in each of frame_rows
    video_columns: tuple[str, ...] = ()  # frame-level: the columns constant within every video, key first
    stored_column: str | None = None  # Video: the column's stored name (decoders are kept under it)


def clip_view(
    ds: CachedDataset,
    *,
    window_length: int,
    frame_skip: int = 0,
    hop_size: int = 1,
    min_video_frames: int | None = None,
    column: str | None = None,
    video: str | None = None,
    frame: str | None = None,
    stored_name: Callable[[str], str] = str,
) -> ClipView:
    """The windows of ``ds``'s videos (see ``CachedDataset.clips``).

    ``stored_name`` gives a column's name in the shards (a renamed column's is its old one): frame
    counts are kept under it, so a column renamed in a view is not taken for another.
    """
    features = ds.features
    if video is not None or frame is not None or (column is not None and isinstance(features.get(column), Image)):
        source, counts = _frame_source(ds, image=column, video=video, frame=frame)
    else:
        videos = [name for name, feature in features.items() if isinstance(feature, Video)]
        if column is None and not videos:
            source, counts = _frame_source(ds, image=None, video=None, frame=None)
        else:
            name = _video_column(features, videos, column)
            counts = _probe_counts(ds, name, stored_name(name))
            rows = np.arange(len(ds), dtype=np.int64)
            source = _Source(name, None, None, None, rows, None, None, None, (), stored_name(name))
    plan = plan_windows(
        counts, window_length=window_length, frame_skip=frame_skip, hop_size=hop_size, min_video_frames=min_video_frames
    )
    return ClipView(ds, source, plan, None)


def _video_column(features: Features, videos: list[str], column: str | None) -> str:
    if column is not None:
        if column not in features:
            msg = f"no column {column!r} to cut clips from; the columns are {list(features)}"
            raise ColumnNotFoundError(msg)
        if not isinstance(features[column], Video):
            msg = f"column {column!r} is {features[column]!r}, not a Video (or an Image per frame with video=, frame=)"
            raise SchemaError(msg)
        return column
    if len(videos) > 1:
        msg = f"the dataset has several Video columns {videos}: say which with column="
        raise SchemaError(msg)
    return videos[0]


def _probe_counts(ds: CachedDataset, column: str, stored: str) -> np.ndarray:
    """Each row's frame count (0 for a missing video), probed once per video (see ``video_probes``)."""
    from stable_explore.dataset.video_probes import video_probes
    from stable_explore.schema.video_codec import probe

    base = ds.base_rows()
    counts = np.zeros(len(base), dtype=np.int64)
    probes = video_probes(ds, stored)
    due = []
    for position, row in enumerate(base.tolist()):
        known = probes.get(row)
        if known is None or isinstance(known, str):  # a failure is probed again: it raises, naming the row
            due.append(position)
        else:
            counts[position] = known.frames
    if not due:
        return counts

    def info_of(item: tuple[int, object]) -> VideoInfo | None:
        position, cell = item
        video = video_cell(cell)
        if video is None:
            return None
        try:
            return probe(video.source)
        except VideoDecodeError as exc:
            raise _located(exc, ds, position, column) from exc

    with ThreadPoolExecutor(_PROBE_THREADS) as pool:  # PyAV releases the GIL while it reads
        for start in range(0, len(due), _PROBE_BATCH):  # a batch's cells at a time: embedded videos are big
            batch = due[start : start + _PROBE_BATCH]
            cells = ds.select(batch).arrow_column(column).to_pylist()
            infos = list(pool.map(info_of, zip(batch, cells, strict=True)))
            for position, info in zip(batch, infos, strict=True):
                counts[position] = 0 if info is None else info.frames
            probes.put((int(base[p]), cell, info) for p, cell, info in zip(batch, cells, infos, strict=True) if info)
    return counts


def _located(exc: VideoDecodeError, ds: CachedDataset, position: int, column: str) -> VideoDecodeError:
    key = ds[position : position + 1].keys()[0]
    return exc.located(field=column, index=position, key=key)


def _frame_source(
    ds: CachedDataset, *, image: str | None, video: str | None, frame: str | None
) -> tuple[_Source, np.ndarray]:
    """Frame rows grouped by video (in order of first appearance) and ordered by frame index."""
    features = ds.features
    images = [name for name, feature in features.items() if isinstance(feature, Image)]
    image = image if image is not None else (images[0] if len(images) == 1 else None)
    video = video if video is not None else next((n for n in _VIDEO_KEYS if n in features), None)
    frame = frame if frame is not None else next((n for n in _FRAME_KEYS if n in features), None)
    if image is None or video is None or frame is None:
        msg = (
            f"no Video column, and no frame-level columns found to cut clips from (columns: {list(features)}): "
            "give a Video column (column=), or frame rows with an Image per frame, the video's key and the "
            "frame's index (ds.clips(..., column='image', video='video_id', frame='frame_idx'))"
        )
        raise SchemaError(msg)
    for name in (image, video, frame):
        if name not in features:
            msg = f"no column {name!r} to cut clips from; the columns are {list(features)}"
            raise ColumnNotFoundError(msg)
    if not isinstance(features[image], Image):
        msg = f"column {image!r} is {features[image]!r}, not an Image (one frame per row)"
        raise SchemaError(msg)
    keys = ds.arrow_column(video)
    frames = ds.arrow_column(frame)
    if not pa.types.is_integer(frames.type):
        msg = f"column {frame!r} gives a frame's index, so it holds integers; it holds {frames.type}"
        raise SchemaError(msg)
    if keys.null_count or frames.null_count:
        which = video if keys.null_count else frame
        msg = f"column {which!r} has missing values: every frame row needs its video and frame index"
        raise SchemaError(msg)
    codes = pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    values = frames.to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((values, codes))  # by video (first seen first), then frame
    counts = np.bincount(codes, minlength=int(codes.max()) + 1 if len(codes) else 0).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    video_rows = order[offsets[:-1]] if len(counts) else np.zeros(0, np.int64)
    order = order.astype(np.int64)
    video_rows = video_rows.astype(np.int64)
    constant = _constant_columns(ds, [n for n in features if n not in (image, video, frame)], video_rows[codes])
    source = _Source(None, image, video, frame, video_rows, order, offsets, values[order], (video, *constant))
    return source, counts


def _constant_columns(ds: CachedDataset, names: list[str], first_rows: np.ndarray) -> list[str]:
    """The plain columns (no images, videos, arrays...) whose every row holds its video's first frame's value.

    Those describe the video (its label, path, metadata), so each of its windows carries them, as
    stable-datasets merges a video's metadata into each of its samples; a column that changes from
    frame to frame (a per-frame box, a timestamp) belongs to no window as a whole and is left out.
    """
    from stable_explore.dataset._decoding import needs_decoding

    features = ds.features
    constant = []
    for name in names:
        if needs_decoding(features[name]):
            continue
        values = ds.arrow_column(name)
        if values.equals(values.take(pa.array(first_rows))):
            constant.append(name)
    return constant


class ClipView:
    """Frame windows of a dataset's videos as rows (``ds.clips``): a view like a dataset's.

    Row ``i`` is a dict: ``frames`` (``uint8`` T x H x W x 3), ``frame_indices``, ``start_frame``,
    ``video_row`` (the video's row in the dataset ``clips`` was called on; for frame-level data,
    its first frame's row), and the video row's other columns (frame-level data: the video's key and the
    columns constant within each video, as its label or path, from its first frame's row).
    ``len``, indexing, slicing and lists of positions, ``shuffle``, ``shard``, ``split_by_node``,
    ``to_iterable`` and ``__getitems__`` behave as a dataset's; it pickles as its dataset and its
    plan (no frames), so DataLoader workers start at once.
    """

    def __init__(self, ds: CachedDataset, source: _Source, plan: WindowPlan, windows: np.ndarray | None) -> None:
        self._ds = ds
        self._source = source
        self._plan = plan
        self._windows = windows  # which windows of the plan, in which order (None: all, in order)

    # -- a view's shape --------------------------------------------------------

    def __len__(self) -> int:
        return len(self._plan) if self._windows is None else int(self._windows.shape[0])

    @property
    def window_length(self) -> int:
        """Frames per window."""
        return self._plan.window_length

    @property
    def frames_per_video(self) -> np.ndarray:
        """Each video's frame count (as probed, or as its frame rows number)."""
        counts = np.asarray(self._plan.per_video, dtype=np.int64)
        span = self._plan.span
        return np.where(counts > 0, (counts - 1) * self._plan.hop_size + span, 0)

    def _all(self) -> np.ndarray:
        return np.arange(len(self._plan), dtype=np.int64) if self._windows is None else self._windows

    def _with(self, windows: np.ndarray) -> ClipView:
        return ClipView(self._ds, self._source, self._plan, np.asarray(windows, dtype=np.int64))

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (int, np.integer)):
            return self.__getitems__([int(key)])[0]
        if isinstance(key, slice):
            return self._with(self._all()[key])
        if isinstance(key, (list, tuple, range, np.ndarray)):
            picked = np.asarray(list(key) if isinstance(key, (tuple, range)) else key)
            if picked.dtype == bool:
                if picked.shape != (len(self),):
                    msg = f"a boolean mask over {len(self)} clips has {picked.shape[0]} values"
                    raise InvalidOptionError(msg)
                return self._with(self._all()[picked])
            positions = [position_of(int(i), len(self)) for i in picked.tolist()]
            return self._with(self._all()[np.asarray(positions, dtype=np.int64)])
        msg = f"clips are indexed by an int, a slice, a list or an array of ints, got {type(key).__name__}"
        raise InvalidArgumentTypeError(msg)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, len(self), 64):
            yield from self.__getitems__(list(range(start, min(start + 64, len(self)))))

    def shuffle(self, seed: int | None = None) -> ClipView:
        """The same windows in a random order (the same order for the same ``seed``)."""
        order = np.random.default_rng(seed).permutation(len(self))
        return self._with(self._all()[order])

    def shard(self, num_shards: int, index: int, *, contiguous: bool = True) -> ClipView:
        """Part ``index`` of ``num_shards`` disjoint parts holding every window once (sizes differ by at most one)."""
        num_shards, index = check_part(num_shards, index, count_name="num_shards", index_name="index")
        if not isinstance(contiguous, bool):
            msg = f"contiguous must be True or False, got {type(contiguous).__name__} {contiguous!r}"
            raise InvalidArgumentTypeError(msg)
        windows = self._all()
        if contiguous:
            start, stop = contiguous_bounds(len(windows), num_shards, index)
            return self._with(windows[start:stop])
        return self._with(windows[index::num_shards])

    def split_by_node(self, rank: int, world_size: int) -> ClipView:
        """The windows node ``rank`` of ``world_size`` reads: ``shard(world_size, rank)``."""
        world_size, rank = check_part(world_size, rank, count_name="world_size", index_name="rank")
        return self.shard(world_size, rank)

    def to_iterable(
        self,
        *,
        shuffle: bool = False,
        seed: int = 0,
        epoch: int = 0,
        buffer_size: int = 256,
        rank: int | None = None,
        world_size: int | None = None,
    ) -> RowStream:
        """A ``torch.utils.data.IterableDataset`` of these windows split over ranks and DataLoader workers.

        As ``CachedDataset.to_iterable``: each video's windows are one unit dealt to a rank or
        worker (so a worker decodes its own videos), shuffled per ``(seed, epoch)``.
        """
        from stable_explore.dataset._iterable import IterableView, resolve_rank

        rank, world_size = resolve_rank(rank, world_size)
        videos = self._plan.video[self._all()]
        cuts = np.flatnonzero(np.diff(videos)) + 1
        units = [[range(int(a), int(b))] for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(videos)], strict=True)]
        view: RowStream = IterableView(
            units if len(videos) else [],
            self.__getitems__,
            ref=f"clips of {self._ds.ref}",
            version=self._ds.version,
            shuffle=shuffle,
            seed=seed,
            epoch=epoch,
            buffer_size=buffer_size,
            rank=rank,
            world_size=world_size,
        )
        return view

    # -- reading ------------------------------------------------------------------

    def __getitems__(self, indices: Sequence[int] | range | np.ndarray) -> list[dict[str, Any]]:
        """Windows at ``indices`` (DataLoader's batched access); windows of one video decode their span once."""
        positions = [position_of(int(i), len(self)) for i in np.asarray(indices, dtype=np.int64).tolist()]
        windows = self._all()[np.asarray(positions, dtype=np.int64)] if positions else np.zeros(0, np.int64)
        if self._source.video_column is not None:
            return self._video_windows(windows)
        return self._frame_windows(windows)

    def _window(self, window: int) -> tuple[int, int, np.ndarray]:
        plan = self._plan
        return int(plan.video[window]), int(plan.start[window]), plan.frame_indices(window)

    def _video_windows(self, windows: np.ndarray) -> list[dict[str, Any]]:
        """Windows of a Video column, each video's in order of start through its kept decoder (see _video_cursor)."""
        from stable_explore.dataset._video_cursor import cursor_for

        source = self._source
        column = source.video_column
        assert column is not None
        videos = sorted({int(self._plan.video[w]) for w in windows.tolist()})
        rows = dict(zip(videos, self._ds.__getitems__(videos), strict=True))
        base = dict(zip(videos, self._ds.base_rows(videos).tolist(), strict=True))
        span = self._plan.span
        frames: dict[int, np.ndarray] = {}
        for video in videos:
            mine = sorted(
                {int(w) for w in windows.tolist() if int(self._plan.video[w]) == video},
                key=lambda w: int(self._plan.start[w]),
            )
            cell = video_cell(rows[video][column])
            assert cell is not None  # a video has windows only when it has frames
            plan = self._plan
            key = (
                self._ds.version,
                source.stored_column,
                base[video],
                plan.window_length,
                plan.frame_skip,
                plan.hop_size,
            )
            make = functools.partial(_new_cursor, cell.source, plan, video, span)  # its frames listed only when new
            cursor = cursor_for(key, make)
            with cursor.lock:
                for n, w in enumerate(mine):
                    try:
                        frames[w] = cursor.window(self._plan.frame_indices(w), more=n + 1 < len(mine))
                    except VideoDecodeError as exc:
                        raise _located(exc, self._ds, video, column) from exc
        out = []
        for w in windows.tolist():
            video, start, indices = self._window(int(w))
            row = {name: value for name, value in rows[video].items() if name != column}
            out.append(_clip(row, frames[int(w)], indices, start, video))
        return out

    def _frame_windows(self, windows: np.ndarray) -> list[dict[str, Any]]:
        """Windows of frame rows: the frames' stored bytes in one take, each frame decoded once into its window."""
        source = self._source
        assert source.frame_rows is not None
        assert source.frame_offsets is not None
        assert source.frame_values is not None
        assert source.image_column is not None
        picked = []
        for w in windows.tolist():
            video, start, indices = self._window(int(w))
            at = source.frame_offsets[video] + indices
            picked.append((video, start, source.frame_rows[at], source.frame_values[at]))
        if not picked:
            return []
        wanted, inverse = np.unique(np.concatenate([rows for _, _, rows, _ in picked]), return_inverse=True)
        stored = self._ds.select(wanted).arrow_column(source.image_column)
        frames = _FrameDecoder(self._ds, source.image_column, wanted, stored)
        videos = sorted({video for video, _, _, _ in picked})
        described = self._ds.select([int(source.video_rows[v]) for v in videos])
        columns = list(source.video_columns or (str(source.key_column),))
        metas = dict(zip(videos, described.select_columns(columns).__getitems__(range(len(videos))), strict=True))
        out = []
        cut = 0
        for video, start, rows, indices in picked:
            images = frames.window(inverse[cut : cut + len(rows)])
            cut += len(rows)
            out.append(_clip(dict(metas[video]), images, indices, start, int(source.video_rows[video])))
        return out

    # -- pickling and repr --------------------------------------------------------

    def __getstate__(self) -> _State:
        return {"ds": self._ds, "source": self._source, "plan": self._plan, "windows": self._windows}

    def __setstate__(self, state: _State) -> None:
        self._ds, self._source, self._plan, self._windows = (
            state["ds"],
            state["source"],
            state["plan"],
            state["windows"],
        )

    def __repr__(self) -> str:
        plan = self._plan
        what = f"column {self._source.video_column!r}" if self._source.video_column else "frame rows"
        return (
            f"ClipView({self._ds.ref}, {what}: {len(self)} windows of {plan.window_length} frames, "
            f"frame_skip={plan.frame_skip}, hop_size={plan.hop_size})"
        )


def _new_cursor(source: str | bytes, plan: WindowPlan, video: int, span: int) -> FrameCursor:
    from stable_explore.dataset._video_cursor import FrameCursor

    return FrameCursor(source, _needed_frames(plan, video), span)


def _needed_frames(plan: WindowPlan, video: int) -> np.ndarray:
    """Every frame some window of ``video`` takes, increasing (the others are decoded, never made RGB)."""
    starts = np.asarray(plan.start)[np.flatnonzero(np.asarray(plan.video) == video)]
    offsets = np.arange(plan.window_length, dtype=np.int64) * (plan.frame_skip + 1)
    return np.unique((starts[:, None].astype(np.int64) + offsets[None, :]).ravel())


def _clip(row: dict[str, Any], frames: np.ndarray, indices: np.ndarray, start: int, video_row: int) -> dict[str, Any]:
    clashes = [name for name in _OUT_NAMES if name in row]
    others = {(f"video_{name}" if name in clashes else name): value for name, value in row.items()}
    return {
        **others,
        "frames": frames,
        "frame_indices": np.asarray(indices, dtype=np.int64),
        "start_frame": int(start),
        "video_row": int(video_row),
    }


class _FrameDecoder:
    """Frames of frame rows decoded from their stored bytes, each once however many windows hold it."""

    def __init__(self, ds: CachedDataset, column: str, rows: np.ndarray, stored: pa.Array) -> None:
        self._ds = ds
        self._column = column
        self._rows = rows  # positions in ds of the stored values
        self._stored = stored
        self._max_pixels = getattr(ds.features[column], "max_pixels", None)
        self._done: dict[int, np.ndarray] = {}  # position in stored -> its pixels (a window's frame)

    def window(self, positions: np.ndarray) -> np.ndarray:
        """The frames at ``positions`` (of the stored values) as one T x H x W x 3 ``uint8`` array."""
        out: np.ndarray | None = None
        for t, position in enumerate(positions.tolist()):
            pixels = self._done.get(position)
            if pixels is None:
                pixels = self._decode(position)
            if out is None:
                out = np.empty((len(positions), *pixels.shape), dtype=np.uint8)
            elif pixels.shape != out.shape[1:]:
                msg = (
                    f"row {int(self._rows[position])} (key {self._key(position)!r}), field {self._column!r}: a frame "
                    f"of {pixels.shape[1]}x{pixels.shape[0]} in a window of {out.shape[2]}x{out.shape[1]} frames; "
                    "every frame of a video must have one size (resize them, e.g. with ds.map)"
                )
                raise SchemaError(msg)
            out[t] = pixels
            self._done[position] = out[t]
        assert out is not None
        return out

    def _key(self, position: int) -> object:
        row = int(self._rows[position])
        key: object = self._ds[row : row + 1].keys()[0]
        return key

    def _decode(self, position: int) -> np.ndarray:
        from stable_explore.schema.image_codec import rgb_pixels

        value = self._stored[position]
        row = int(self._rows[position])
        if not value.is_valid:
            msg = (
                f"row {row} (key {self._key(position)!r}), field {self._column!r}: the frame has no image; every "
                "frame row of a video needs one (drop the row, or fill it)"
            )
            raise SchemaError(msg)
        try:
            return rgb_pixels(memoryview(value.as_buffer()), self._max_pixels)
        except ImageTooLargeError as exc:
            msg = f"row {row} (in {self._ds.ref}), field {self._column!r}: {exc}"
            raise ImageTooLargeError(msg) from exc
        except (OSError, ValueError, SyntaxError) as exc:
            msg = f"row {row} (in {self._ds.ref}), field {self._column!r}: the stored value cannot be decoded: {exc}"
            raise CacheCorruptionError(self._ds.cache_dir, msg) from exc
