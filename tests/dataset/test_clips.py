"""ds.clips: frame windows of videos (a Video column, or an Image per frame), checked frame by frame."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

import stable_explore as se
from stable_explore import Features, Image, Value, Video, VideoDecodeError
from stable_explore.dataset._clip_windows import plan_windows
from stable_explore.testing.videos import CODECS, frame_index, indexed_frames, indexed_video, write_indexed_video

if TYPE_CHECKING:
    from stable_explore.dataset._clips import ClipView

pytest.importorskip("av")

LENGTHS = [17, 5, 30, 9]
RULES = [  # window_length, frame_skip, hop_size, min_video_frames
    (4, 0, 1, None),
    (3, 2, 5, None),
    (5, 1, 3, 20),
    (1, 0, 7, None),
    (6, 0, 6, 6),
]
FEATURES = Features(video=Video(), label=Value("string"))


def _videos(tmp_path: Path, codec: str, container: str, suffix: str) -> se.CachedDataset:
    """Four videos, two as files (paths) and two as bytes, each frame carrying its index."""
    rows = []
    for i, count in enumerate(LENGTHS):
        if i % 2:
            data: object = indexed_video(count, codec=codec, container=container)
        else:
            data = write_indexed_video(tmp_path / "files" / f"v{i}{suffix}", count, codec=codec, container=container)
        rows.append((f"clip-{i}", {"video": data, "label": f"video {i}"}))
    return se.build(rows, FEATURES, name="videos", home=tmp_path / "home", progress=False)


def _check_every_window(
    clips: ClipView,
    lengths: list[int],
    rule: tuple,
    label_of: tuple[str, Callable[[int], Any]],
    *,
    check_row: bool = True,
) -> None:
    window_length, frame_skip, hop_size, least = rule
    plan = plan_windows(
        lengths, window_length=window_length, frame_skip=frame_skip, hop_size=hop_size, min_video_frames=least
    )
    assert len(clips) == len(plan)
    for i, window in enumerate(clips):
        expected = plan.frame_indices(i).tolist()
        assert window["frames"].dtype == np.uint8
        assert window["frames"].shape[0] == window_length
        assert [frame_index(frame) for frame in window["frames"]] == expected, (i, rule)
        assert window["frame_indices"].tolist() == expected
        assert window["start_frame"] == int(plan.start[i])
        if check_row:
            assert window["video_row"] == int(plan.video[i])
        assert window[label_of[0]] == label_of[1](int(plan.video[i]))


@pytest.mark.parametrize(("codec", "container", "suffix"), CODECS)
def test_every_window_of_every_codec_has_the_frames_the_rule_says(
    tmp_path: Path, codec: str, container: str, suffix: str
) -> None:
    ds = _videos(tmp_path, codec, container, suffix)
    for rule in RULES:
        window_length, frame_skip, hop_size, least = rule
        clips = ds.clips(window_length=window_length, frame_skip=frame_skip, hop_size=hop_size, min_video_frames=least)
        _check_every_window(clips, LENGTHS, rule, ("label", lambda v: f"video {v}"))
    one = ds.clips(window_length=3, hop_size=4)
    assert [frame_index(f) for f in one[11]["frames"]] == [24, 25, 26], "one window read alone, from its key frame"
    assert "video" not in one[0], "the video column itself is not repeated in each window"


def test_frame_rows_grouped_by_video_and_ordered_by_frame_index(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    lengths = {"b": 11, "a": 4, "c": 8}
    rows = [
        {"image": frame, "video_id": name, "frame_idx": i, "note": "x"}
        for name, count in lengths.items()
        for i, frame in enumerate(indexed_frames(count, height=32, width=64))
    ]
    shuffled = [rows[i] for i in rng.permutation(len(rows))]
    features = Features(image=Image(), video_id=Value("string"), frame_idx=Value("int64"), note=Value("string"))
    ds = se.build(shuffled, features, name="frames", home=tmp_path, progress=False)
    first_seen = list(dict.fromkeys(row["video_id"] for row in shuffled))
    counts = [lengths[name] for name in first_seen]
    for rule in [(3, 0, 2, None), (2, 3, 1, 9)]:
        window_length, frame_skip, hop_size, least = rule
        clips = ds.clips(window_length=window_length, frame_skip=frame_skip, hop_size=hop_size, min_video_frames=least)
        _check_every_window(clips, counts, rule, ("video_id", lambda v: first_seen[v]), check_row=False)
        plan = plan_windows(counts, window_length=window_length, frame_skip=frame_skip, hop_size=hop_size,
                            min_video_frames=least)  # fmt: skip
        for i in range(len(clips)):  # video_row is the video's first frame's row
            row = ds[clips[i]["video_row"]]
            assert (row["video_id"], row["frame_idx"]) == (first_seen[int(plan.video[i])], 0)
    renamed = ds.rename_columns({"video_id": "movie", "frame_idx": "t"})
    named = renamed.clips(window_length=2, hop_size=3, column="image", video="movie", frame="t")
    assert len(named) == len(ds.clips(window_length=2, hop_size=3))
    assert [frame_index(f) for f in named[0]["frames"]] == [0, 1]


def test_clips_is_a_view_that_slices_shuffles_and_splits(tmp_path: Path) -> None:
    ds = _videos(tmp_path, "mpeg4", "mp4", ".mp4")
    clips = ds.clips(window_length=2, hop_size=3)
    everything = [(w["video_row"], w["start_frame"]) for w in clips]
    assert len(everything) == len(set(everything)) == len(clips)
    assert [(w["video_row"], w["start_frame"]) for w in clips[2:5]] == everything[2:5]
    assert [(w["video_row"], w["start_frame"]) for w in clips[[4, 0, -1]]] == [everything[i] for i in (4, 0, -1)]
    shuffled = clips.shuffle(seed=7)
    order = [(w["video_row"], w["start_frame"]) for w in shuffled]
    assert sorted(order) == sorted(everything)
    assert order != everything
    assert order == [(w["video_row"], w["start_frame"]) for w in clips.shuffle(seed=7)]
    parts = [clips.shard(3, i) for i in range(3)]
    assert [len(p) for p in parts] in ([len(clips) // 3 + (i < len(clips) % 3) for i in range(3)],)
    assert [key for p in parts for key in ((w["video_row"], w["start_frame"]) for w in p)] == everything
    strided = [(w["video_row"], w["start_frame"]) for w in clips.shard(2, 1, contiguous=False)]
    assert strided == everything[1::2]
    assert len(clips.split_by_node(0, 2)) + len(clips.split_by_node(1, 2)) == len(clips)
    assert ds[1:].clips(window_length=2, hop_size=3)[0]["video_row"] == 0, "rows of the view it was cut from"
    with pytest.raises(se.RowIndexError):
        clips[len(clips)]


def test_a_pickled_clip_view_gives_the_same_windows_without_its_decoders(tmp_path: Path) -> None:
    import pickle

    clips = _videos(tmp_path, "mpeg4", "mp4", ".mp4").clips(window_length=2, hop_size=3).shuffle(seed=3)[1:6]
    first = clips[0]
    state = clips.__getstate__()
    assert sorted(state) == ["ds", "plan", "source", "windows"]  # a spawned DataLoader worker's copy: no decoder
    again = pickle.loads(pickle.dumps(clips))
    assert repr(again) == repr(clips)
    assert [(w["video_row"], w["start_frame"]) for w in again] == [(w["video_row"], w["start_frame"]) for w in clips]
    assert np.array_equal(again[0]["frames"], first["frames"])


def test_a_dataloader_with_two_workers_gives_every_window_once(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    ds = _videos(tmp_path, "libx264", "mp4", ".mp4")
    clips = ds.clips(window_length=3, frame_skip=1, hop_size=2)
    expected = sorted((w["video_row"], w["start_frame"]) for w in clips)
    loader = DataLoader(clips.shuffle(seed=1), batch_size=4, num_workers=2)
    seen = []
    for batch in loader:
        assert batch["frames"].dtype == torch.uint8
        assert tuple(batch["frames"].shape[1:]) == (3, 48, 64, 3)
        for frames, indices, row, start in zip(
            batch["frames"], batch["frame_indices"], batch["video_row"], batch["start_frame"], strict=True
        ):
            assert [frame_index(f) for f in frames.numpy()] == indices.tolist()
            seen.append((int(row), int(start)))
    assert sorted(seen) == expected
    streamed = clips.to_iterable(shuffle=True, seed=2)
    rows = [(int(r), int(s)) for b in DataLoader(streamed, batch_size=3, num_workers=2)
            for r, s in zip(b["video_row"], b["start_frame"], strict=True)]  # fmt: skip
    assert sorted(rows) == expected


def test_frame_counts_are_probed_once_per_video(tmp_path: Path) -> None:
    ds = _videos(tmp_path, "mpeg4", "mp4", ".mp4")
    first = ds.clips(window_length=2)
    for path in (tmp_path / "files").iterdir():
        path.unlink()  # a second probe of a path video would fail now
    again = ds.clips(window_length=5, hop_size=2)
    assert len(again) == len(plan_windows(LENGTHS, window_length=5, hop_size=2))
    assert len(first) == sum(n - 1 for n in LENGTHS)
    assert [frame_index(f) for f in again[len(again) - 1]["frames"]] == [4, 5, 6, 7, 8], "bytes still decode"


def test_a_corrupt_or_truncated_video_names_the_row_key_and_column(tmp_path: Path) -> None:
    good = indexed_video(12, codec="libvpx-vp9", container="webm")
    rows = [("fine", {"video": good, "label": "a"}), ("noise", {"video": b"\x00garbage" * 50, "label": "b"})]
    ds = se.build(rows, FEATURES, name="bad", home=tmp_path, progress=False)
    with pytest.raises(VideoDecodeError, match=r"row 1.*key 'noise'.*field 'video'") as caught:
        ds.clips(window_length=2)
    assert (caught.value.index, caught.value.key, caught.value.field) == (1, "noise", "video")

    mp4 = indexed_video(40, codec="libx264", container="mp4")
    cut = ("cut", {"video": mp4[: len(mp4) * 2 // 3], "label": "c"})  # mp4's index is at its end: this one has none
    broken = se.build([rows[0], cut], FEATURES, name="cut", home=tmp_path, progress=False)
    with pytest.raises(VideoDecodeError, match=r"row 1.*key 'cut'.*field 'video'"):
        broken.clips(window_length=2)

    path = write_indexed_video(tmp_path / "files" / "long.mp4", 40)
    on_disk = se.build([("long", {"video": path, "label": "e"})], FEATURES, name="e", home=tmp_path, progress=False)
    windows = on_disk.clips(window_length=4, hop_size=4)  # probed: 40 frames
    write_indexed_video(path, 6)  # the file is replaced by a shorter one after the plan was made
    with pytest.raises(VideoDecodeError, match=r"row 0.*key 'long'.*field 'video'.*6 frames; frame 8 was asked for"):
        windows[2]
    data = indexed_video(40)
    path.write_bytes(data[: len(data) // 2])  # cut short
    with pytest.raises(VideoDecodeError, match=r"row 0.*key 'long'.*field 'video'"):
        windows[len(windows) - 1]


def test_a_file_object_and_a_missing_video_give_windows_and_none(tmp_path: Path) -> None:
    rows = [{"video": io.BytesIO(indexed_video(6)), "label": "f"}, {"video": None, "label": "none"}]
    ds = se.build(rows, FEATURES, name="f", home=tmp_path, progress=False)
    clips = ds.clips(window_length=3, hop_size=3)
    assert [(w["label"], w["frame_indices"].tolist()) for w in clips] == [("f", [0, 1, 2]), ("f", [3, 4, 5])]


def test_clips_names_what_it_cannot_cut(tmp_path: Path) -> None:
    ds = se.build([{"x": 1}], Features(x=Value("int64")), name="n", home=tmp_path, progress=False)
    with pytest.raises(se.SchemaError, match="no Video column, and no frame-level columns"):
        ds.clips(window_length=2)
    videos = _videos(tmp_path, "mpeg4", "mp4", ".mp4")
    with pytest.raises(se.SchemaError, match="column 'label' is Value"):
        videos.clips(window_length=2, column="label")
    with pytest.raises(se.InvalidOptionError, match="window_length must be a whole number >= 1"):
        videos.clips(window_length=0)


def test_a_renamed_video_column_is_not_taken_for_the_one_it_replaces(tmp_path: Path) -> None:
    features = Features(a=Video(), b=Video())
    ds = se.build([{"a": indexed_video(10), "b": indexed_video(5)}], features, name="two", home=tmp_path,
                  progress=False)  # fmt: skip
    with pytest.raises(se.SchemaError, match="several Video columns"):
        ds.clips(window_length=2)
    assert len(ds.clips(window_length=2, column="a")) == 9
    swapped = ds.remove_columns(["a"]).rename_column("b", "a")
    assert len(swapped.clips(window_length=2)) == 4, "b's 5 frames, not a's 10 kept for 'a'"


def _frame_rows(tmp_path: Path, frames: list[Any], *, name: str = "frames") -> se.CachedDataset:
    rows = [{"image": frame, "video_id": "v", "frame_idx": i} for i, frame in enumerate(frames)]
    features = Features(image=Image(), video_id=Value("string"), frame_idx=Value("int64"))
    return se.build(rows, features, name=name, home=tmp_path, progress=False)


def test_frame_windows_decode_each_frame_once_and_give_rgb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.schema import image_codec

    frames = indexed_frames(9, height=16, width=24)
    grey = [frame[:, :, 0] for frame in frames[:4]]  # grey frames come back as RGB, the grey repeated
    ds = _frame_rows(tmp_path, grey + list(frames[4:]))
    decoded: list[int] = []
    rgb_pixels = image_codec.rgb_pixels

    def counted(data: Any, max_pixels: int | None = None) -> np.ndarray:
        decoded.append(1)
        return rgb_pixels(data, max_pixels)

    monkeypatch.setattr(image_codec, "rgb_pixels", counted)
    clips = ds.clips(window_length=4, hop_size=1)
    windows = clips[0:6]
    got = windows.__getitems__(range(6))  # six overlapping windows over frames 0-8
    assert len(decoded) == 9, "each frame decoded once for the batch"
    assert all(window["frames"].shape == (4, 16, 24, 3) for window in got)
    assert np.array_equal(got[0]["frames"][:, :, :, 1], np.stack(grey)), "grey repeated on every channel"
    assert [frame_index(f) for f in got[5]["frames"]] == [5, 6, 7, 8]
    assert all(window["frames"].flags.writeable for window in got)


def test_frame_windows_carry_the_columns_constant_within_their_video(tmp_path: Path) -> None:
    frames = indexed_frames(10, height=8, width=8)
    rows = [
        {
            "image": frames[i],
            "video_id": video,
            "frame_idx": i % 5,
            "label": f"class {video}",
            "fps": 25.0 if video == "a" else None,
            "box": float(i),  # changes from frame to frame: no window's as a whole
        }
        for i, video in enumerate("aaaaabbbbb")
    ]
    features = Features(
        image=Image(), video_id=Value("string"), frame_idx=Value("int64"), label=Value("string"),
        fps=Value("float64"), box=Value("float64"),
    )  # fmt: skip
    ds = se.build(rows, features, name="frames", home=tmp_path, progress=False)
    windows = list(ds.clips(window_length=3, hop_size=2))
    assert [(w["video_id"], w["label"], w["fps"]) for w in windows] == [
        ("a", "class a", 25.0),
        ("a", "class a", 25.0),
        ("b", "class b", None),
        ("b", "class b", None),
    ]
    assert all("box" not in w and "image" not in w and "frame_idx" not in w for w in windows)


def test_windows_taken_in_order_decode_each_frame_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.schema import video_codec

    rows = [{"video": indexed_video(40, codec="libx264"), "label": "a"}]  # one key frame: each window seeked from 0
    ds = se.build(rows, FEATURES, name="long", home=tmp_path, progress=False)
    clips = ds.clips(window_length=4, frame_skip=1, hop_size=3)
    decoded: list[int] = []
    decoded_frames = video_codec.decoded_frames

    def counted(source: Any, indices: Any) -> Any:
        for item in decoded_frames(source, indices):
            decoded.append(item[0])
            yield item

    monkeypatch.setattr(video_codec, "decoded_frames", counted)
    windows = [clips[i] for i in range(len(clips))]  # one at a time, in order, as a worker's stream reads them
    assert all([frame_index(f) for f in w["frames"]] == w["frame_indices"].tolist() for w in windows)
    assert sorted(decoded) == sorted(set(decoded)), "no frame decoded twice"
    assert [frame_index(f) for f in clips[2]["frames"]] == [6, 8, 10, 12], "a window behind the decoder seeks back"


def test_shuffled_windows_leave_no_decoder_or_decoded_frame_behind(tmp_path: Path) -> None:
    from stable_explore.dataset._video_cursor import open_decoders

    rows = [{"video": indexed_video(40, codec="libx264"), "label": "a"} for _ in range(3)]
    ds = se.build(rows, FEATURES, name="shuffled", home=tmp_path, progress=False)
    clips = ds.clips(window_length=4, frame_skip=1, hop_size=3)
    per_video = len(clips) // 3
    order = [5, per_video + 9, 2 * per_video + 1, 11, per_video + 3, 7]  # none follows the last of its video
    for batch in (order[:3], order[3:]):
        got = clips.__getitems__(batch)
        assert [w["start_frame"] for w in got] == [int(clips[i]["start_frame"]) for i in batch]
        # kept decoders (or their decoded frames) made every other video's decoding about twice as slow
        assert open_decoders() == (0, 0), "windows out of order each decode their span and let go of it"
    clips.__getitems__([0, 1])  # two windows in order of one video: its decoder stays for the next
    assert open_decoders()[0] == 1
