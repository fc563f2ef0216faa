"""se.load on caches stable-datasets writes (its Arrow and Lance layouts) and on plain Lance datasets.

The writers below are ours: they lay a cache out exactly as stable-datasets' current
``write_sharded_arrow_cache`` and ``write_lance_cache`` do (read from its source: the encoded
columns in a record-batch stream, each field tagged ``stable_datasets.feature`` with its type's
class name, then ``_metadata.json`` with ``format``, ``layout``, ``schema_fingerprint`` and
``num_rows``), with no code of it. The fingerprints are the SHA-256 of the text its ``Features``
prints, written out here by hand, so our reproduction of that text is checked too.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import stable_explore as se
from stable_explore import ClassLabel, Features, Image, Value
from stable_explore.errors import NotACacheError, SchemaError
from tests.conftest import NAMES, jpeg_bytes

lance = pytest.importorskip("lance", reason="the lance extra: pip install 'stable-explore[lance]'")

# What stable-datasets' Features prints for the features of these tests (its fingerprint's input).
THEIR_TEXT = (
    "{'image': Image(encode_format='PNG'), 'label': ClassLabel(names=['cat', 'dog', 'bird']), "
    "'score': Value('float32')}"
)
THEIR_FINGERPRINT = hashlib.sha256(THEIR_TEXT.encode()).hexdigest()[:16]
THEIR_TYPES = {
    "image": (pa.large_binary(), b"Image"),
    "label": (pa.int64(), b"ClassLabel"),
    "score": (pa.float32(), b"Value"),
}


def _features() -> Features:
    return Features(image=Image(), label=ClassLabel(names=NAMES), score=Value("float32"))


def _their_schema() -> pa.Schema:
    return pa.schema(
        [pa.field(name, kind, metadata={b"stable_datasets.feature": tag}) for name, (kind, tag) in THEIR_TYPES.items()]
    )


def _batches(jpegs: list[bytes], rows: int, batch_size: int) -> list[pa.RecordBatch]:
    schema = _their_schema()
    out = []
    for start in range(0, rows, batch_size):
        stop = min(rows, start + batch_size)
        out.append(
            pa.record_batch(
                [
                    pa.array(jpegs[start:stop], pa.large_binary()),
                    pa.array([i % 3 for i in range(start, stop)], pa.int64()),
                    pa.array([i / 4 for i in range(start, stop)], pa.float32()),
                ],
                schema=schema,
            )
        )
    return out


def write_their_lance_cache(folder: Path, jpegs: list[bytes], rows: int = 40, batch_size: int = 16) -> Path:
    """A ``lance-rows`` cache as stable-datasets' write_lance_cache lays it out."""
    reader = pa.RecordBatchReader.from_batches(_their_schema(), iter(_batches(jpegs, rows, batch_size)))
    lance.write_dataset(reader, str(folder), max_rows_per_file=16)  # a few fragments, as a big cache has
    meta = {
        "cache_format_version": 1,
        "format": "lance",
        "layout": "lance-rows",
        "schema_fingerprint": THEIR_FINGERPRINT,
        "num_rows": rows,
    }
    (folder / "_metadata.json").write_text(json.dumps(meta, indent=2))
    return folder


def write_their_arrow_cache(folder: Path, jpegs: list[bytes], rows: int = 40, batch_size: int = 16) -> Path:
    """An ``arrow-shards`` cache as stable-datasets' write_sharded_arrow_cache lays it out (a shard per 2 batches)."""
    folder.mkdir(parents=True)
    batches = _batches(jpegs, rows, batch_size)
    names, counts = [], []
    for shard, start in enumerate(range(0, len(batches), 2)):
        name = f"shard-{shard:05d}.arrow"
        with pa.OSFile(str(folder / name), "wb") as sink, ipc.new_file(sink, _their_schema()) as writer:
            for batch in batches[start : start + 2]:
                writer.write_batch(batch)
        names.append(name)
        counts.append(sum(b.num_rows for b in batches[start : start + 2]))
    meta = {
        "cache_format_version": 1,
        "format": "arrow",
        "layout": "arrow-shards",
        "schema_fingerprint": THEIR_FINGERPRINT,
        "num_rows": rows,
        "num_shards": len(names),
        "shard_row_counts": counts,
        "shard_filenames": names,
        "shard_size_target_bytes": None,
    }
    (folder / "_metadata.json").write_text(json.dumps(meta, indent=2))
    return folder


BOTH_LAYOUTS = pytest.mark.parametrize(
    "writer", [write_their_lance_cache, write_their_arrow_cache], ids=["lance-rows", "arrow-shards"]
)


