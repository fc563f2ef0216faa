"""Benchmark: the shard browser's first page of 48 videos, kernel side (what the page waits for).

48 video files of ``--seconds`` seconds at 24 fps and ``--size`` (default 640x360), half h264 in mp4 and
half vp9 in webm (4 distinct encodes of each, copied to 48 paths, so the encoding stays short; the
decoder sees 48 files). A ``Video()`` column of their paths is cached, and for each run a browser is opened
with nothing kept (a fresh thumbnail cache and ``storage.kept.forget()``, as in a new kernel):

- cold first page: ``page_message()`` (48 posters decoded, each video probed once), then the derived
  columns (duration, fps, width, height, frames: their ranges and histograms, read after the first page);
- warm page: the same page again (posters from the cache);
- hover frames: ``video_frames(row)`` (8 evenly spaced frames, 128 px) per row, median;
- the player's bytes: ``video_media(row)``, median.

In a real JupyterLab, from running the cell to 48 posters painted: ``tests/widgets/test_browser_video_lab.py``
prints it (``-s``).

Run::

    python benchmarks/bench_browser_video.py            # 640x360, 10 s each
    python benchmarks/bench_browser_video.py --quick    # 320x180, 4 s each
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller and shorter videos")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", default="640x360", help="WIDTHxHEIGHT")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.size = 4.0, "320x180"
    width, height = (int(v) for v in args.size.split("x"))
    frames = round(args.seconds * 24)

    import stable_explore as se
    from stable_explore.storage.kept import forget
    from stable_explore.testing.videos import write_indexed_video
    from stable_explore.widgets import ShardBrowser
    from stable_explore.widgets._thumbs import ThumbnailCache

    root = Path(tempfile.mkdtemp(prefix="bench-video-"))
    try:
        started = time.perf_counter()
        kinds = [("libx264", "mp4", ".mp4"), ("libvpx-vp9", "webm", ".webm")]
        originals = [
            write_indexed_video(
                root / f"src{k}{n}{suffix}", frames, codec=codec, container=container, width=width, height=height,
                start=n * 1000,
            )
            for k, (codec, container, suffix) in enumerate(kinds)
            for n in range(4)
        ]  # fmt: skip
        rows = []
        for i in range(48):
            source = originals[(i % 2) * 4 + (i // 2) % 4]
            path = root / "videos" / f"clip{i:02d}{source.suffix}"
            path.parent.mkdir(exist_ok=True)
            shutil.copyfile(source, path)
            rows.append({"video": str(path), "label": i % 3})
        mb = sum(p.stat().st_size for p in (root / "videos").iterdir()) / 1e6
        print(f"48 videos of {args.seconds:g} s at {width}x{height}, 24 fps (h264/mp4 and vp9/webm): {mb:.1f} MB, "
              f"made in {time.perf_counter() - started:.1f} s")  # fmt: skip
        features = se.Features(video=se.Video(), label=se.ClassLabel(names=["a", "b", "c"]))
        ds = se.build(rows, features, name="videos", home=root / "home", progress=False)

        cold, columns, warm = [], [], []
        for _ in range(args.runs):
            forget()
            browser = ShardBrowser(ds, page_size=48, thumb_size=128, cache=ThumbnailCache(), prefetch=False)
            t0 = time.perf_counter()
            _, buffers = browser.page_message()
            cold.append(time.perf_counter() - t0)
            assert len(buffers) == 48, len(buffers)
            t0 = time.perf_counter()
            browser._count_labels()  # the ranges and histograms of the derived columns, read after the page
            columns.append(time.perf_counter() - t0)
            assert "min" in next(f for f in browser.fields if f["name"] == "video.duration")
            t0 = time.perf_counter()
            browser.page_message()
            warm.append(time.perf_counter() - t0)
        hover, media = [], []
        for row in range(0, 48, 6):
            t0 = time.perf_counter()
            browser.video_frames(row, 8, 128)
            hover.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            browser.video_media(row)
            media.append(time.perf_counter() - t0)
        print(
            f"cold first page (48 posters, each video probed): median {statistics.median(cold):.2f} s "
            f"(best {min(cold):.2f} s, {args.runs} runs)"
        )
        print(f"derived columns after it (probes kept): median {statistics.median(columns) * 1000:.1f} ms")
        print(f"warm page (posters cached): median {statistics.median(warm) * 1000:.1f} ms")
        print(f"hover frames (8 of a video, 128 px): median {statistics.median(hover) * 1000:.0f} ms a video")
        print(f"player bytes (video_media): median {statistics.median(media) * 1000:.1f} ms a video")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
