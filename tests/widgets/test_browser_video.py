"""Videos in the shard browser, the card and pandas: posters, numbers as columns, frames, the player's bytes, edits."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import CachedDataset
from stable_explore.testing.videos import frame_index, write_indexed_video
from tests.widgets.commands import invoke

pytest.importorskip("av", reason="the video extra is part of the test extras")
pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")

from stable_explore.widgets import ShardBrowser
from stable_explore.widgets._thumbs import ThumbnailCache

FRAMES = (12, 24, 48)  # at 24 fps: 0.5 s, 1 s and 2 s


@pytest.fixture
def clips(tmp_path: Path) -> CachedDataset:
    """Nine videos (mpeg4 in mp4 and vp9 in webm) of 0.5, 1 and 2 s, and one file that is not a video."""
    rows = []
    for i in range(9):
        codec, container, suffix = (("mpeg4", "mp4", ".mp4"), ("libvpx-vp9", "webm", ".webm"))[i % 2]
        path = write_indexed_video(tmp_path / f"clip{i}{suffix}", FRAMES[i % 3], codec=codec, container=container)
        rows.append((f"clip{i}", {"video": str(path), "label": i % 2}))
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"\x00\x00\x00\x18ftypmp42 cut short")
    rows.append(("broken", {"video": str(broken), "label": 0}))
    features = se.Features(video=se.Video(), label=se.ClassLabel(names=["cat", "dog"]))
    return se.build(rows, features, name="clips", home=tmp_path / "home", progress=False)


def test_the_grid_shows_each_video_as_its_poster_with_its_duration(clips: CachedDataset) -> None:
    cache = ThumbnailCache()
    browser = ShardBrowser(clips, page_size=24, cache=cache, prefetch=False)
    assert browser.has_images
    content, buffers = browser.page_message()
    cells = content["cells"]
    assert len(buffers) == 9  # nine posters; the broken file has none
    assert cells[0]["mime"] == "image/jpeg"
    assert cells[0]["video"] == {"duration": 0.5, "frames": 12, "fps": 24.0}
    assert [c["video"]["duration"] for c in cells[:3]] == [0.5, 1.0, 2.0]
    poster = PILImage.open(io.BytesIO(buffers[2]))
    assert max(poster.size) == 128
    assert frame_index(np.asarray(poster.resize((64, 48)))) == 4  # a tenth of the way into 48 frames
    # the broken file: a tile that says why (naming the file), and no thumbnail
    assert "buffer" not in cells[9]
    assert "broken.mp4" in cells[9]["broken"]
    # posters are made once: a second page costs no decode
    made = len(cache)
    browser.page_message()
    assert len(cache) == made == 9
    assert cache.hits >= 9


def test_duration_fps_and_size_are_columns_to_filter_sort_and_count(clips: CachedDataset) -> None:
    browser = ShardBrowser(clips, page_size=24, prefetch=False)
    names = [f["name"] for f in browser.fields]
    for what in ("duration", "fps", "width", "height", "frames"):
        assert f"video.{what}" in names
    invoke(browser, "refresh")  # the page first; the videos' numbers come right after it
    duration = next(f for f in browser.fields if f["name"] == "video.duration")
    assert (duration["min"], duration["max"]) == (0.5, 2.0)
    assert sum(browser.histograms["video.duration"]) == 9  # the broken video has no duration
    reply, _ = invoke(browser, "where", {"column": "video.duration", "min": 0.9})
    assert reply == {"type": "ok"}
    assert browser.num_rows == 6
    assert browser.page_rows().tolist() == [1, 2, 4, 5, 7, 8]
    assert browser.view.keys() == ["clip1", "clip2", "clip4", "clip5", "clip7", "clip8"]
    browser.where("video.duration", max=0.5)
    assert browser.page_rows().tolist() == [0, 3, 6]
    browser.clear_filters()
    browser.sort("video.duration", descending=True)
    assert browser.page_rows().tolist()[:3] == [2, 5, 8]
    assert browser.histograms["video.width"] == [0] * 15 + [9]


def test_hover_frames_are_evenly_spaced_and_the_player_gets_the_files_bytes(clips: CachedDataset) -> None:
    browser = ShardBrowser(clips, page_size=24, prefetch=False)
    reply, buffers = invoke(browser, "video_frames", {"row": 2, "count": 8, "size": 64})
    assert reply["type"] == "video_frames"
    assert [f["index"] for f in reply["frames"]] == [0, 6, 12, 18, 24, 30, 36, 42]
    seen = [frame_index(np.asarray(PILImage.open(io.BytesIO(b)).convert("RGB").resize((64, 48)))) for b in buffers]
    assert seen == [0, 6, 12, 18, 24, 30, 36, 42]
    reply, buffers = invoke(browser, "video_media", {"row": 1})
    assert reply["mime"] == "video/webm"
    assert reply["codec"] == "vp9"
    assert buffers[0] == Path(clips[1]["video"].path).read_bytes()
    reply, _ = invoke(browser, "video_media", {"row": 0})
    assert (reply["mime"], reply["codec"]) == ("video/mp4", "mpeg4")
    # the broken one: an error reply naming the row, its key and the column; the status line says it too
    reply, buffers = invoke(browser, "video_frames", {"row": 9})
    assert reply["type"] == "error"
    assert "row 9" in reply["message"]
    assert "'broken'" in reply["message"]
    assert "'video'" in reply["message"]
    assert buffers == []
    detail, _ = browser.detail_message(9)
    assert "broken" in detail["video"]
    detail, _ = browser.detail_message(2)
    assert detail["video"]["frames"] == 48
    assert "2.00 s · 24 fps · 64 x 48 · 48 frames · mpeg4" in dict(detail["fields"])["video"]


def test_relabel_drop_and_save_work_on_video_rows(clips: CachedDataset) -> None:
    browser = ShardBrowser(clips, page_size=24, prefetch=False)
    browser.where("video.duration", max=0.5)
    browser.select_page()
    browser.relabel_selection("dog")
    browser.clear_selection()
    browser.click(9)
    browser.flag_selection()
    browser.drop_flagged()
    assert browser.pending == "drop 1, relabel 2"  # row 3 is a dog already
    saved = browser.save("short clips are dogs; the broken file goes")
    assert len(saved) == 9
    assert saved.metadata["parent"] == clips.version
    assert [saved[i]["label"] for i in (0, 3, 6)] == [1, 1, 1]
    assert saved[0]["video"] == clips[0]["video"]
    # the browser shows the new version, its filter kept, its posters and numbers made for it
    assert browser.dataset.version == saved.version
    assert browser.page_rows().tolist() == [0, 3, 6]
    browser.clear_filters()
    content, buffers = browser.page_message()
    assert len(content["cells"]) == len(buffers) == 9


def test_the_card_and_pandas_show_posters(clips: CachedDataset) -> None:
    html = clips._repr_html_()
    assert html.count("data-testid='se-video-poster'") == 8  # the strip's eight
    assert "0.5 s" in html
    frame = clips.select([0, 1, 2]).to_pandas(images="thumbnail", thumbnail_size=32)
    posters = frame["video"].tolist()
    assert [p.size for p in posters] == [(32, 24)] * 3
    with pytest.raises(se.VideoDecodeError, match=r"row 9.*'broken'.*'video'"):
        clips.to_pandas(images="thumbnail")
    assert clips.to_pandas()["video"].tolist()[0].endswith("clip0.mp4")  # by default the stored path


def test_a_broken_video_in_the_card_is_a_tile_saying_why(tmp_path: Path) -> None:
    broken = tmp_path / "broken.webm"
    broken.write_bytes(b"nothing")
    ds = se.build(
        [{"video": str(broken)}], se.Features(video=se.Video()), name="one", home=tmp_path / "h", progress=False
    )
    html = ds._repr_html_()
    assert "data-testid='se-video-broken'" in html
    assert "broken video" in html
    assert "broken.webm" in html


def test_embedded_videos_show_and_play_after_their_files_are_gone(tmp_path: Path) -> None:
    paths = [write_indexed_video(tmp_path / f"e{i}.webm", 24, codec="libvpx-vp9", container="webm") for i in range(3)]
    stored = [p.read_bytes() for p in paths]
    features = se.Features(video=se.Video(embed=True))
    ds = se.build([{"video": str(p)} for p in paths], features, name="embedded", home=tmp_path / "h", progress=False)
    for path in paths:
        path.unlink()
    browser = ShardBrowser(ds, page_size=24, prefetch=False)
    content, buffers = browser.page_message()
    assert len(buffers) == 3
    assert content["cells"][0]["video"]["frames"] == 24
    reply, data = invoke(browser, "video_media", {"row": 2})
    assert reply["mime"] == "video/webm"
    assert data[0] == stored[2]
    reply, frames = invoke(browser, "video_frames", {"row": 0, "count": 4})
    assert [f["index"] for f in reply["frames"]] == [0, 6, 12, 18]
    assert len(frames) == 4
    assert "e0.webm" in dict(browser.detail_message(0)[0]["fields"])["video"]


def test_a_large_set_probes_its_videos_when_a_filter_first_asks(
    clips: CachedDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stable_explore.widgets import _video

    monkeypatch.setattr(_video, "PROBE_ALL_ROWS", 5)  # as if the ten were thousands
    browser = ShardBrowser(clips, page_size=24, prefetch=False)
    invoke(browser, "refresh")
    duration = next(f for f in browser.fields if f["name"] == "video.duration")
    assert "min" not in duration  # not every video probed after the first page
    assert "video.duration" not in browser.histograms
    browser.where("video.duration", min=1.5)
    assert browser.page_rows().tolist() == [2, 5, 8]
    invoke(browser, "refresh")
    duration = next(f for f in browser.fields if f["name"] == "video.duration")
    assert (duration["min"], duration["max"]) == (0.5, 2.0)  # asked for once: its range and histogram follow
    assert sum(browser.histograms["video.duration"]) == 3


def test_probing_every_video_reads_a_few_at_a_time(clips: CachedDataset, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.widgets import _video

    monkeypatch.setattr(_video, "_READ_AT_ONCE", 3)
    read: list[int] = []
    select = CachedDataset.select

    def counting(self: CachedDataset, rows: object) -> CachedDataset:
        view = select(self, rows)  # type: ignore[arg-type]
        read.append(len(view))
        return view

    monkeypatch.setattr(CachedDataset, "select", counting)
    column = _video.derived_column(clips, "video.frames")
    assert column.to_pylist() == [12.0, 24.0, 48.0] * 3 + [None]
    assert max(read) == 3  # embedded videos are whole files: never all of them in memory at once
    read.clear()
    _, buffers = ShardBrowser(clips, page_size=24, cache=ThumbnailCache(), prefetch=False).page_message()
    assert len(buffers) == 9
    assert max(read) <= 10  # the page's rows once (keys, labels); each video 3 at a time
    assert read.count(3) >= 3