def _assert_rows(ds: se.CachedDataset, jpegs: list[bytes], rows: int) -> None:
    assert len(ds) == rows
    table = ds.to_arrow()
    for i in range(rows):
        assert table.column("image")[i].as_py() == jpegs[i], f"row {i}: image bytes differ"
        assert table.column("label")[i].as_py() == i % 3, f"row {i}: label"
        assert table.column("score")[i].as_py() == pytest.approx(i / 4), f"row {i}: score"


@BOTH_LAYOUTS
def test_their_cache_opens_with_names_and_bytes(tmp_path: Path, jpegs: list[bytes], writer) -> None:
    cache = writer(tmp_path / "pets_default_train_0123456789abcdef", jpegs)
    before = sorted((p.relative_to(cache), p.stat().st_mtime_ns) for p in cache.rglob("*"))

    ds = se.load(cache, features=_features())

    _assert_rows(ds, jpegs, 40)
    assert list(ds.features["label"].names) == NAMES
    assert ds.label_counts() == {"cat": 14, "dog": 13, "bird": 13}
    assert ds[5]["image"].size == (16, 16)  # decoded as an image
    assert sorted((p.relative_to(cache), p.stat().st_mtime_ns) for p in cache.rglob("*")) == before  # only read


@BOTH_LAYOUTS
def test_their_cache_without_features_keeps_images_and_codes(tmp_path: Path, jpegs: list[bytes], writer) -> None:
    ds = se.load(writer(tmp_path / "c", jpegs))
    assert ds.features == Features(image=Image(), label=Value("int64"), score=Value("float32"))
    _assert_rows(ds, jpegs, 40)


@BOTH_LAYOUTS
def test_features_not_the_builders_are_refused_by_fingerprint(tmp_path: Path, jpegs: list[bytes], writer) -> None:
    cache = writer(tmp_path / "c", jpegs)
    renamed = Features(image=Image(), label=ClassLabel(names=["cat", "dog", "fish"]), score=Value("float32"))
    with pytest.raises(SchemaError, match="schema_fingerprint") as caught:
        se.load(cache, features=renamed)
    assert "_metadata.json" in str(caught.value)


def test_lance_mirror_is_made_once_and_renewed_when_the_dataset_changes(tmp_path: Path, jpegs: list[bytes]) -> None:
    cache = write_their_lance_cache(tmp_path / "c", jpegs, rows=20)
    first = se.load(cache, features=_features())
    again = se.load(cache, features=_features())
    assert again.cache_dir == first.cache_dir
    assert first.cache_dir.parent.name == ".foreign"

    lance.write_dataset(
        pa.RecordBatchReader.from_batches(_their_schema(), iter(_batches(jpegs, 8, 8))), str(cache), mode="append"
    )
    grown = se.load(cache, features=_features())
    assert grown.cache_dir != first.cache_dir
    assert len(grown) == 28


def test_video_frames_layout_is_named_not_opened(tmp_path: Path) -> None:
    folder = tmp_path / "v"
    folder.mkdir()
    meta = {"cache_format_version": 1, "format": "lance", "layout": "lance-video-frames", "num_rows": 3}
    (folder / "_metadata.json").write_text(json.dumps(meta))
    with pytest.raises(NotACacheError, match="lance-video-frames"):
        se.load(folder)


def test_lance_rows_metadata_without_lance_data_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    meta = {"cache_format_version": 1, "format": "lance", "layout": "lance-rows", "num_rows": 3}
    (folder / "_metadata.json").write_text(json.dumps(meta))
    with pytest.raises(NotACacheError, match="no Lance dataset"):
        se.load(folder)


# -- the other way: ds.export(layout="stable-datasets") writes what its reader checks ------------------------------


def _checked_as_their_reader_does(folder: Path, text_of_features: str) -> dict:
    """The checks of stable-datasets' open_cache -> validate_sharded_cache, restated from its source."""
    raw = json.loads((folder / "_metadata.json").read_text())
    assert (raw["format"], raw["layout"], raw["cache_format_version"]) == ("arrow", "arrow-shards", 1)
    assert len(raw["shard_filenames"]) == raw["num_shards"] == len(raw["shard_row_counts"])
    assert sum(raw["shard_row_counts"]) == raw["num_rows"]
    assert all((folder / name).is_file() for name in raw["shard_filenames"])
    assert raw["schema_fingerprint"] == hashlib.sha256(text_of_features.encode()).hexdigest()[:16]
    return raw


