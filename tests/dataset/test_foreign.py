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
from tests.conftest import NAMES

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
