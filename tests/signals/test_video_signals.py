"""Video signals on videos made in the test: stretches where they were put, copies grouped, broken files named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("av")

import stable_explore as se
from stable_explore.errors import ColumnNotFoundError
from stable_explore.schema.video_codec import encode_frames
from stable_explore.signals import near_duplicate_videos, video_hashes, video_stats


def _scene(frames: int, seed: int, size: int = 96) -> np.ndarray:
    """Smooth blobs drifting across the frame: content a perceptual hash can tell apart."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32)
    centres = rng.uniform(0, size, (5, 2))
    drift = rng.uniform(1.0, 2.0, (5, 2)) * rng.choice([-1, 1], (5, 2))
    colours = rng.uniform(60, 255, (5, 3))
    out = np.zeros((frames, size, size, 3), np.float32)
    for t in range(frames):
        for (cy, cx), (dy, dx), colour in zip(centres, drift, colours, strict=True):
            py, px = (cy + dy * t) % size, (cx + dx * t) % size  # blobs wrap around: the frame never empties
            blob = np.exp(-((x - px) ** 2 + (y - py) ** 2) / 120)
            out[t] += blob[..., None] * colour
    return np.clip(out, 0, 255).astype(np.uint8)


def _resized(frames: np.ndarray, side: int) -> np.ndarray:
    from PIL import Image as PILImage

    return np.stack([np.asarray(PILImage.fromarray(frame).resize((side, side))) for frame in frames])


def _write(folder: Path, name: str, frames: np.ndarray, **options: object) -> Path:
    path = folder / name
    path.write_bytes(encode_frames(frames, **options))  # type: ignore[arg-type]
    return path


def _dataset(tmp_path: Path, paths: list[Path | None]) -> se.CachedDataset:
    rows = [{"video": p, "name": "none" if p is None else p.name} for p in paths]
    features = se.Features(video=se.Video(), name=se.Value("string"))
    return se.build(rows, features, name="videos", home=tmp_path / "home", progress=False)


@pytest.mark.parametrize(("codec", "container", "suffix"), [("mpeg4", "mp4", ".mp4"), ("libvpx-vp9", "webm", ".webm")])
def test_black_and_frozen_stretches_are_where_they_were_put(
    tmp_path: Path, codec: str, container: str, suffix: str
) -> None:
    moving = _scene(60, seed=1)
    frames = moving.copy()
    frames[:10] = 0  # 1 s of black at 10 fps
    frames[30:45] = frames[30]  # frozen from frame 30 to 44: 1.5 s
    path = _write(tmp_path, "a" + suffix, frames, fps=10, codec=codec, container=container)
    stats = video_stats(_dataset(tmp_path, [path])).to_pylist()[0]
    assert (stats["frames"], stats["fps"], stats["duration"]) == (60, 10.0, 6.0)
    assert (stats["width"], stats["height"]) == (96, 96)
    assert stats["black_stretches"] == [{"start": 0.0, "end": 1.0}]
    # a lossy codec may leave the first repeat a little off the frame it repeats: within one frame
    [frozen] = stats["frozen_stretches"]
    assert frozen["start"] == pytest.approx(3.0, abs=0.11)
    assert frozen["end"] == pytest.approx(4.5, abs=0.11)
    assert stats["black_seconds"] == 1.0
    assert stats["frozen_seconds"] == pytest.approx(1.5, abs=0.11)
    assert stats["error"] is None


def test_short_stretches_are_not_reported(tmp_path: Path) -> None:
    frames = _scene(40, seed=2)
    frames[20:22] = 0  # 0.2 s of black
    path = _write(tmp_path, "b.mp4", frames, fps=10)
    stats = video_stats(_dataset(tmp_path, [path]), min_seconds=0.5).to_pylist()[0]
    assert stats["black_stretches"] == []
    assert video_stats(_dataset(tmp_path / "again", [path]), min_seconds=0.1).to_pylist()[0]["black_stretches"] == [
        {"start": 2.0, "end": 2.2}
    ]


def test_a_broken_video_is_named_and_the_others_are_measured(tmp_path: Path) -> None:
    good = _write(tmp_path, "good.mp4", _scene(20, seed=3), fps=10)
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video" * 100)
    table = video_stats(_dataset(tmp_path, [good, broken, None])).to_pylist()
    assert table[0]["frames"] == 20
    assert table[0]["error"] is None
    assert table[1]["frames"] is None
    assert "broken.mp4" in table[1]["error"]
    assert "not a video" in table[1]["error"]
    assert table[2]["frames"] is None
    assert table[2]["error"] is None


def test_copies_are_grouped_and_other_videos_are_not(tmp_path: Path) -> None:
    original = _scene(48, seed=4)
    paths = [
        _write(tmp_path, "original.mp4", original, fps=12),
        _write(tmp_path, "other.mp4", _scene(48, seed=5), fps=12),
        _write(tmp_path, "reencoded.webm", original, fps=12, codec="libvpx-vp9", container="webm"),
        _write(tmp_path, "smaller.mp4", _resized(original, 64), fps=12),
        _write(tmp_path, "third.mp4", _scene(30, seed=6), fps=12),
    ]
    ds = _dataset(tmp_path, paths)
    groups = near_duplicate_videos(ds).to_pylist()
    assert sorted(row["row"] for row in groups) == [0, 2, 3]
    assert {row["group"] for row in groups} == {0}
    assert all(row["distance"] <= 6 for row in groups)
    hashes = video_hashes(ds, samples=4)
    assert [len(h) for h in hashes.column("hashes").to_pylist()] == [4] * 5
    regrouped = near_duplicate_videos(ds, hashes=hashes).to_pylist()
    assert sorted(row["row"] for row in regrouped) == [0, 2, 3]


def test_a_dataset_without_videos_says_so(tmp_path: Path) -> None:
    ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="n", home=tmp_path, progress=False)
    with pytest.raises(ColumnNotFoundError, match="no Video column"):
        video_stats(ds)
