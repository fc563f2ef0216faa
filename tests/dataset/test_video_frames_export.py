"""ds.export(layout="stable-datasets-video"): the lance-video-frames layout its reader reads, and se.load of it.

Each copy is read back with stable-datasets' reading rule restated in tests/dataset/video_layout.py from the
layout's documented fields (not with our reader), and every window's frames are checked by the index each
frame carries.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore.errors import EncodingError, ExportTargetError, SchemaError, VideoDecodeError
from stable_explore.testing.videos import CODECS, frame_index, indexed_frames, indexed_video, write_indexed_video
from tests.dataset.video_layout import decode, their_windows, webp, write_layout

lance = pytest.importorskip("lance", reason="the lance extra: pip install 'stable-explore[lance]'")
pytest.importorskip("av", reason="the video extra: pip install 'stable-explore[video]'")

LAYOUT = "stable-datasets-video"
CLIPS = {"walk": 6, "run": 3, "jump": 10}
NAMES = ["slow", "fast"]


def _frame_rows(*, encode: bool = True, seed: int = 0) -> list[tuple[str, dict]]:
    rows = []
    for number, (clip, count) in enumerate(CLIPS.items()):
        for index, frame in enumerate(indexed_frames(count, height=32, width=64)):
            value = webp(frame) if encode else frame
            rows.append(
                (
                    f"{clip}-{index}",
                    {
                        "clip": clip,
                        "frame_idx": index,
                        "frame": value,
                        "speed": NAMES[number % 2],
                        "video_path": f"/data/{clip}.mp4",
                    },
                )
            )
    order = np.random.default_rng(seed).permutation(len(rows))  # frames in any order: the export gathers them
    return [rows[i] for i in order]


FRAME_FEATURES = se.Features(
    clip=se.Value("string"),
    frame_idx=se.Value("int64"),
    frame=se.Image(),
    speed=se.ClassLabel(names=NAMES),
    video_path=se.Value("string"),
)


@pytest.fixture
def frames_ds(tmp_path: Path) -> se.CachedDataset:
    return se.build(_frame_rows(), FRAME_FEATURES, name="frames", home=tmp_path / "home", progress=False)


def test_frame_level_rows_export_as_the_layout_its_reader_reads(frames_ds: se.CachedDataset, tmp_path: Path) -> None:
    out = frames_ds.export(tmp_path / "out", layout=LAYOUT, video="clip")
    assert lance.dataset(str(out)).schema == pa.schema(
        [("video_id", pa.int32()), ("frame_idx", pa.int32()), ("bytes", pa.large_binary())]
    )
    meta = json.loads((out / "_metadata.json").read_text())
    assert (meta["format"], meta["layout"], meta["cache_format_version"], meta["encoding"]) == (
        "lance",
        "lance-video-frames",
        1,
        "webp",
    )
    assert meta["num_rows"] == meta["total_rows"] == sum(CLIPS.values()) == lance.dataset(str(out)).count_rows()
    assert len(meta["schema_fingerprint"]) == 16
    videos = meta["videos"]
    # the videos in the order of their first rows in the dataset
    first_seen = list(dict.fromkeys(frames_ds.arrow_column("clip").to_pylist()))
    assert [v["key"] for v in videos] == first_seen
    starts = np.cumsum([0] + [v["T"] for v in videos])[:-1].tolist()
    for position, video in enumerate(videos):
        clip = video["key"]
        assert (video["id"], video["T"], video["H"], video["W"], video["start_row"]) == (
            position,
            CLIPS[clip],
            32,
            64,
            starts[position],
        )
        assert video["path"] == f"/data/{clip}.mp4"
        # a class label as its code, as the column stores it (the names are in the features we keep beside)
        assert video["metadata"] == {"clip": clip, "speed": list(CLIPS).index(clip) % 2}
    for window_length, frame_skip, hop_size in [(1, 0, 1), (3, 0, 2), (2, 2, 1), (4, 1, 3)]:
        samples = their_windows(out, window_length=window_length, frame_skip=frame_skip, hop_size=hop_size)
        # the windows of the rows exported, as ds.clips cuts them, are its reader's windows of the copy
        clips = frames_ds.clips(
            window_length=window_length, frame_skip=frame_skip, hop_size=hop_size, video="clip", frame="frame_idx"
        )
        assert len(samples) == len(clips) > 0
        for clip, sample in zip(clips, samples, strict=True):
            assert [frame_index(f) for f in sample["video"]] == sample["frame_indices"]
            assert (clip["clip"], clip["start_frame"]) == (sample["clip"], sample["start_frame"])
            assert clip["frame_indices"].tolist() == sample["frame_indices"]
            assert np.array_equal(clip["frames"], sample["video"])  # WebP kept: the same pixels
            assert sample["filename"] == f"/data/{sample['clip']}.mp4"


def test_webp_frames_are_kept_byte_for_byte_and_load_gives_the_same_rows(
    frames_ds: se.CachedDataset, tmp_path: Path
) -> None:
    out = frames_ds.export(tmp_path / "out", layout=LAYOUT, video="clip")
    back = se.load(out, home=tmp_path / "home").with_format("python")
    assert list(back.features) == ["video_id", "frame_idx", "frame", "video_path", "clip", "speed"]
    assert back.features["speed"] == se.ClassLabel(names=NAMES)  # class names came back
    source = {(row["clip"], row["frame_idx"]): row for row in frames_ds.with_format("python")}
    assert len(back) == len(source)
    for row in back:
        original = source[(row["clip"], row["frame_idx"])]
        assert row["frame"] == original["frame"]
        assert (row["speed"], row["video_path"]) == (original["speed"], original["video_path"])
    assert back.label_counts("speed") == frames_ds.label_counts("speed")


def test_other_images_become_webp_and_lossless_keeps_every_pixel(tmp_path: Path) -> None:
    ds = se.build(_frame_rows(encode=False), FRAME_FEATURES, name="png", home=tmp_path / "home", progress=False)
    assert ds.with_format("python")[0]["frame"][:4] == b"\x89PNG"
    out = ds.export(tmp_path / "lossless", layout=LAYOUT, video="clip", lossless=True)
    meta = json.loads((out / "_metadata.json").read_text())
    assert meta["lossless"] is True
    frames = lance.dataset(str(out)).to_table().column("bytes").to_pylist()
    assert all(blob[:4] == b"RIFF" and blob[8:12] == b"WEBP" for blob in frames)
    start = 0
    for video in meta["videos"]:
        expected = indexed_frames(video["T"], height=32, width=64)
        for offset in range(video["T"]):
            assert np.array_equal(decode(frames[start + offset]), expected[offset])
        start += video["T"]
    low = ds.export(tmp_path / "low", layout=LAYOUT, video="clip", quality=5)
    high = ds.export(tmp_path / "high", layout=LAYOUT, video="clip", quality=95)
    sizes = [sum(len(b) for b in lance.dataset(str(o)).to_table().column("bytes").to_pylist()) for o in (low, high)]
    assert sizes[0] < sizes[1]
    assert json.loads((low / "_metadata.json").read_text())["quality"] == 5


@pytest.mark.parametrize(("codec", "container", "suffix"), CODECS)
def test_a_video_column_is_decoded_frame_by_frame_into_the_layout(
    tmp_path: Path, codec: str, container: str, suffix: str
) -> None:
    counts = [5, 12, 2]
    paths = [
        write_indexed_video(tmp_path / f"v{i}{suffix}", n, codec=codec, container=container)
        for i, n in enumerate(counts)
    ]
    features = se.Features(clip=se.Video(), take=se.Value("int64"), speed=se.ClassLabel(names=NAMES))
    rows = [{"clip": str(p), "take": 10 * i, "speed": NAMES[i % 2]} for i, p in enumerate(paths)]
    ds = se.build(rows, features, name="videos", home=tmp_path / "home", progress=False)
    out = ds.export(tmp_path / "out", layout=LAYOUT, lossless=True)
    meta = json.loads((out / "_metadata.json").read_text())
    assert meta["video_column"] == "clip"
    # what its Features prints for the builder of these columns, written out by hand
    their_text = (
        "{'clip': Video(storage='frames', allowed_extensions=('.mp4', '.avi', '.mov', '.webm', '.mkv')), "
        "'take': Value('int64'), 'speed': ClassLabel(names=['slow', 'fast'])}"
    )
    assert meta["schema_fingerprint"] == hashlib.sha256(their_text.encode()).hexdigest()[:16]
    assert [(v["path"], v["T"], v["H"], v["W"], v["start_row"]) for v in meta["videos"]] == [
        (str(paths[0]), 5, 48, 64, 0),
        (str(paths[1]), 12, 48, 64, 5),
        (str(paths[2]), 2, 48, 64, 17),
    ]
    assert meta["videos"][1]["metadata"] == {"take": 10, "speed": 1}
    samples = their_windows(out, window_length=3, frame_skip=1, hop_size=2)
    assert [(s["video_idx"], s["start_frame"]) for s in samples] == [(0, 0), (1, 0), (1, 2), (1, 4), (1, 6)]
    clips = ds.clips(window_length=3, frame_skip=1, hop_size=2)
    assert len(clips) == len(samples)
    for clip, sample in zip(clips, samples, strict=True):
        assert [frame_index(f) for f in sample["video"]] == sample["frame_indices"]
        assert (clip["video_row"], clip["frame_indices"].tolist()) == (sample["video_idx"], sample["frame_indices"])
        # lossless: the pixels PyAV decodes from the video itself, window for window
        assert np.array_equal(sample["video"], clip["frames"])
        assert (clip["take"], clip["speed"]) == (sample["take"], sample["speed"])
    back = se.load(out, home=tmp_path / "home")
    assert list(back.features) == ["video_id", "frame_idx", "frame", "video_path", "take", "speed"]
    assert back.with_format("python")[6]["take"] == 10
    assert back.keys()[5:7] == ["1/0", "1/1"]


def test_the_export_target_guard_applies(frames_ds: se.CachedDataset, tmp_path: Path) -> None:
    out = frames_ds.export(tmp_path / "out", layout=LAYOUT, video="clip")
    with pytest.raises(ExportTargetError, match="overwrite=True"):
        frames_ds.export(out, layout=LAYOUT, video="clip")
    assert frames_ds.export(out, layout=LAYOUT, video="clip", overwrite=True) == out
    with pytest.raises(ExportTargetError, match="inside the catalog home"):
        frames_ds.export(tmp_path / "home" / "x", layout=LAYOUT, video="clip")


def test_frames_of_different_sizes_in_a_video_are_refused_naming_it(tmp_path: Path) -> None:
    rows = _frame_rows(encode=True)
    row = next(r for _, r in rows if r["clip"] == "jump" and r["frame_idx"] == 4)
    row["frame"] = webp(indexed_frames(1, height=40, width=64, start=4)[0])
    ds = se.build(rows, FRAME_FEATURES, name="sizes", home=tmp_path / "home", progress=False)
    expected = r"video 'jump' \(column 'clip'\), frame 4 .* is 40x64 \(H x W\) but its frame 0 is 32x64.* H and W"
    with pytest.raises(EncodingError, match=expected):
        ds.export(tmp_path / "out", layout=LAYOUT, video="clip")
    assert not (tmp_path / "out").exists()  # nothing published


def test_frame_indices_that_are_not_0_to_T_minus_1_are_refused_naming_the_video(tmp_path: Path) -> None:
    rows = [(k, r) for k, r in _frame_rows() if not (r["clip"] == "walk" and r["frame_idx"] == 2)]
    ds = se.build(rows, FRAME_FEATURES, name="gap", home=tmp_path / "home", progress=False)
    with pytest.raises(EncodingError, match=r"video 'walk' \(column 'clip'\): its frame indices .*no frame 2"):
        ds.export(tmp_path / "out", layout=LAYOUT, video="clip")


def test_a_column_that_changes_within_a_video_is_refused_naming_it(tmp_path: Path) -> None:
    rows = _frame_rows()
    next(r for _, r in rows if r["clip"] == "run" and r["frame_idx"] == 2)["speed"] = "slow"
    ds = se.build(rows, FRAME_FEATURES, name="speeds", home=tmp_path / "home", progress=False)
    with pytest.raises(EncodingError, match=r"video 'run' \(column 'clip'\): column 'speed' is 1 .* 0 in frame 2"):
        ds.export(tmp_path / "out", layout=LAYOUT, video="clip")


def test_a_column_the_metadata_cannot_hold_is_refused_naming_it(tmp_path: Path) -> None:
    features = se.Features(clip=se.Video(), thumb=se.Image())
    path = write_indexed_video(tmp_path / "a.mp4", 3)
    ds = se.build(
        [{"clip": str(path), "thumb": indexed_frames(1)[0]}], features, name="t", home=tmp_path / "home", progress=False
    )
    with pytest.raises(SchemaError, match=r"column 'thumb' .*remove_columns\(\['thumb'\]\)"):
        ds.export(tmp_path / "out", layout=LAYOUT)


def test_a_broken_video_is_refused_naming_its_row(tmp_path: Path) -> None:
    good = write_indexed_video(tmp_path / "good.mp4", 4)
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video at all")
    ds = se.build(
        [("a", {"clip": str(good)}), ("b", {"clip": str(broken)})],
        se.Features(clip=se.Video()),
        name="b",
        home=tmp_path / "home",
        progress=False,
    )
    with pytest.raises(VideoDecodeError, match=r"row 1, key 'b', field 'clip', video .*broken.mp4"):
        ds.export(tmp_path / "out", layout=LAYOUT)
    assert not (tmp_path / "out").exists()


def test_a_loaded_video_frames_cache_exports_back_to_the_same_layout(tmp_path: Path) -> None:
    videos = [
        {"frames": indexed_frames(n, height=32, width=48), "path": f"/clips/{n}.mp4", "metadata": {"take": n}}
        for n in (4, 9, 2)
    ]
    for video, video_id in zip(videos, [0, 3, 5], strict=True):
        video["id"] = video_id
    first = write_layout(tmp_path / "theirs", videos)
    loaded = se.load(first, home=tmp_path / "home")
    again = loaded.export(tmp_path / "ours", layout=LAYOUT)  # video_id, frame_idx and the one Image column
    theirs = json.loads((first / "_metadata.json").read_text())["videos"]
    ours = json.loads((again / "_metadata.json").read_text())["videos"]
    fields = ["id", "path", "T", "H", "W", "start_row", "metadata"]
    assert [{f: v[f] for f in fields} for v in ours] == [{f: v[f] for f in fields} for v in theirs]
    read = [lance.dataset(str(folder)).to_table() for folder in (first, again)]
    assert read[0].equals(read[1])  # the same ids, frame numbers and WebP bytes, row for row
    assert se.load(again, home=tmp_path / "home").keys() == loaded.keys()


def test_videos_stored_as_bytes_are_written_with_their_row_key_as_path(tmp_path: Path) -> None:
    rows = [("walk", {"clip": indexed_video(6), "take": 1}), ("run", {"clip": indexed_video(3), "take": 2})]
    features = se.Features(clip=se.Video(), take=se.Value("int64"))
    ds = se.build(rows, features, name="bytes", home=tmp_path / "home", progress=False)
    out = ds.export(tmp_path / "out", layout=LAYOUT)
    meta = json.loads((out / "_metadata.json").read_text())
    assert [(v["key"], v["path"], v["T"], v["start_row"]) for v in meta["videos"]] == [
        ("walk", "walk", 6, 0),
        ("run", "run", 3, 6),
    ]
    samples = their_windows(out, window_length=2, hop_size=2)
    assert [s["frame_indices"] for s in samples] == [[0, 1], [2, 3], [4, 5], [0, 1]]
    assert all([frame_index(f) for f in s["video"]] == s["frame_indices"] for s in samples)
