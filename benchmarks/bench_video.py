"""Benchmark: frame windows per second into a PyTorch DataLoader, ours against stable-datasets' video backend.

The workload: 32 videos of 96 frames at 128x128 (``--videos``, ``--frames``, ``--size``), each frame
carrying its video and frame number (:mod:`stable_explore.testing.videos`'s bars, on a texture of the
video's own), cut into windows of 8 frames, every 2nd, one every 4 frames (``--window``, ``--skip``,
``--hop``): 21 windows a video. Everything lives in one temp dir, removed at the end.

Contenders, each an epoch through ``DataLoader(batch_size=8, num_workers=2, shuffle=True)`` (a new
loader per epoch, as a training loop makes; the same seeded order for every contender in a round):

- ours, ``ds.clips`` over a ``Video(embed=True)`` column: H.264 in MP4, and VP9 in WebM (a window
  decodes its own span with PyAV);
- ours, ``ds.clips(video="video_id", frame="frame_idx")`` over ``se.load`` of a ``lance-video-frames``
  folder (frame-level rows: one WebP per row, decoded with Pillow);
- theirs, stable-datasets' ``LanceVideoFramesBackend`` on that same folder (a Lance ``take`` of the
  window's rows, WebP decoded with OpenCV), behind a two-method map-style wrapper (``len``,
  ``get_row``) with its ``worker_init``, which is what their ``StableDataset`` calls per row for a
  dataset with binary columns (their formatter's pass over the row is left out).

The folder is written by their own writer (``write_lance_video_frames_cache``, from the snapshot of
their repository, OpenCV reading the MP4 files) when OpenCV imports; our
``ds.export(layout="stable-datasets-video")`` of the same videos is written too, and both are read
with their backend. Checked in the same run (the script stops if not): every contender gives the same
windows (video, start frame, frame indices) as the window rule, and every frame of every window is
the frame it should be (the number its bars spell); the two folders' frames differ by a few grey
levels at most (both WebP at quality 65, from two decoders of the same H.264).

Timing: a first epoch per contender (the check above) warms the page cache and the workers' imports,
then ``--rounds`` rounds, each contender once per round in a rotated order (round r starts at
contender r). Printed: windows/s median and range per contender, the ratio ours/theirs per round
(median and range), and peak memory: the main process's RSS and each worker's RSS and USS (psutil,
sampled every 20 ms during the timed epochs; a forked worker's RSS counts the pages it shares with
its parent, its USS only its own).

stable-datasets' code is not on PyPI, and is not committed here: its package is extracted from a
checkout of its repository into the temp dir (as ``compat_stable_datasets.py`` does; ``--repo``).
Their backend decodes with OpenCV, which is not one of our dependencies: install it outside our
environment and pass the folder, e.g.::

    pip install --no-deps --target /tmp/cv2-bench opencv-python-headless
    python -u benchmarks/bench_video.py --cv2 /tmp/cv2-bench   # about 4 minutes on 2 busy cores

Without OpenCV the script says so, measures ours only, and writes the folder with our export.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from _report import mb, rule
from compat_stable_datasets import DEFAULT_REPO, _git, _their_package

NAMES = ["even", "odd"]


def _video_frames(video: int, frames: int, size: int) -> np.ndarray:
    """Frames of video ``video``: bars spelling ``video * frames + t`` over a texture of the video's own."""
    from stable_explore.testing.videos import indexed_frames

    out = indexed_frames(frames, height=size, width=size, start=video * frames)
    texture = np.random.default_rng(video).integers(0, 40, (size, size, 2), dtype=np.uint8)
    out[..., :2] = np.where(out[..., :2] > 127, out[..., :2] - texture, out[..., :2] + texture)
    return out


