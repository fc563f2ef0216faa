"""Feature types: JSON round trip, encoding, decoding, and the errors users see."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image as PILImage

from stable_explore import Array3D, ClassLabel, EncodingError, Features, Image, SchemaError, Sequence, Value, Video
from stable_explore.schema.image_codec import usable_cpus
from tests.conftest import jpeg_bytes

ALL_TYPES = Features(
    image=Image(),
    label=ClassLabel(names=["cat", "dog"]),
    count=Value("int32"),
    score=Value("float16"),
    flag=Value("bool"),
    text=Value("string"),
    blob=Value("binary"),
    big=Value("uint64"),
    cube=Array3D(shape=(2, 3, 4), dtype="float32"),
    tags=Sequence(Value("string")),
    pair=Sequence(ClassLabel(names=["a", "b"]), length=2),
    clip=Video(),
)


def test_features_round_trip_through_json_is_lossless() -> None:
    text = json.dumps(ALL_TYPES.to_dict())
    again = Features.from_dict(json.loads(text))
    assert again == ALL_TYPES
    assert again["label"].names == ("cat", "dog")
    assert again["cube"].shape == (2, 3, 4)
    assert again["cube"].dtype == "float32"
    assert again["pair"].length == 2
    assert again.fingerprint() == ALL_TYPES.fingerprint()
    assert again.to_arrow_schema() == ALL_TYPES.to_arrow_schema()


def test_fingerprint_changes_when_a_class_is_renamed_or_a_shape_changes() -> None:
    base = Features(label=ClassLabel(names=["cat", "dog"]), x=Array3D((1, 2, 3), "uint8"))
    renamed = Features(label=ClassLabel(names=["cat", "hound"]), x=Array3D((1, 2, 3), "uint8"))
    reshaped = Features(label=ClassLabel(names=["cat", "dog"]), x=Array3D((1, 2, 4), "uint8"))
    assert len({base.fingerprint(), renamed.fingerprint(), reshaped.fingerprint()}) == 3


def test_every_type_decodes_what_it_encodes() -> None:
    jpeg = jpeg_bytes(3)
    cube = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    example = {
        "image": jpeg,
        "label": "dog",
        "count": np.int32(7),
        "score": 0.5,
        "flag": True,
        "text": "héllo",
        "blob": b"\x00\x01",
        "big": 2**63 + 5,
        "cube": cube,
        "tags": ["a", "b"],
        "pair": ["b", 0],
        "clip": Path("/videos/a.mp4"),
    }
    columns = {name: ALL_TYPES[name].encode_column([value]) for name, value in example.items()}
    stored = pa.table(columns).to_pylist()[0]
    assert ALL_TYPES.encode_example(example) == stored
    decoded = ALL_TYPES.decode_example(stored)
    assert isinstance(decoded["image"], PILImage.Image)
    assert decoded["image"].size == (16, 16)
    assert decoded["label"] == 1
    assert ALL_TYPES["label"].int2str(decoded["label"]) == "dog"
    assert decoded["count"] == 7
    assert decoded["score"] == 0.5
    assert decoded["flag"] is True
    assert decoded["text"] == "héllo"
    assert decoded["blob"] == b"\x00\x01"
    assert decoded["big"] == 2**63 + 5
    np.testing.assert_array_equal(decoded["cube"], cube)
    assert decoded["cube"].shape == (2, 3, 4)
    assert decoded["tags"] == ["a", "b"]
    assert decoded["pair"] == [1, 0]
    assert decoded["clip"] == "/videos/a.mp4"
    assert ALL_TYPES.decode_example(stored, image_format="bytes")["image"] == jpeg
    assert ALL_TYPES.decode_example(stored, image_format="numpy")["image"].shape == (16, 16, 3)


def test_image_keeps_jpeg_bytes_from_bytes_and_from_files(tmp_path: Path) -> None:
    jpeg = jpeg_bytes(1)
    path = tmp_path / "a.jpg"
    path.write_bytes(jpeg)
    feature = Image()
    assert feature.encode_value(jpeg) == jpeg
    assert feature.encode_value(path) == jpeg
    assert feature.encode_value(str(path)) == jpeg
    assert feature.encode_value({"path": str(path)}) == jpeg
    assert feature.encode_column([jpeg, jpeg]).to_pylist() == [jpeg, jpeg]


def test_image_from_pil_keeps_its_format_and_arrays_become_png(tmp_path: Path) -> None:
    path = tmp_path / "a.jpg"
    path.write_bytes(jpeg_bytes(2))
    with PILImage.open(path) as opened:
        stored = Image().encode_value(opened)
    assert stored[:3] == b"\xff\xd8\xff"
    rgba = PILImage.new("RGBA", (4, 4), (1, 2, 3, 4))
    assert Image().encode_value(rgba)[:4] == b"\x89PNG"
    gray = np.zeros((5, 6), dtype=np.uint8)
    png = Image().encode_value(gray)
    assert png[:4] == b"\x89PNG"
    assert PILImage.open(io.BytesIO(png)).size == (6, 5)


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (b"not an image at all", "not an image"),
        (np.zeros((4, 4, 3), dtype=np.float64), "uint8"),
        (12, "expected image bytes"),
        ({"other": 1}, "'bytes' or 'path'"),
    ],
)
def test_image_rejects_what_it_cannot_store(value: object, needle: str) -> None:
    with pytest.raises(EncodingError, match=needle):
        Image().encode_value(value)


def test_missing_image_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(EncodingError, match=r"nope\.jpg"):
        Image().encode_value(tmp_path / "nope.jpg")


def _photo_crops(count: int) -> list[np.ndarray]:
    """Photo-like arrays (gradients plus noise), so that PNG compression does real work."""
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:48, 0:48]
    return [
        np.clip(xx[..., None] * rng.uniform(1, 4, 3) + yy[..., None] + rng.normal(0, 9, (48, 48, 3)), 0, 255).astype(
            np.uint8
        )
        for _ in range(count)
    ]


def test_a_batch_of_arrays_and_pil_images_encodes_as_one_at_a_time(tmp_path: Path) -> None:
    # Large batches are shared out among threads; the stored bytes must not depend on that.
    arrays = _photo_crops(40)
    paths = []
    for i, array in enumerate(arrays[:20]):
        paths.append(tmp_path / f"{i}.jpg")
        PILImage.fromarray(array).save(paths[-1], quality=85)
    one_at_a_time = [Image().encode_value(v) for v in [*arrays, *(PILImage.open(p) for p in paths)]]
    one_at_a_time += [Image().encode_value(v) for v in (jpeg_bytes(1), str(paths[0]))]
    lazy = [PILImage.open(p) for p in paths]  # opened lazily, never loaded: read once, before any thread saves them
    batch = [*arrays, *lazy, jpeg_bytes(1), str(paths[0])]
    threads: set[str] = set()

    class Recording(Image):
        def encode_value(self, value: object) -> object:
            threads.add(threading.current_thread().name)
            return super().encode_value(value)

    assert Recording().encode_column(batch).to_pylist() == one_at_a_time
    if usable_cpus() > 1:
        assert threads
        assert all(name.startswith("stable-explore-encode") for name in threads)
    threads.clear()
    same_image_twice = [lazy[0]] * 20  # a shared PIL object is encoded in one thread: this one
    assert Recording().encode_column(same_image_twice).to_pylist() == [one_at_a_time[40]] * 20
    assert threads == {threading.current_thread().name}


def test_a_bad_image_in_a_large_batch_names_the_first_bad_row() -> None:
    batch: list[object] = list(_photo_crops(64))
    batch[45] = np.zeros((4, 4), dtype=np.float64)
    batch[29] = np.zeros((4, 4, 2), dtype=np.uint8)
    with pytest.raises(EncodingError) as info:
        Image().encode_column(batch)
    assert info.value.index == 29
    assert "(4, 4, 2)" in str(info.value)


def test_class_label_names_and_ints() -> None:
    labels = ClassLabel(names=["cat", "dog"])
    assert labels.str2int("cat") == 0
    assert labels.int2str([1, 0]) == ["dog", "cat"]
    assert labels.encode_column(["dog", 0, None, np.int64(1)]).to_pylist() == [1, 0, None, 1]
    assert ClassLabel(num_classes=3).names == ("0", "1", "2")
    with pytest.raises(EncodingError, match=r"unknown class 'dgo'.*did you mean 'dog'"):
        labels.encode_column(["cat", "dgo"])
    with pytest.raises(EncodingError, match="row 1"):
        labels.encode_column([0, 5])
    with pytest.raises(EncodingError):
        labels.encode_column([True])
    with pytest.raises(SchemaError, match="unique"):
        ClassLabel(names=["a", "a"])
    with pytest.raises(SchemaError, match="names"):
        ClassLabel()


def test_value_refuses_silent_truncation_and_wrong_types() -> None:
    assert Value("int64").encode_column([1, 2.0, None]).to_pylist() == [1, 2, None]
    with pytest.raises(EncodingError, match=r"row 1: expected int64, got 3.5"):
        Value("int64").encode_column([1, 3.5])
    with pytest.raises(EncodingError, match="expected uint8"):
        Value("uint8").encode_column([300])
    with pytest.raises(EncodingError, match="expected string, got 2"):
        Value("string").encode_column(["a", 2])
    with pytest.raises(SchemaError, match="dtype"):
        Value("int128")


def test_array3d_checks_shape_and_dtype() -> None:
    feature = Array3D(shape=(2, 2, 3), dtype="uint8")
    with pytest.raises(EncodingError, match=r"expected an array of shape \(2, 2, 3\), got shape \(2, 2\)"):
        feature.encode_value(np.zeros((2, 2)))
    with pytest.raises(EncodingError, match="dtype uint8"):
        feature.encode_value(np.full((2, 2, 3), 1.5))
    with pytest.raises(SchemaError):
        Array3D(shape=(2, 2), dtype="uint8")


def test_sequence_reports_the_bad_item() -> None:
    feature = Sequence(ClassLabel(names=["a"]))
    with pytest.raises(EncodingError, match="item 1: unknown class 'z'"):
        feature.encode_value(["a", "z"])
    with pytest.raises(EncodingError, match="expected a list"):
        feature.encode_value("a")
    with pytest.raises(EncodingError, match="length 3"):
        Sequence(Value("int64"), length=3).encode_value([1])


def test_features_name_missing_and_extra_fields() -> None:
    features = Features(a=Value("int64"), b=Value("string"))
    with pytest.raises(EncodingError, match=r"missing field\(s\) \['b'\].*unexpected field\(s\) \['c'\]"):
        features.encode_example({"a": 1, "c": 2})
    with pytest.raises(EncodingError, match="field 'b': expected string"):
        features.encode_example({"a": 1, "b": 3})


def test_reserved_and_invalid_feature_definitions() -> None:
    with pytest.raises(SchemaError, match="reserved"):
        Features(__key__=Value("int64"))
    with pytest.raises(SchemaError, match="feature type"):
        Features(a="int64")
    with pytest.raises(SchemaError, match="_type"):
        Features.from_dict({"a": {"dtype": "int64"}})


def test_features_are_inferred_from_a_plain_arrow_schema() -> None:
    schema = pa.schema([("x", pa.int64()), ("s", pa.string()), ("v", pa.list_(pa.float32()))])
    inferred = Features.from_arrow_schema(schema)
    assert inferred == Features(x=Value("int64"), s=Value("string"), v=Sequence(Value("float32")))
    stored = ALL_TYPES.to_arrow_schema(with_row_columns=True)
    assert Features.from_arrow_schema(stored) == ALL_TYPES
