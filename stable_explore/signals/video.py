"""Signals for videos: per-video statistics (length, rate, size, black and frozen stretches) and near-duplicate videos.

``video_stats`` decodes each video once at a small size (64 pixels wide, grey) and measures, frame by
frame, how dark it is and how much it changed since the previous frame. A *black* stretch is a run of
frames whose mean brightness is under ``black_level``; a *frozen* stretch a run in which no frame
differs from the previous one by more than ``frozen_level`` (mean absolute difference, 0..1); either
counts when it lasts at least ``min_seconds``.

``video_hashes`` takes the pHash of a few frames at fixed fractions of each video (the same places in
a long and a short copy), and ``near_duplicate_videos`` groups videos whose sampled frames differ by at
most ``threshold`` bits on average: re-encoded, resized or slightly trimmed copies of one video.

Examples
--------
>>> import stable_explore as se, tempfile, pathlib, numpy as np
>>> from stable_explore.schema.video_codec import encode_frames
>>> from stable_explore.signals import video_stats
>>> frames = np.zeros((30, 32, 32, 3), np.uint8)
>>> frames[10:] = np.random.default_rng(0).integers(0, 255, (20, 32, 32, 3))  # black, then noise
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "a.mp4").write_bytes(encode_frames(frames, fps=10))
>>> ds = se.build([{"video": folder / "a.mp4"}], se.Features(video=se.Video()), name="v", home=folder, progress=False)
>>> stats = video_stats(ds).to_pylist()[0]
>>> stats["frames"], stats["duration"], stats["black_seconds"], stats["black_stretches"]
(30, 3.0, 1.0, [{'start': 0.0, 'end': 1.0}])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.errors import ColumnNotFoundError, InvalidOptionError, StableExploreError
from stable_explore.schema import Video
from stable_explore.schema.video import video_source
from stable_explore.schema.video_codec import VideoSource, probe, read_frames, scan_frames
from stable_explore.signals._rows import map_images, result_table
from stable_explore.signals.duplicates import _groups_table
from stable_explore.signals.perceptual import phash, popcount

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["near_duplicate_videos", "video_column", "video_hashes", "video_stats"]

_SCAN_WIDTH = 64
_STRETCH = pa.list_(pa.struct([("start", pa.float64()), ("end", pa.float64())]))
_STAT_COLUMNS = ("frames", "fps", "duration", "width", "height", "codec", "black_seconds", "frozen_seconds")


def video_column(ds: CachedDataset, column: str | None) -> str:
    """The video column a video signal reads: ``column``, or the dataset's first ``Video`` column."""
    name = column if column is not None else ds.features.first_of(Video)
    if name is None or not isinstance(ds.features.get(name), Video):
        found = "no Video column" if name is None else f"column {name!r} is {ds.features.get(name)!r}, not a Video"
        msg = f"{found} (columns: {list(ds.features)}); pass column= naming a Video column"
        raise ColumnNotFoundError(msg)
    return name


def _stretches(flags: np.ndarray, fps: float, min_seconds: float) -> list[dict[str, float]]:
    """Runs of True in ``flags`` lasting at least ``min_seconds``, as ``{start, end}`` in seconds."""
    if not flags.size or fps <= 0:
        return []
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    keep = (ends - starts) / fps >= min_seconds
    return [
        {"start": round(a / fps, 6), "end": round(b / fps, 6)} for a, b in zip(starts[keep], ends[keep], strict=True)
    ]


def _measure(source: VideoSource, black_level: float, frozen_level: float, min_seconds: float) -> dict[str, Any]:
    info = probe(source)
    darkness, change = [], []
    previous: np.ndarray | None = None
    for frame in scan_frames(source, width=_SCAN_WIDTH):
        grey = frame.astype(np.float32) / 255
        darkness.append(float(grey.mean()))
        change.append(1.0 if previous is None else float(np.abs(grey - previous).mean()))
        previous = grey
    fps = info.fps or 1.0
    dark = np.asarray(darkness) < black_level
    black = _stretches(dark, fps, min_seconds)
    # a frozen stretch starts at the frame that did not change: include the frame it repeats; black
    # frames are still too, but they are reported as black only
    still = np.asarray(change) <= frozen_level
    frozen = _stretches((still | np.append(still[1:], False)) & ~dark, fps, min_seconds) if still.size else []
    return {
        **{name: getattr(info, name) for name in ("frames", "fps", "duration", "width", "height", "codec")},
        "frames": len(darkness),
        "black_seconds": round(sum(s["end"] - s["start"] for s in black), 6),
        "frozen_seconds": round(sum(s["end"] - s["start"] for s in frozen), 6),
        "black_stretches": black,
        "frozen_stretches": frozen,
    }


