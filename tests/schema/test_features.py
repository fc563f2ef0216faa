"""Features: the JSON round trip, fingerprints, encoding and decoding whole examples, inference from Arrow."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image as PILImage

from stable_explore import Array3D, ClassLabel, EncodingError, Features, Image, SchemaError, Sequence, Value, Video
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
    assert decoded["clip"].path == "/videos/a.mp4"
    assert ALL_TYPES.decode_example(stored, image_format="bytes")["image"] == jpeg
    assert ALL_TYPES.decode_example(stored, image_format="numpy")["image"].shape == (16, 16, 3)


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
