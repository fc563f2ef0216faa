"""stable_explore.compat.stable_datasets: the names stable-datasets' code imports, answered by our own code.

(Its own test files run against this module in benchmarks/compat_stable_datasets.py, which needs its
source; these tests are ours.)
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from stable_explore.compat.stable_datasets import (
    BaseDatasetBuilder,
    ClassLabel,
    DatasetInfo,
    Features,
    Image,
    Split,
    SplitGenerator,
    StableDataset,
    Value,
    Version,
    write_sharded_arrow_cache,
)
from tests.conftest import jpeg_bytes


def _features() -> Features:
    return Features({"x": Value("int32"), "label": ClassLabel(names=["a", "b"])})


def test_features_are_ordered_and_print_the_text_stable_datasets_fingerprints() -> None:
    features = Features()
    features["b"] = Value("int32")
    features["a"] = Value("int32")
    assert isinstance(features, OrderedDict)
    assert features.fingerprint_data() == "{'b': Value('int32'), 'a': Value('int32')}"
    assert features.to_arrow_schema().names == ["b", "a"]


def test_writer_and_dataset_over_its_shards(tmp_path: Path) -> None:
    meta = write_sharded_arrow_cache(
        ((i, {"x": i, "label": i % 2}) for i in range(60)),
        _features(),
        tmp_path / "c",
        shard_size_bytes=256,
        batch_size=10,
        lineage={"source": "test"},
    )
    assert meta.num_shards > 2
    assert json.loads((tmp_path / "c" / "_metadata.json").read_text())["lineage"] == {"source": "test"}
    ds = StableDataset(
        features=_features(),
        info=DatasetInfo(features=_features()),
        shard_paths=meta.shard_paths,
        shard_row_counts=meta.shard_row_counts,
        num_rows=meta.num_rows,
    )
    assert [ds[i]["x"] for i in (0, 59, -1)] == [0, 59, 59]
    with pytest.raises(IndexError):
        ds[60]
    assert [row["x"] for row in ds[2:5]] == [2, 3, 4]
    in_order = [row["x"] for row in ds.iter_epoch()]
    shuffled = [row["x"] for row in ds.iter_epoch(shuffle_shards=True, seed=3)]
    assert in_order == list(range(60))
    assert sorted(shuffled) == in_order
    assert shuffled != in_order
    again = pickle.loads(pickle.dumps(ds))
    assert again[7] == {"x": 7, "label": 1}
    assert len(pickle.dumps(ds)) < 4096
    assert ds.table.num_rows == 60


def test_an_empty_cache_is_an_empty_dataset(tmp_path: Path) -> None:
    meta = write_sharded_arrow_cache(iter([]), _features(), tmp_path / "c")
    ds = StableDataset(features=_features(), shard_paths=meta.shard_paths, shard_row_counts=[], num_rows=0)
    assert len(ds) == 0
    assert list(ds) == []
    assert ds.table.num_rows == 0
    with pytest.raises(IndexError):
        ds[0]


def test_image_encode_keeps_bytes_and_encodes_pictures(tmp_path: Path) -> None:
    data = jpeg_bytes(3)
    assert Image().encode(data) == data
    (tmp_path / "a.jpg").write_bytes(data)
    assert Image().encode(str(tmp_path / "a.jpg")) == data
    assert Image().encode(None) is None


class _Tiny(BaseDatasetBuilder):
    VERSION = Version("0.0.1")
    SOURCE: ClassVar[dict[str, object]] = {"homepage": "https://example.com", "citation": "none", "assets": {}}

    def _info(self) -> DatasetInfo:
        return DatasetInfo(features=Features({"x": Value("int32")}))

    def _split_generators(self) -> list[SplitGenerator]:
        return [
            SplitGenerator(name=Split.TRAIN, gen_kwargs={"n": 12}),
            SplitGenerator(name="test", gen_kwargs={"n": 3}),
        ]

    def _generate_examples(self, n: int) -> Iterator[tuple[int, dict[str, int]]]:
        for i in range(n):
            yield i, {"x": i}


def test_builder_builds_each_split_once(tmp_path: Path) -> None:
    train = _Tiny(split="train", processed_cache_dir=tmp_path)
    assert [row["x"] for row in train] == list(range(12))
    assert len(_Tiny(split="test", processed_cache_dir=tmp_path)) == 3
    versions = sorted(p.name for p in tmp_path.glob("*/versions/*"))
    assert len(_Tiny(split="train", processed_cache_dir=tmp_path)) == 12
    assert sorted(p.name for p in tmp_path.glob("*/versions/*")) == versions  # a cache hit: nothing rebuilt
    with pytest.raises(ValueError, match="no split 'validation'"):
        _Tiny(split="validation", processed_cache_dir=tmp_path)
    assert Version("1.2.3") == Version("1.2.3")
    assert hashlib.sha256(Features({"x": Value("int32")}).fingerprint_data().encode()).hexdigest()