def test_export_for_stable_datasets_passes_its_reader_checks(home: Path, tmp_path: Path, jpegs: list[bytes]) -> None:
    rows = [{"image": jpegs[i], "label": NAMES[i % 3], "score": i / 4} for i in range(40)]
    ds = se.build(rows, _features(), name="pets", home=home, progress=False)
    target = tmp_path / "pets_default_train_0123456789abcdef"
    out = ds.export(target, layout="stable-datasets", shard_size_bytes=2000, batch_size=8)

    raw = _checked_as_their_reader_does(out, THEIR_TEXT)
    assert raw["num_shards"] > 1
    for name in raw["shard_filenames"]:
        schema = ipc.open_file(pa.memory_map(str(out / name))).schema
        assert [(f.name, f.type, f.metadata[b"stable_datasets.feature"]) for f in schema] == [
            (name, kind, tag) for name, (kind, tag) in THEIR_TYPES.items()
        ]
    back = se.load(out)  # our features ride in the shards' schema metadata: names kept without features=
    assert back.features == ds.features
    _assert_rows(back, jpegs, 40)


def test_export_for_stable_datasets_with_jpeg_builders_and_long_label_lists(home: Path, tmp_path: Path) -> None:
    names = [f"class-{i}" for i in range(7)]
    features = Features(photo=Image(), label=ClassLabel(names=names), x=Value("int32"))
    ds = se.build([{"photo": jpeg_bytes(1), "label": 6, "x": 3}], features, name="n", home=home, progress=False)
    out = se.export(ds, tmp_path / "c", layout="stable-datasets", image_encoding="JPEG", compression="zstd")
    text = "{'photo': Image(encode_format='JPEG'), 'label': ClassLabel(num_classes=7), 'x': Value('int32')}"
    raw = _checked_as_their_reader_does(out, text)
    assert raw["compression"] == "zstd"
    assert se.load(out, features=features)[0]["label"] == 6


def test_export_for_stable_datasets_writes_a_video_as_its_path(home: Path, tmp_path: Path) -> None:
    features = Features(clip=se.Video(), x=Value("int32"))
    ds = se.build([{"clip": "a.mp4", "x": 1}], features, name="v", home=home, progress=False)
    out = ds.export(tmp_path / "v", layout="stable-datasets")
    _checked_as_their_reader_does(out, "{'clip': Video(), 'x': Value('int32')}")
    assert se.load(out)[0]["clip"].path == "a.mp4"


def test_export_for_stable_datasets_names_the_fixed_length_sequence_it_cannot_hold(home: Path, tmp_path: Path) -> None:
    features = Features(x=Value("int32"), vec=se.Sequence(Value("float32"), length=3))
    ds = se.build([{"x": 1, "vec": [0.0, 1.0, 2.0]}], features, name="s", home=home, progress=False)
    with pytest.raises(SchemaError) as caught:
        ds.export(tmp_path / "s", layout="stable-datasets")
    message = str(caught.value)
    assert "column 'vec': a fixed-length Sequence (length=3) has no counterpart" in message
    assert "a Sequence without length= have" in message
    assert not (tmp_path / "s").exists()


def test_an_empty_lance_cache_opens_with_its_columns(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    lance.write_dataset(pa.RecordBatchReader.from_batches(_their_schema(), iter([])), str(folder))
    meta = {"cache_format_version": 1, "format": "lance", "layout": "lance-rows", "num_rows": 0}
    (folder / "_metadata.json").write_text(json.dumps(meta))
    ds = se.load(folder, features=_features())
    assert len(ds) == 0
    assert list(se.load(folder).features) == ["image", "label", "score"]


def test_export_in_their_lance_layout_opens_back_with_names(home: Path, tmp_path: Path, jpegs: list[bytes]) -> None:
    rows = [{"image": jpegs[i], "label": NAMES[i % 3], "score": i / 4} for i in range(40)]
    ds = se.build(rows, _features(), name="pets", home=home, progress=False)
    out = ds.export(tmp_path / "pets_lance", layout="stable-datasets-lance", batch_size=16)

    raw = json.loads((out / "_metadata.json").read_text())
    assert raw == {
        "cache_format_version": 1,
        "format": "lance",
        "layout": "lance-rows",
        "schema_fingerprint": THEIR_FINGERPRINT,
        "num_rows": 40,
    }
    schema = lance.dataset(str(out)).schema
    assert [(f.name, f.type, f.metadata[b"stable_datasets.feature"]) for f in schema] == [
        (name, kind, tag) for name, (kind, tag) in THEIR_TYPES.items()
    ]
    back = se.load(out, home=home)
    assert back.features == ds.features
    _assert_rows(back, jpegs, 40)
