"""schema/huggingface.py: our features <-> ``datasets`` features, and Arrow tables between the two layouts."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore.schema import huggingface
from stable_explore.schema.huggingface import features_from_hf, from_hf_layout, hf_features_dict, to_hf_layout

datasets = pytest.importorskip("datasets", reason="datasets is in the test extra")

DTYPES = [
    *("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    *("float16", "float32", "float64", "string", "large_string", "binary", "large_binary"),
    *("timestamp[s]", "timestamp[us, tz=UTC]", "timestamp[ns, tz=Europe/Paris]", "date32", "date64"),
    *("time32[s]", "time32[ms]", "time64[us]", "time64[ns]", "duration[ms]"),
]


def _png(seed: int) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (3, 2), (seed, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_value_dtype_is_the_same_arrow_type_in_datasets(dtype: str) -> None:
    ours = se.Features(x=se.Value(dtype))
    theirs = datasets.Features.from_dict(hf_features_dict(ours))
    assert theirs["x"].pa_type == ours["x"].arrow_type
    assert features_from_hf(theirs) == ours


def test_every_feature_type_maps_both_ways() -> None:
    ours = se.Features(
        image=se.Image(),
        label=se.ClassLabel(names=["a", "b"]),
        cube=se.Array3D(shape=(1, 2, 3), dtype="int16"),
        words=se.Sequence(se.Value("string")),
        pair=se.Sequence(se.Value("float32"), length=2),
        crops=se.Sequence(se.Image()),
        nested=se.Sequence(se.Sequence(se.ClassLabel(names=["x"]))),
    )
    theirs = datasets.Features.from_dict(hf_features_dict(ours, arrays=True))
    assert theirs["image"] == datasets.Image()
    assert theirs["label"] == datasets.ClassLabel(names=["a", "b"])
    assert theirs["cube"] == datasets.Array3D(shape=(1, 2, 3), dtype="int16")
    assert theirs["pair"] == datasets.List(datasets.Value("float32"), length=2)
    assert theirs["nested"] == datasets.List(datasets.List(datasets.ClassLabel(names=["x"])))
    assert features_from_hf(theirs) == ours
    assert features_from_hf(theirs.to_dict()) == ours, "the dict form too"
    legacy = datasets.Features({"s": datasets.Sequence(datasets.Value("int64"))})
    assert features_from_hf(legacy) == se.Features(s=se.Sequence(se.Value("int64")))
    assert hf_features_dict(se.Features(v=se.Video()))["v"] == {"_type": "Video"}
    assert features_from_hf({"v": {"_type": "Video"}}) == se.Features(v=se.Video())


def test_features_with_no_counterpart_are_named() -> None:
    with pytest.raises(se.SchemaError, match="column 'n' is Value\\('null'\\)"):
        features_from_hf({"n": {"_type": "Value", "dtype": "null"}})
    listed = features_from_hf(datasets.Features({"rows": datasets.List({"a": datasets.Value("int8")})}))
    assert listed == se.Features(rows=se.Sequence({"a": se.Value("int8")})), "a list of dicts comes in"
    with pytest.raises(se.SchemaError, match="column 'sound' is a Hugging Face Audio feature"):
        features_from_hf({"sound": {"_type": "Audio"}})
    with pytest.raises(se.SchemaError, match=r"expected datasets\.Features or its to_dict"):
        features_from_hf(["image"])
    with pytest.raises(se.SchemaError, match="layout must be one of"):
        hf_features_dict(se.Features(x=se.Value("int8")), layout="other")


def test_tables_move_between_layouts_with_nulls_kept() -> None:
    features = se.Features(
        image=se.Image(), cube=se.Array3D(shape=(1, 2, 2), dtype="float32"), crops=se.Sequence(se.Image())
    )
    cube = np.arange(4, dtype=np.float32).reshape(1, 2, 2)
    table = pa.table(
        {
            "image": pa.array([_png(1), None, _png(3)], pa.large_binary()),
            "cube": pa.array([cube.tobytes(), cube.tobytes(), None], pa.large_binary()),
            "crops": pa.array([[_png(4), _png(5)], None, []], pa.list_(pa.large_binary())),
        }
    )
    hf = to_hf_layout(table, features)
    assert hf.column("image").type == pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    assert hf.column("image").to_pylist() == [{"bytes": _png(1), "path": None}, None, {"bytes": _png(3), "path": None}]
    assert hf.column("cube").to_pylist() == [cube.tolist(), cube.tolist(), None]
    assert hf.column("crops").to_pylist()[0] == [{"bytes": _png(4), "path": None}, {"bytes": _png(5), "path": None}]
    assert hf.column("crops").to_pylist()[1:] == [None, []]
    back = from_hf_layout(hf, features)
    assert back.column("image").type == pa.large_binary()
    assert back.column("image").to_pylist() == table.column("image").to_pylist()
    sliced = to_hf_layout(table.slice(1, 2), features)  # a slice's offsets start inside the buffers
    assert sliced.column("cube").to_pylist() == [cube.tolist(), None]
    assert sliced.column("image").to_pylist() == [None, {"bytes": _png(3), "path": None}]


def test_image_bytes_past_int32_offsets_are_cut_into_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``datasets`` stores images as ``binary`` (int32 offsets): a chunk holding more is cut, never truncated."""
    limit = 3 * len(_png(0))  # about three images per chunk
    monkeypatch.setattr(huggingface, "_OFFSET_LIMIT", limit)
    images = [_png(i) for i in range(10)]
    table = pa.table({"image": pa.array(images, pa.large_binary())})
    hf = to_hf_layout(table, se.Features(image=se.Image()))
    chunks = hf.column("image").chunks
    assert len(chunks) >= 3
    assert all(sum(len(row["bytes"]) for row in chunk.to_pylist()) <= limit for chunk in chunks)
    assert [row["bytes"] for row in hf.column("image").to_pylist()] == images


def test_images_inside_a_list_of_dicts_move_between_layouts() -> None:
    features = se.Features(crops=se.Sequence({"image": se.Image(), "label": se.ClassLabel(names=["a", "b"])}))
    item = pa.struct([pa.field("image", pa.large_binary()), pa.field("label", pa.int64())])
    crops = [[{"image": _png(1), "label": 1}, {"image": None, "label": None}], None, []]
    table = pa.table({"crops": pa.array(crops, pa.list_(item))})
    hf = to_hf_layout(table.slice(0, 3), features)
    assert hf.column("crops").type.value_type.field("image").type == pa.struct(
        [pa.field("bytes", pa.binary()), pa.field("path", pa.string())]
    )
    assert hf.column("crops").to_pylist()[0][0]["image"] == {"bytes": _png(1), "path": None}
    assert hf.column("crops").to_pylist()[1:] == [None, []]
    spec = hf_features_dict(features)
    assert spec["crops"] == {
        "_type": "List",
        "feature": {"image": {"_type": "Image"}, "label": {"_type": "ClassLabel", "names": ["a", "b"]}},
    }
    assert features_from_hf(spec) == features


def test_a_list_of_structs_in_an_arrow_schema_without_our_metadata_is_a_list_of_dicts() -> None:
    item = pa.struct([pa.field("p", pa.int64()), pa.field("q", pa.list_(pa.float32(), 2))])
    features = se.Features.from_arrow_schema(pa.schema([pa.field("z", pa.list_(item))]))
    assert features == se.Features(z=se.Sequence({"p": se.Value("int64"), "q": se.Sequence(se.Value("float32"), 2)}))