def _objects(values: Sequence[object]) -> np.ndarray:
    """A 1-D object array of ``values`` (dicts stay whole: ``np.asarray`` would look inside them)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _stats_batch(values: Sequence[object], first: int, options: tuple[float, float, float]) -> dict[str, np.ndarray]:
    out: list[dict[str, Any] | None] = []
    errors: list[str | None] = []
    for cell in values:
        source = video_source(cell)
        if source is None:
            out.append(None)
            errors.append(None)
            continue
        try:
            out.append(_measure(source, *options))
            errors.append(None)
        except StableExploreError as exc:
            out.append(None)
            errors.append(str(exc))
    return {
        "stats": _objects(out),
        "error": _objects(errors),
    }


class _StatsBatch:
    """A picklable batch function with the thresholds bound (map_images hands it to worker processes)."""

    def __init__(self, options: tuple[float, float, float]) -> None:
        self.options = options

    def __call__(self, values: Sequence[object], first: int) -> dict[str, np.ndarray]:
        return _stats_batch(values, first, self.options)


def _fraction(name: str, value: float) -> float:
    if not 0 <= value <= 1:
        msg = f"{name} must be between 0 and 1, got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def video_stats(
    ds: CachedDataset,
    *,
    column: str | None = None,
    black_level: float = 0.06,
    frozen_level: float = 0.002,
    min_seconds: float = 0.5,
    num_proc: int | None = None,
) -> pa.Table:
    """Frames, rate, duration, size, codec, and black and frozen stretches of every video.

    Parameters
    ----------
    ds
        The dataset (or a view of it).
    column
        The video column (default: the first ``Video`` column).
    black_level
        A frame whose mean brightness (0..1) is below this is black.
    frozen_level
        A frame whose mean absolute difference from the previous one (0..1) is at most this is frozen
        (a repeated frame re-encoded differs by about 0.0005; a slow pan by 0.004 or more). Black
        frames are reported as black, not frozen.
    min_seconds
        Shorter black or frozen runs are not reported.
    num_proc
        Processes that decode, this one among them (N - 1 workers read their rows from the cache themselves).

    Returns
    -------
    pyarrow.Table
        One row per row of ``ds``, in order: ``row``, ``key``, ``frames`` (decoded), ``fps``, ``duration``
        (seconds), ``width``, ``height``, ``codec``, ``black_seconds``, ``frozen_seconds``,
        ``black_stretches`` and ``frozen_stretches`` (lists of ``{start, end}`` in seconds), and ``error``:
        why a video could not be read (its other columns null), null when it was. A row without a
        video has nulls.
    """
    name = video_column(ds, column)
    options = (_fraction("black_level", black_level), _fraction("frozen_level", frozen_level), float(min_seconds))
    values = map_images(ds, name, _StatsBatch(options), num_proc)
    stats: list[dict[str, Any] | None] = list(values["stats"])
    types = {
        "frames": pa.int64(),
        "fps": pa.float64(),
        "duration": pa.float64(),
        "width": pa.int64(),
        "height": pa.int64(),
        "codec": pa.string(),
        "black_seconds": pa.float64(),
        "frozen_seconds": pa.float64(),
    }
    columns: dict[str, pa.Array] = {
        field: pa.array([None if s is None else s[field] for s in stats], type=kind) for field, kind in types.items()
    }
    for field in ("black_stretches", "frozen_stretches"):
        columns[field] = pa.array([None if s is None else s[field] for s in stats], type=_STRETCH)
    columns["error"] = pa.array(list(values["error"]), type=pa.string())
    return result_table(ds, np.arange(len(ds), dtype=np.int64), columns)


def _sample_points(frames: int, samples: int) -> list[int]:
    return sorted({min(frames - 1, int((i + 0.5) * frames / samples)) for i in range(samples)})


def _hash_video(source: VideoSource, samples: int) -> list[int]:
    from PIL import Image as PILImage

    info = probe(source)
    points = _sample_points(info.frames, samples) if info.frames else []
    picked: Iterable[np.ndarray] = read_frames(source, points) if points else []
    hashes = [phash(PILImage.fromarray(frame)) for frame in picked]
    while hashes and len(hashes) < samples:  # a video shorter than the samples repeats its frames
        hashes.append(hashes[len(hashes) % len(points)])
    return hashes


class _HashBatch:
    def __init__(self, samples: int) -> None:
        self.samples = samples

    def __call__(self, values: Sequence[object], first: int) -> dict[str, np.ndarray]:
        hashes = np.zeros((len(values), self.samples), dtype=np.uint64)
        valid = np.zeros(len(values), dtype=bool)
        errors: list[str | None] = [None] * len(values)
        for i, cell in enumerate(values):
            source = video_source(cell)
            if source is None:
                continue
            try:
                found = _hash_video(source, self.samples)
            except StableExploreError as exc:
                errors[i] = str(exc)
                continue
            if found:
                hashes[i] = found
                valid[i] = True
        return {"hashes": hashes, "valid": valid, "error": _objects(errors)}


def video_hashes(
    ds: CachedDataset, *, column: str | None = None, samples: int = 8, num_proc: int | None = None
) -> pa.Table:
    """The pHash of ``samples`` frames of every video, taken at the same fractions of its length.

    Returns
    -------
    pyarrow.Table
        ``row``, ``key``, ``hashes`` (a list of ``samples`` uint64; null for a row without a readable
        video) and ``error`` (why a video could not be read).
    """
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        msg = f"samples must be a whole number >= 1, got {samples!r}"
        raise InvalidOptionError(msg)
    values = map_images(ds, video_column(ds, column), _HashBatch(samples), num_proc)
    hashes = pa.array(
        [row.tolist() if ok else None for row, ok in zip(values["hashes"], values["valid"], strict=True)],
        type=pa.list_(pa.uint64()),
    )
    columns = {"hashes": hashes, "error": pa.array(list(values["error"]), type=pa.string())}
    return result_table(ds, np.arange(len(ds), dtype=np.int64), columns)


def _mean_distances(block: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Mean Hamming distance over the sampled frames between each of ``block`` and each of ``others``."""
    xor = block[:, None, :] ^ others[None, :, :]
    return np.asarray(popcount(xor.reshape(-1)).reshape(xor.shape).mean(axis=2))


