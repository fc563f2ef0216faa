"""Video: Hugging Face's struct<bytes, path> layout, embedding, older path-string caches, VideoFile."""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import EncodingError, Features, SchemaError, Video, VideoFile
from stable_explore.schema.video import VIDEO_STORAGE, video_source
from stable_explore.storage.backends.read_cache import CACHE_ENV
from stable_explore.testing.caches import write_stable_datasets_v1_cache
from stable_explore.testing.videos import frame_index, indexed_video, write_indexed_video

if TYPE_CHECKING:
    from tests.s3server import S3Server

pytest.importorskip("av")

FEATURES = Features(clip=Video(), n=se.Value("int32"))


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    path = tmp_path / "files" / "clip.mp4"
    path.parent.mkdir()
    write_indexed_video(path, 9)
    return path


def test_a_path_stays_a_path_and_bytes_or_a_file_object_are_stored_as_bytes(clip: Path) -> None:
    video = Video()
    assert video.arrow_type == VIDEO_STORAGE == pa.struct([("bytes", pa.large_binary()), ("path", pa.string())])
    assert video.encode_value(clip) == {"bytes": None, "path": str(clip)}
    data = clip.read_bytes()
    assert video.encode_value(data) == {"bytes": data, "path": None}
    assert video.encode_value(memoryview(data)) == {"bytes": data, "path": None}
    with clip.open("rb") as handle:
        assert video.encode_value(handle) == {"bytes": data, "path": str(clip)}
    assert video.encode_value(io.BytesIO(data)) == {"bytes": data, "path": None}
    assert video.encode_value({"bytes": None, "path": "a.mp4"}) == {"bytes": None, "path": "a.mp4"}
    assert video.encode_value(None) is None
    assert Video(embed=True).encode_value(clip) == {"bytes": data, "path": str(clip)}


@pytest.mark.parametrize("value", [5, ["a.mp4"], {"name": "a.mp4"}, 2.5])
def test_anything_else_is_refused_naming_row_and_field(tmp_path: Path, value: object) -> None:
    with pytest.raises(EncodingError, match="field 'clip'") as caught:
        se.build(
            [{"clip": "a.mp4", "n": 0}, {"clip": value, "n": 1}], FEATURES, name="c", home=tmp_path, progress=False
        )
    assert caught.value.index == 1
    assert caught.value.field == "clip"


def test_embed_of_a_missing_file_names_the_row_field_and_file(tmp_path: Path) -> None:
    features = Features(clip=Video(embed=True))
    with pytest.raises(EncodingError, match=r"row 0.*field 'clip'.*cannot read video file '.*gone.mp4' to embed"):
        se.build([{"clip": tmp_path / "gone.mp4"}], features, name="c", home=tmp_path / "h", progress=False)
    assert len(se.datasets(home=tmp_path / "h")) == 0, "nothing published"


def test_a_cell_decodes_to_a_lazy_video_file_with_frames_and_info(tmp_path: Path, clip: Path) -> None:
    rows = [{"clip": clip, "n": 1}, {"clip": indexed_video(6, codec="libvpx-vp9", container="webm"), "n": 2}]
    ds = se.build([*rows, {"clip": None, "n": 3}], FEATURES, name="c", home=tmp_path / "h", progress=False)
    by_path, by_bytes, missing = (ds[i]["clip"] for i in range(3))
    assert isinstance(by_path, VideoFile)
    assert by_path.path == str(clip)
    assert by_path.bytes is None
    assert by_bytes.path is None
    assert by_bytes.bytes is not None
    assert missing is None
    assert (len(by_path), len(by_bytes)) == (9, 6)
    assert (by_path.info.width, by_path.info.height, by_bytes.info.codec) == (64, 48, "vp9")
    assert frame_index(by_path[4]) == 4
    assert frame_index(by_path[-1]) == 8
    assert [frame_index(f) for f in by_bytes[1:6:2]] == [1, 3, 5]
    assert [frame_index(f) for f in by_path.frames([7, 2])] == [7, 2]
    assert by_path.poster().shape == (48, 64, 3)
    with pytest.raises(IndexError, match="frame 9 is out of range: the video has 9 frames"):
        by_path[9]
    assert pickle.loads(pickle.dumps(by_bytes)) == by_bytes
    assert video_source(ds.with_format("python")[1]["clip"]) == by_bytes.bytes
    frame = ds.to_pandas()
    assert list(frame["clip"]) == [str(clip), f"<{len(by_bytes.bytes)} bytes video>", None]