class TheirWindows:
    """stable-datasets' backend as a map-style dataset: ``len`` and ``get_row``, what their StableDataset calls."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def __len__(self) -> int:
        return int(self.backend.num_rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return dict(self.backend.get_row(int(index)))


class Peaks:
    """Peak RSS of this process and peak RSS / USS of its child processes, sampled by a thread."""

    def __init__(self, every: float = 0.02) -> None:
        import psutil

        self._psutil = psutil
        self._every = every
        self._stop = threading.Event()
        self.main_rss = 0
        self.worker_rss = 0
        self.worker_uss = 0
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Peaks:
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    def _sample(self) -> None:
        me = self._psutil.Process()
        while not self._stop.is_set():
            self.main_rss = max(self.main_rss, me.memory_info().rss)
            for child in me.children(recursive=True):
                try:
                    full = child.memory_full_info()
                except (self._psutil.Error, OSError):
                    continue
                self.worker_rss = max(self.worker_rss, full.rss)
                self.worker_uss = max(self.worker_uss, full.uss)
            self._stop.wait(self._every)


def _loader(dataset: Any, args: argparse.Namespace, seed: int, worker_init: Callable[[int], None] | None) -> Any:
    import torch
    from torch.utils.data import DataLoader

    return DataLoader(
        dataset,
        batch_size=args.batch_size,
        num_workers=args.workers,
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
        worker_init_fn=worker_init,
    )


def _epoch(contender: dict[str, Any], args: argparse.Namespace, seed: int) -> tuple[float, int]:
    """One epoch; (seconds, windows)."""
    started = time.perf_counter()
    count = 0
    for batch in _loader(contender["dataset"], args, seed, contender["worker_init"]):
        count += len(batch[contender["frames"]])
    return time.perf_counter() - started, count


def _check_epoch(name: str, contender: dict[str, Any], args: argparse.Namespace) -> list[tuple[int, int, list[int]]]:
    """A first epoch that checks every frame of every window; returns the windows (video, start, indices), sorted."""
    from stable_explore.testing.videos import frame_index

    windows: list[tuple[int, int, list[int]]] = []
    wrong = 0
    for batch in _loader(contender["dataset"], args, 0, contender["worker_init"]):
        frames = batch[contender["frames"]].numpy()
        videos = batch[contender["video"]].tolist()
        starts = batch["start_frame"].tolist()
        spans = batch["frame_indices"]  # ours: a B x T tensor; theirs: T tensors of B (lists collate so)
        rows = spans.tolist() if hasattr(spans, "tolist") else [list(row) for row in zip(*spans, strict=True)]
        for window, video, start, span in zip(frames, videos, starts, rows, strict=True):
            indices = [int(f) for f in span]
            seen = [frame_index(frame) for frame in window]
            wrong += int(seen != [int(video) * args.frames + f for f in indices])
            windows.append((int(video), int(start), indices))
    if wrong:
        raise SystemExit(f"{name}: {wrong} of {len(windows)} windows hold frames other than their indices say")
    return sorted(windows)


def _rule_windows(args: argparse.Namespace) -> list[tuple[int, int, list[int]]]:
    """The windows stable-datasets' rule gives, written out from its documented parameters."""
    stride = args.skip + 1
    span = (args.window - 1) * stride + 1
    out = []
    for video in range(args.videos):
        for start in range(0, args.frames - span + 1, args.hop):
            out.append((video, start, [start + j * stride for j in range(args.window)]))
    return out