def _link(pairs: Iterable[tuple[int, int]], n: int) -> np.ndarray:
    parent = np.arange(n)

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = int(parent[i])
        return i

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.asarray([root(i) for i in range(n)], dtype=np.int64)


def near_duplicate_videos(
    ds: CachedDataset,
    *,
    threshold: float = 6,
    column: str | None = None,
    samples: int = 8,
    hashes: pa.Table | None = None,
    num_proc: int | None = None,
) -> pa.Table:
    """Groups of videos whose sampled frames look alike: at most ``threshold`` bits apart on average.

    Parameters
    ----------
    threshold
        Mean differing bits (of 64) over the sampled frames that still count as alike: re-encoded and
        resized copies sit at 0-4, unrelated videos near 32.
    samples
        Frames hashed per video (see :func:`video_hashes`; pass ``hashes=`` to reuse them).

    Returns
    -------
    pyarrow.Table
        One row per member of a group of two or more: ``row``, ``key``, ``group`` (the group's first row),
        ``group_size`` and ``distance`` (mean bits from the group's first row); largest groups first.
    """
    if hashes is None:
        hashes = video_hashes(ds, column=column, samples=samples, num_proc=num_proc)
    elif hashes.num_rows != len(ds):
        msg = f"hashes= has {hashes.num_rows} rows for a dataset of {len(ds)}: pass video_hashes(ds) of this ds"
        raise ColumnNotFoundError(msg)
    listed = hashes.column("hashes").to_pylist()
    rows = np.asarray([i for i, h in enumerate(listed) if h], dtype=np.int64)
    n = len(ds)
    groups = np.arange(n, dtype=np.int64)
    distance = np.zeros(n, dtype=np.float64)
    if rows.size:
        matrix = np.asarray([listed[i] for i in rows], dtype=np.uint64)
        pairs: list[tuple[int, int]] = []
        block = max(1, 4_000_000 // max(1, rows.size * matrix.shape[1]))  # bounded work arrays
        for start in range(0, rows.size, block):
            near = _mean_distances(matrix[start : start + block], matrix) <= threshold
            a, b = np.nonzero(near)
            pairs.extend((int(x + start), int(y)) for x, y in zip(a, b, strict=True) if x + start < y)
        linked = _link(pairs, rows.size)
        groups[rows] = rows[linked]
        distance[rows] = popcount((matrix ^ matrix[linked]).reshape(-1)).reshape(matrix.shape).mean(axis=1)
    sizes = np.bincount(groups, minlength=n)[groups]
    return _groups_table(ds, groups, sizes, {"distance": pa.array(np.round(distance, 3), type=pa.float64())})