def test_the_player_inlines_small_videos_and_escapes_the_name(tmp_path: Path) -> None:
    data = indexed_video(4, codec="libvpx-vp9", container="webm")
    page = VideoFile(bytes=data, path='a"<b>.webm')._repr_html_()
    assert page.startswith("<video controls")
    assert "data:video/webm;base64," in page
    assert "&lt;b&gt;" in page
    assert "<b>" not in page
    assert 'src="/nowhere/big.mp4"' in VideoFile(path="/nowhere/big.mp4")._repr_html_()


def test_an_embedded_cache_plays_after_its_source_files_are_deleted(tmp_path: Path, clip: Path) -> None:
    features = Features(clip=Video(embed=True))
    assert features.to_dict()["clip"] == {"_type": "Video", "embed": True}
    assert Features.from_dict(features.to_dict()) == features
    se.build([{"clip": clip}], features, name="kept", home=tmp_path / "h", progress=False)
    plain = se.build([{"clip": clip}], Features(clip=Video()), name="plain", home=tmp_path / "h", progress=False)
    clip.unlink()
    video = se.load("kept", home=tmp_path / "h")[0]["clip"]
    assert video.path == str(clip), "the path is kept as the video's name"
    assert [frame_index(f) for f in video[0:9]] == list(range(9))
    with pytest.raises(se.VideoDecodeError, match="no video file at"):
        len(plain[0]["clip"])


def test_an_embedded_cache_works_on_a_bucket_home(
    tmp_path: Path, s3_env: S3Server, monkeypatch: pytest.MonkeyPatch, clip: Path
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "read-cache"))
    home = f"s3://team/video-{os.getpid()}"
    se.build([{"clip": clip, "n": 4}], Features(clip=Video(embed=True), n=se.Value("int32")), name="v", home=home)
    clip.unlink()
    ds = se.load("v", home=home)
    assert [frame_index(f) for f in ds[0]["clip"][2:5]] == [2, 3, 4]
    assert [frame_index(w) for w in ds.clips(window_length=3, hop_size=3)[2]["frames"]] == [6, 7, 8]


def test_an_older_cache_of_path_strings_opens_decodes_and_exports_as_before(tmp_path: Path, clip: Path) -> None:
    cache = tmp_path / "theirs"
    table = pa.table({"clip": [str(clip), None], "n": pa.array([1, 2], pa.int32())})
    write_stable_datasets_v1_cache(cache, [table])
    ds = se.load(cache, features=FEATURES)
    assert ds.features == FEATURES
    video = ds[0]["clip"]
    assert video.path == str(clip)
    assert len(video) == 9
    assert ds[1]["clip"] is None
    assert ds.with_format("python")[0]["clip"] == str(clip)
    assert list(ds.to_pandas()["clip"]) == [str(clip), None]
    assert [frame_index(w) for w in ds.clips(window_length=2, hop_size=4)[1]["frames"]] == [4, 5]
    out = ds.export(tmp_path / "exports" / "again", layout="stable-datasets")
    shard = pa.ipc.open_file(str(out / "shard-00000.arrow")).read_all()
    assert shard.schema.field("clip").type == pa.string(), "stable-datasets' Video is a path string"
    assert shard.column("clip").to_pylist() == [str(clip), None]
    hf = ds.to_hf()
    assert hf.data.column("clip").to_pylist() == [{"bytes": None, "path": str(clip)}, None]
    assert type(hf.features["clip"]).__name__ == "Video"


def test_export_for_stable_datasets_writes_paths_and_names_a_bytes_only_row(tmp_path: Path, clip: Path) -> None:
    rows = [{"clip": clip, "n": 1}, {"clip": clip.read_bytes(), "n": 2}]
    ds = se.build(rows, FEATURES, name="c", home=tmp_path / "h", progress=False)
    with pytest.raises(SchemaError, match="row 1, field 'clip': the video is stored as bytes only"):
        ds.export(tmp_path / "out" / "v1", layout="stable-datasets")
    assert not (tmp_path / "out" / "v1").exists()
    out = ds.select([0]).export(tmp_path / "out" / "ok", layout="stable-datasets")
    assert se.load(out)[0]["clip"].path == str(clip)


def test_hugging_face_keeps_a_video_column_as_its_video(tmp_path: Path, clip: Path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = [{"clip": clip, "n": 1}, {"clip": clip.read_bytes(), "n": 2}]
    ds = se.build(rows, FEATURES, name="c", home=tmp_path / "h", progress=False)
    hf = ds.to_hf()
    assert hf.features["clip"] == datasets.Video()
    assert hf.data.column("clip").type == pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    back = se.from_hf(hf, name="back", home=tmp_path / "h", progress=False)
    assert back.features["clip"] == Video()
    assert back[0]["clip"] == ds[0]["clip"]
    assert back[1]["clip"] == ds[1]["clip"]
    assert np.array_equal(back[1]["clip"][3], ds[1]["clip"][3])