def _frame_difference(ours: Path, theirs: Path, backend_class: Any, args: argparse.Namespace) -> float:
    """The largest mean absolute difference (grey levels) between a frame of one folder and the same of the other."""
    kwargs = {"window_length": args.window, "frame_skip": args.skip, "hop_size": args.hop}
    a, b = backend_class(uri=ours, **kwargs), backend_class(uri=theirs, **kwargs)
    assert a.num_rows == b.num_rows, (a.num_rows, b.num_rows)
    worst = 0.0
    for i in range(0, a.num_rows, max(1, a.num_rows // 64)):
        left, right = a.get_row(i), b.get_row(i)
        assert (left["video_idx"], left["frame_indices"]) == (right["video_idx"], right["frame_indices"])
        diff = np.abs(left["video"].astype(np.int16) - right["video"].astype(np.int16)).mean(axis=(1, 2, 3))
        worst = max(worst, float(diff.max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--videos", type=int, default=32)
    parser.add_argument("--frames", type=int, default=96)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--skip", type=int, default=1)
    parser.add_argument("--hop", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repo", default=os.environ.get("STABLE_DATASETS_REPO", DEFAULT_REPO))
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--cv2", help="a folder holding OpenCV (pip install --target), for their backend")
    args = parser.parse_args()
    if args.cv2:
        sys.path.append(args.cv2)
    # The setup writes and reads Lance in this process, so pylance warns at each fork of a worker; the workers
    # open their own datasets (ours reads Arrow shards, their backend's worker_init drops its open datasets).
    warnings.filterwarnings("ignore", message="lance is not fork-safe")
    work = Path(tempfile.mkdtemp(prefix="bench-video-"))
    try:
        _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, work: Path) -> None:
    import av
    import torch

    import stable_explore as se
    from stable_explore.schema.video_codec import encode_frames

    try:
        import cv2
    except ImportError:
        cv2 = None
    commit = _git(args.repo, "rev-parse", args.rev).strip()
    print(
        f"python {sys.version.split()[0]}, torch {torch.__version__}, PyAV {av.__version__}, "
        f"OpenCV {getattr(cv2, '__version__', 'not installed')}, {platform.machine()}, {os.cpu_count()} cpus; "
        f"stable-datasets at {commit[:12]}"
    )
    n, t, size = args.videos, args.frames, args.size
    print(
        f"{n} videos x {t} frames at {size}x{size}; windows of {args.window} frames, frame_skip {args.skip}, "
        f"hop {args.hop}; DataLoader batch_size {args.batch_size}, num_workers {args.workers}, shuffled"
    )

    rule("Setup (once)")
    started = time.perf_counter()
    encoded: dict[str, list[bytes]] = {"h264": [], "vp9": []}
    files = work / "videos"
    files.mkdir()
    for v in range(n):
        frames = _video_frames(v, t, size)
        encoded["h264"].append(encode_frames(frames, fps=24, codec="libx264", container="mp4"))
        encoded["vp9"].append(encode_frames(frames, fps=24, codec="libvpx-vp9", container="webm"))
        (files / f"clip-{v:03d}.mp4").write_bytes(encoded["h264"][v])
    sizes = {codec: sum(map(len, blobs)) for codec, blobs in encoded.items()}
    took = time.perf_counter() - started
    print(f"encoded in {took:.1f} s: h264/mp4 {mb(sizes['h264'])}, vp9/webm {mb(sizes['vp9'])}")

    features = se.Features(video=se.Video(embed=True), label=se.ClassLabel(names=NAMES))
    datasets = {}
    for codec, blobs in encoded.items():

        def rows(blobs: list[bytes] = blobs) -> Iterator[tuple[str, dict[str, Any]]]:
            for v, data in enumerate(blobs):
                yield f"clip-{v:03d}", {"video": data, "label": v % 2}

        datasets[codec] = se.build(rows, features, name=f"clips-{codec}", home=work / "home", progress=False)

    started = time.perf_counter()
    ours_folder = datasets["h264"].export(work / "ours-frames", layout="stable-datasets-video")
    print(f"ds.export(layout='stable-datasets-video'): {time.perf_counter() - started:.1f} s")

    _their_package(args.repo, args.rev, work / "src")
    backend_module = importlib.import_module("stable_datasets.backends.lance_video_frames")
    backend_class = backend_module.LanceVideoFramesBackend
    folder = ours_folder
    their_folder: Path | None = None
    if cv2 is not None:
        cache = importlib.import_module("stable_datasets.cache")
        schema = importlib.import_module("stable_datasets.schema")
        theirs = schema.Features({"video": schema.Video(storage="frames"), "label": schema.Value("int64")})

        def their_rows() -> Iterator[tuple[str, dict[str, Any]]]:
            for v in range(n):
                yield f"clip-{v:03d}", {"video": str(files / f"clip-{v:03d}.mp4"), "label": v % 2}

        started = time.perf_counter()
        their_folder = work / "their-frames"
        cache.write_lance_video_frames_cache(their_rows(), theirs, their_folder, video_column="video", workers=1)
        print(f"their write_lance_video_frames_cache (OpenCV, 1 worker): {time.perf_counter() - started:.1f} s")
        folder = their_folder
        records = json.loads((their_folder / "_metadata.json").read_text())["videos"]
        assert [(r["id"], r["T"], r["H"], r["W"]) for r in records] == [(v, t, size, size) for v in range(n)]
    else:
        print("OpenCV is not installed (pass --cv2 DIR): their writer and backend are not measured")

    started = time.perf_counter()
    frame_rows = se.load(folder, home=work / "home")
    print(
        f"se.load of the {'their writer' if their_folder else 'our export'}'s folder (a first load copies it in): "
        f"{time.perf_counter() - started:.1f} s, {len(frame_rows):,} frame rows"
    )

    clip_args = {"window_length": args.window, "frame_skip": args.skip, "hop_size": args.hop}
    contenders: dict[str, dict[str, Any]] = {
        "ours: clips, Video h264/mp4": {
            "dataset": datasets["h264"].clips(**clip_args),
            "worker_init": None,
            "frames": "frames",
            "video": "video_row",
        },
        "ours: clips, Video vp9/webm": {
            "dataset": datasets["vp9"].clips(**clip_args),
            "worker_init": None,
            "frames": "frames",
            "video": "video_row",
        },
        "ours: clips, se.load(frames folder)": {
            "dataset": frame_rows.clips(**clip_args, video="video_id", frame="frame_idx"),
            "worker_init": None,
            "frames": "frames",
            "video": "video_id",
        },
    }
    theirs_name = "theirs: LanceVideoFramesBackend"
    if cv2 is not None:
        contenders[theirs_name] = {
            "dataset": TheirWindows(backend_class(uri=folder, **clip_args)),
            "worker_init": backend_class.worker_init,
            "frames": "video",
            "video": "video_idx",
        }

    rule("Checked: every window, every frame (a first epoch each)")
    expected = _rule_windows(args)
    for name, contender in contenders.items():
        started = time.perf_counter()
        got = _check_epoch(name, contender, args)
        if got != expected:
            raise SystemExit(f"{name}: its windows are not the rule's ({len(got)} against {len(expected)})")
        print(f"{name}: {len(got)} windows, each frame the one it names ({time.perf_counter() - started:.1f} s)")
    if their_folder is not None:
        ours_windows = _check_epoch(
            "theirs on our export",
            {**contenders[theirs_name], "dataset": TheirWindows(backend_class(uri=ours_folder, **clip_args))},
            args,
        )
        assert ours_windows == expected
        worst = _frame_difference(ours_folder, their_folder, backend_class, args)
        print(
            f"their backend on our export: the same {len(expected)} windows, each frame the one it names; "
            f"frames differ from their writer's by at most {worst:.2f} grey levels (mean over a frame)"
        )

    rule(f"Windows per second, {args.rounds} rounds (rotated order), a new DataLoader each epoch")
    names = list(contenders)
    rates: dict[str, list[float]] = {name: [] for name in names}
    peaks: dict[str, Peaks] = {name: Peaks() for name in names}
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            with peaks[name]:
                seconds, count = _epoch(contenders[name], args, seed=r + 1)
            assert count == len(expected)
            rates[name].append(count / seconds)
    width = max(map(len, names))
    for name in names:
        runs = rates[name]
        print(
            f"{name:<{width}}  {statistics.median(runs):8.1f} windows/s  (range {min(runs):.1f}-{max(runs):.1f}; "
            f"runs {', '.join(f'{x:.1f}' for x in runs)})"
        )
    if theirs_name in rates:
        print()
        for name in names[:-1]:
            ratios = [a / b for a, b in zip(rates[name], rates[theirs_name], strict=True)]
            print(
                f"ratio {name} / theirs: median {statistics.median(ratios):.2f} "
                f"(paired by round, range {min(ratios):.2f}-{max(ratios):.2f})"
            )

    rule("Peak memory during the timed epochs (psutil, sampled every 20 ms)")
    for name in names:
        p = peaks[name]
        print(
            f"{name:<{width}}  main RSS {mb(p.main_rss):>9}   worker RSS {mb(p.worker_rss):>9}   "
            f"worker USS {mb(p.worker_uss):>9}"
        )


if __name__ == "__main__":
    main()
