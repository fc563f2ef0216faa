"""Video: a reference to a video file, stored as its path."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import EncodingError, Features, Video


def test_paths_and_strings_are_stored_as_text() -> None:
    video = Video()
    assert video.arrow_type == pa.string()
    assert video.encode_value(Path("/videos/a.mp4")) == "/videos/a.mp4"
    assert video.encode_value("clips/b.webm") == "clips/b.webm"
    assert video.encode_value(None) is None
    assert video.encode_column([Path("a.mp4"), None, "b.mp4"]).to_pylist() == ["a.mp4", None, "b.mp4"]


@pytest.mark.parametrize("value", [b"\x00\x00\x00\x18ftypmp42", 5, ["a.mp4"]])
def test_anything_but_a_path_is_refused(value: object) -> None:
    with pytest.raises(EncodingError, match="expected a video file path, got"):
        Video().encode_value(value)


def test_a_video_column_round_trips_through_json_and_a_cache(tmp_path: Path) -> None:
    features = Features(clip=Video(), n=se.Value("int32"))
    assert Features.from_dict(features.to_dict()) == features
    ds = se.build([{"clip": tmp_path / "a.mp4", "n": 1}], features, name="clips", home=tmp_path, progress=False)
    assert ds[0]["clip"] == str(tmp_path / "a.mp4")
    assert se.load("clips", home=tmp_path).features["clip"] == Video()
