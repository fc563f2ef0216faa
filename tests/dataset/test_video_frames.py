"""se.load on stable-datasets' ``lance-video-frames`` cache: frame rows, its windows frame by frame, clear refusals.

The caches are laid out in plain code from the layout's documented fields (tests/dataset/video_layout.py),
and the windows compared with its backend's reading rule restated there.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import CacheCorruptionError, NotACacheError
from stable_explore.testing.videos import frame_index, indexed_frames
from tests.dataset.video_layout import decode, their_windows, webp, write_layout

pytest.importorskip("lance", reason="the lance extra: pip install 'stable-explore[lance]'")

LENGTHS = (7, 3, 12, 1)


def _videos() -> list[dict]:
    labels = ["walk", "run", "jump", "sit"]
    return [
        {
            "frames": indexed_frames(count, height=32, width=64, start=0),
            "path": f"/clips/{labels[i]}.mp4",
            "metadata": {"label": labels[i], "take": i * 10, "score": 0.5 + i},
        }
        for i, count in enumerate(LENGTHS)
    ]


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return write_layout(tmp_path / "frames", _videos())


def test_load_gives_one_row_per_frame_with_the_videos_fields(cache: Path, tmp_path: Path) -> None:
    ds = se.load(cache, home=tmp_path / "home")
    assert list(ds.features) == ["video_id", "frame_idx", "frame", "video_path", "label", "take", "score"]
    assert isinstance(ds.features["frame"], se.Image)
    assert len(ds) == sum(LENGTHS)
    assert ds.keys()[:8] == ["0/0", "0/1", "0/2", "0/3", "0/4", "0/5", "0/6", "1/0"]
    row = ds.with_format("python")[9]
    assert (row["video_id"], row["frame_idx"], row["video_path"], row["label"], row["take"]) == (
        1,
        2,
        "/clips/run.mp4",
        "run",
        10,
    )
    # the WebP bytes as stored, not re-encoded
    assert row["frame"] == webp(indexed_frames(3, height=32, width=64)[2])
    assert frame_index(ds.with_format("numpy")[9]["frame"]) == 2
    # opened again: the same rows, from the copy made the first time
    again = se.load(cache, home=tmp_path / "home")
    assert again.cache_dir == ds.cache_dir
    assert again.keys() == ds.keys()


@pytest.mark.parametrize(
    ("window_length", "frame_skip", "hop_size", "min_video_frames"),
    [(1, 0, 1, None), (3, 0, 2, None), (3, 1, 1, None), (2, 2, 3, 8), (4, 0, 1, 4)],
)
def test_windows_equal_their_backend_frame_by_frame(
    cache: Path, tmp_path: Path, window_length: int, frame_skip: int, hop_size: int, min_video_frames: int | None
) -> None:
    ds = se.load(cache, home=tmp_path / "home")
    clips = ds.clips(
        window_length=window_length,
        frame_skip=frame_skip,
        hop_size=hop_size,
        min_video_frames=min_video_frames,
        video="video_id",
        frame="frame_idx",
    )
    theirs = their_windows(
        cache, window_length=window_length, frame_skip=frame_skip, hop_size=hop_size, min_video_frames=min_video_frames
    )
    assert len(clips) == len(theirs) > 0
    for clip, sample in zip(clips, theirs, strict=True):
        assert (clip["start_frame"], clip["frame_indices"].tolist()) == (sample["start_frame"], sample["frame_indices"])
        video = ds.with_format("python")[clip["video_row"]]
        assert (video["video_path"], video["label"], video["take"]) == (
            sample["filename"],
            sample["label"],
            sample["take"],
        )
        assert np.array_equal(clip["frames"], sample["video"])
        assert [frame_index(frame) for frame in clip["frames"]] == sample["frame_indices"]


def test_ids_with_gaps_from_skipped_videos_keep_their_ids(tmp_path: Path) -> None:
    videos = _videos()
    for video, video_id in zip(videos, [0, 2, 3, 7], strict=True):  # its writer skipped videos 1, 4, 5 and 6
        video["id"] = video_id
    folder = write_layout(tmp_path / "frames", videos)
    ds = se.load(folder, home=tmp_path / "home")
    assert sorted(set(ds.arrow_column("video_id").to_pylist())) == [0, 2, 3, 7]
    assert ds.keys()[7:10] == ["2/0", "2/1", "2/2"]
    samples = their_windows(folder, window_length=2)
    assert [s["video_idx"] for s in samples].count(1) == 2  # its video_idx is the place in the list, not the id
    row = ds.with_format("numpy")[ds.keys().index("7/0")]
    assert (row["video_path"], frame_index(row["frame"])) == ("/clips/sit.mp4", 0)


def test_a_lance_dataset_of_frames_without_metadata_is_refused_naming_the_file(cache: Path, tmp_path: Path) -> None:
    (cache / "_metadata.json").unlink()
    with pytest.raises(NotACacheError, match=r"_metadata\.json is missing.*start_row"):
        se.load(cache, home=tmp_path / "home")


def test_a_video_whose_T_disagrees_with_its_rows_is_refused_naming_it(tmp_path: Path) -> None:
    videos = _videos()
    videos[2]["record"] = {"T": 11}
    folder = write_layout(tmp_path / "frames", videos)
    raw = json.loads((folder / "_metadata.json").read_text())
    raw["num_rows"] = sum(v["T"] for v in raw["videos"])
    (folder / "_metadata.json").write_text(json.dumps(raw))
    with pytest.raises(
        CacheCorruptionError, match=r"video 2 \(id 2, path '/clips/jump.mp4'\): field 'T' says 11 frames.* 12 rows"
    ):
        se.load(folder, home=tmp_path / "home")


def test_a_frame_of_another_size_is_refused_naming_the_video_frame_and_fields(tmp_path: Path) -> None:
    videos = _videos()
    frames = list(videos[0]["frames"])
    frames[4] = indexed_frames(1, height=48, width=64, start=4)[0]
    videos[0]["frames"] = frames
    folder = write_layout(tmp_path / "frames", videos)
    with pytest.raises(
        CacheCorruptionError, match=r"video 0 .*'/clips/walk.mp4'\): frame 4 \(row 4\) is 48x64.*'H' and 'W'.*32x64"
    ):
        se.load(folder, home=tmp_path / "home")


def test_rows_out_of_their_place_are_refused_naming_start_row(tmp_path: Path) -> None:
    videos = _videos()
    videos[1]["record"] = {"start_row": 8}
    folder = write_layout(tmp_path / "frames", videos)
    with pytest.raises(CacheCorruptionError, match="'start_row'"):
        se.load(folder, home=tmp_path / "home")


def test_decoded_frames_are_those_written(cache: Path, tmp_path: Path) -> None:
    ds = se.load(cache, home=tmp_path / "home").with_format("python")
    blob = ds[7 + 3 + 5]["frame"]
    assert frame_index(decode(blob)) == 5


def test_metadata_fields_named_like_a_column_get_a_prefix_and_missing_ones_are_null(tmp_path: Path) -> None:
    videos = _videos()[:2]
    videos[0]["metadata"] = {"frame": "close-up", "video_id": "x1", "note": "first"}
    videos[1]["metadata"] = {"frame": "wide", "video_id": "x2"}
    folder = write_layout(tmp_path / "frames", videos)
    ds = se.load(folder, home=tmp_path / "home")
    assert list(ds.features)[4:] == ["metadata_frame", "metadata_video_id", "note"]
    row = ds.with_format("python")[len(videos[0]["frames"])]
    assert (row["video_id"], row["metadata_frame"], row["metadata_video_id"], row["note"]) == (1, "wide", "x2", None)


def test_a_metadata_field_of_two_kinds_is_refused_naming_it(tmp_path: Path) -> None:
    videos = _videos()[:2]
    videos[0]["metadata"] = {"label": "walk"}
    videos[1]["metadata"] = {"label": 3}
    folder = write_layout(tmp_path / "frames", videos)
    with pytest.raises(se.SchemaError, match="field 'label' holds"):
        se.load(folder, home=tmp_path / "home")
