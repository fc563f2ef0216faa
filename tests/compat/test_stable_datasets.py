"""stable_explore.compat.stable_datasets: the names stable-datasets' code imports, answered by our own code.

(Its own test files run against this module in benchmarks/compat_stable_datasets.py, which needs its
source; these tests are ours.)
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import itertools
import json
import pickle
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore.compat.stable_datasets import (
    BaseDatasetBuilder,
    ClassLabel,
    DatasetInfo,
    Features,
    Image,
    LanceBackend,
    ShardShuffleSampler,
    Split,
    SplitGenerator,
    StableDataset,
    StableIterableDataset,
    Value,
    Version,
    read_sharded_cache_meta,
    validate_sharded_cache,
    write_lance_cache,
    write_sharded_arrow_cache,
)
from stable_explore.testing import write_stable_datasets_v1_cache
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
        shard_size_bytes=100,
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
    in_order = [row["x"] for row in ds.iter_epoch(shuffle_shards=False)]
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


def test_builder_passes_build_options_on_and_keeps_the_splits_own_kwargs(tmp_path: Path) -> None:
    built = _Tiny(split="test", processed_cache_dir=tmp_path, progress=False, description="three rows")
    assert [row["x"] for row in built] == [0, 1, 2]
    with pytest.raises(ValueError, match=r"gen_kwargs \(\['n'\]\); set them in _split_generators"):
        _Tiny(split="test", processed_cache_dir=tmp_path, kwargs={"n": 5})


# -- StableDataset: views, formats, map, columns ----------------------------------------------------------------


def _numbers(tmp_path: Path, n: int = 10, shard_size_bytes: float = float("inf")) -> StableDataset:
    meta = write_sharded_arrow_cache(
        ((i, {"x": i, "label": i % 2}) for i in range(n)),
        _features(),
        tmp_path / "numbers",
        shard_size_bytes=shard_size_bytes,
        batch_size=5,
    )
    return StableDataset(_features(), shard_paths=meta.shard_paths, shard_row_counts=meta.shard_row_counts)


def _pictures(tmp_path: Path, n: int = 5) -> StableDataset:
    features = Features({"image": Image(), "label": Value("int32")})
    rows = ((i, {"image": np.full((4, 6, 3), i * 10, np.uint8), "label": i}) for i in range(n))
    meta = write_sharded_arrow_cache(rows, features, tmp_path / "pictures", batch_size=5)
    return StableDataset(features, shard_paths=meta.shard_paths, shard_row_counts=meta.shard_row_counts)


def _xs(ds: StableDataset) -> list[int]:
    return [row["x"] for row in ds]


def test_views_compose_keep_their_rows_through_pickle_and_refuse_rows_out_of_range(tmp_path: Path) -> None:
    ds = _numbers(tmp_path)
    picked = ds.select([3, 1, 4, 1, 5])
    assert _xs(picked) == [3, 1, 4, 1, 5]
    assert _xs(picked.select([0, 2])) == [3, 4]  # positions in the view, not in the cache
    assert _xs(ds[2:8][1:3]) == [3, 4]
    assert [picked[i]["x"] for i in (-1, -5)] == [5, 3]
    assert _xs(ds.shuffle(seed=7)) == [int(i) for i in np.random.default_rng(7).permutation(10)]
    again = pickle.loads(pickle.dumps(picked))
    assert _xs(again) == [3, 1, 4, 1, 5]
    assert len(pickle.dumps(picked)) < 4096  # paths and positions, never the rows
    assert (ds.num_rows, picked.num_rows, ds.column_names) == (10, 5, ["x", "label"])
    with pytest.raises(IndexError, match=r"row 5 is out of range for a dataset of 5 rows"):
        picked[5]
    with pytest.raises(IndexError, match="row -6"):
        picked.select([-6])
    assert picked.table.column("x").to_pylist() == [3, 1, 4, 1, 5]


def test_a_row_is_read_at_any_integer_index_and_refused_at_anything_else(tmp_path: Path) -> None:
    ds = _numbers(tmp_path, n=4)
    assert ds[np.int64(2)]["x"] == 2
    assert [row["x"] for row in ds.__getitems__([np.int32(3), 0])] == [3, 0]  # a DataLoader's batched read
    for bad in ("1", 1.0):
        with pytest.raises(TypeError, match=f"indexed by an int or a slice, got {type(bad).__name__}"):
            ds.__getitems__([bad])
        with pytest.raises(TypeError, match=f"got {type(bad).__name__}"):
            ds[bad]


def test_train_test_split_is_disjoint_complete_and_the_same_for_the_same_seed(tmp_path: Path) -> None:
    ds = _numbers(tmp_path, n=20)
    split = ds.train_test_split(test_size=0.25, seed=3)
    train, test = _xs(split["train"]), _xs(split["test"])
    assert (len(train), len(test)) == (15, 5)
    assert sorted(train + test) == list(range(20))
    assert _xs(ds.train_test_split(test_size=0.25, seed=3)["test"]) == test
    assert _xs(ds.train_test_split(test_size=0.25, seed=4)["test"]) != test
    on_a_view = ds.select(list(range(10, 20))).train_test_split(test_size=0.5, seed=1)
    assert sorted(_xs(on_a_view["train"]) + _xs(on_a_view["test"])) == list(range(10, 20))


def test_filter_keeps_rows_one_at_a_time_or_in_batches_of_stored_values(tmp_path: Path) -> None:
    ds = _numbers(tmp_path, n=10)
    assert _xs(ds.filter(lambda row: row["x"] > 5)) == [6, 7, 8, 9]
    batches: list[int] = []

    def big(batch: dict[str, list[int]]) -> list[bool]:
        batches.append(len(batch["x"]))
        return [x > 5 for x in batch["x"]]

    assert _xs(ds.filter(big, batched=True, batch_size=3)) == [6, 7, 8, 9]
    assert batches == [3, 3, 3, 1]
    assert _xs(ds.select([9, 0, 7]).filter(big, batched=True)) == [9, 7]  # on a view: its positions, its order
    with pytest.raises(ValueError, match=r"returned 1 flags for a batch of 3 rows \(rows 0 to 2\)"):
        ds.filter(lambda batch: [True], batched=True, batch_size=3)
    with pytest.raises(ValueError, match=r"returned bool for rows 0 to 2; return a list of one flag per row"):
        ds.filter(lambda batch: True, batched=True, batch_size=3)


def test_formats_decode_images_as_asked_and_survive_views(tmp_path: Path) -> None:
    from PIL import Image as PILImage

    ds = _pictures(tmp_path)
    assert isinstance(ds[0]["image"], PILImage.Image)
    assert ds[0]["image"].size == (6, 4)
    as_arrays = ds.with_format("numpy")
    assert as_arrays[2]["image"].shape == (4, 6, 3)
    assert int(as_arrays[2]["image"][0, 0, 0]) == 20
    assert isinstance(as_arrays.select([1]).shuffle(seed=1)[0]["image"], np.ndarray)  # the format stays on views
    assert isinstance(ds.with_format("raw")[0]["image"], bytes)
    assert isinstance(ds.set_decode(False)[0]["image"], bytes)
    rows = ds.__getitems__([4, 1, 4, 0])
    assert [row["label"] for row in rows] == [4, 1, 4, 0]
    with pytest.raises(ValueError, match="format 'tensorflow' is not one of"):
        ds.with_format("tensorflow")


def test_torch_format_gives_channels_first_images_and_tensor_labels(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    rows = _pictures(tmp_path).with_format("torch").__getitems__([3, 1])
    assert [tuple(row["image"].shape) for row in rows] == [(3, 4, 6), (3, 4, 6)]
    assert isinstance(rows[0]["label"], torch.Tensor)
    assert int(rows[0]["label"]) == 3


def test_with_transform_changes_each_row_as_it_is_read_and_the_dataset_stays(tmp_path: Path) -> None:
    ds = _numbers(tmp_path, n=5)
    plus = ds.with_transform(lambda row: {**row, "x": row["x"] + 100})
    assert [plus[i]["x"] for i in range(5)] == [100, 101, 102, 103, 104]
    assert _xs(plus.select([4, 0])) == [104, 100]
    assert _xs(ds) == [0, 1, 2, 3, 4]
    assert _xs(plus.with_transform(None)) == [0, 1, 2, 3, 4]


def test_map_writes_a_new_cache_of_the_function_rows(tmp_path: Path) -> None:
    ds = _numbers(tmp_path, n=10)
    doubled = ds.map(lambda row: {"x": row["x"] * 2, "label": row["label"]}, cache_dir=tmp_path / "out")
    assert json.loads((tmp_path / "out" / "_metadata.json").read_text())["num_rows"] == 10
    assert _xs(doubled) == [2 * i for i in range(10)]
    assert doubled._backend.is_file_backed
    batched = ds.map(lambda b: {"x": [x + 10 for x in b["x"]], "label": b["label"]}, batched=True, batch_size=4)
    assert _xs(batched) == list(range(10, 20))
    indexed = ds.select([3, 1]).map(lambda row, i: {**row, "where": i}, with_indices=True)
    assert [(r["x"], r["where"]) for r in indexed] == [(3, 0), (1, 1)]
    assert indexed.features["where"] == Value("int64")  # a new column's type comes from its values
    assert indexed.features["label"] == ds.features["label"]  # the dataset's columns keep theirs
    dropped = ds.map(lambda row: row, remove_columns=["label"])
    assert dropped.column_names == ["x"]
    assert list(dropped[0]) == ["x"]
    with pytest.raises(ValueError, match=r"columns of different lengths \[1, 2\]"):
        ds.map(lambda b: {"x": b["x"][:1], "label": b["label"][:2]}, batched=True, batch_size=2)
    with pytest.raises(ValueError, match=r"returned column 'label' as int for rows 0 to 1; return a list"):
        ds.map(lambda b: {"x": b["x"], "label": 0}, batched=True, batch_size=2)


def test_column_changes_give_a_new_dataset_and_leave_the_old_one(tmp_path: Path) -> None:
    ds = _numbers(tmp_path, n=10)
    view = ds.select([0, 2, 4])
    added = view.add_column("idx", [10, 20, 30])
    assert [(r["x"], r["idx"]) for r in added] == [(0, 10), (2, 20), (4, 30)]
    assert added.features["idx"] == Value("int64")
    lists = view.add_column("pair", np.array([[1, 2], [3, 4], [5, 6]]).tolist())
    assert type(lists.features["pair"]).__name__ == "Sequence"
    assert ds.remove_columns("label").column_names == ["x"]
    assert ds.remove_columns(["label"])[0] == {"x": 0}
    assert ds.rename_column("label", "target")[1] == {"x": 1, "target": 1}
    assert ds.rename_columns({"x": "value", "label": "target"}).column_names == ["value", "target"]
    assert ds.column_names == ["x", "label"]
    with pytest.raises(ValueError, match="column 'idx' has 2 values; the dataset has 3 rows"):
        view.add_column("idx", [1, 2])
    with pytest.raises(ValueError, match="column 'x' exists already"):
        ds.add_column("x", list(range(10)))
    with pytest.raises(ValueError, match="no column 'y' to remove"):
        ds.remove_columns("y")


def test_validation_errors_use_stable_datasets_words_and_name_the_file(tmp_path: Path) -> None:
    meta = write_sharded_arrow_cache(
        ((i, {"x": i, "label": 0}) for i in range(50)), _features(), tmp_path / "c", shard_size_bytes=256
    )
    with pytest.raises(ValueError, match="Schema fingerprint mismatch"):
        validate_sharded_cache(tmp_path / "c", Features({"y": Value("float64")}))
    (tmp_path / "c" / meta.shard_filenames[-1]).unlink()
    with pytest.raises(ValueError, match=f"Missing shard file '{meta.shard_filenames[-1]}'"):
        read_sharded_cache_meta(tmp_path / "c")


# -- iterable and sampler ------------------------------------------------------------------------------------------


def test_iterable_yields_each_row_once_shuffled_per_epoch_and_transformed(tmp_path: Path) -> None:
    ds = _numbers(tmp_path, n=40, shard_size_bytes=128)
    assert ds._backend.num_shards > 2
    assert _xs(StableIterableDataset(ds)) == list(range(40))
    stream = ds.as_iterable(shuffle=True, seed=5, buffer_size=8)
    first = _xs(stream)
    assert sorted(first) == list(range(40))
    assert first != list(range(40))
    assert _xs(stream) == first  # the same epoch: the same order
    stream.set_epoch(1)
    assert sorted(_xs(stream)) == list(range(40))
    assert _xs(stream) != first
    plus = StableIterableDataset(ds.select([5, 6]), transform=lambda row: {**row, "x": row["x"] + 1})
    assert _xs(plus) == [6, 7]


@pytest.mark.filterwarnings("ignore:lance is not fork-safe")  # other tests import lance; these workers never use it
def test_iterable_splits_rows_between_dataloader_workers_and_pickles(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    many = _numbers(tmp_path / "many", n=30, shard_size_bytes=128)  # more shards than workers: shards split
    one = _numbers(tmp_path / "one", n=30).select(list(range(30))).map(lambda row: {**row, "x": row["x"] + 100})
    assert one._backend.num_shards == 1  # fewer shards than workers: rows split
    streams = [StableIterableDataset(ds, shuffle=True, seed=0, buffer_size=4) for ds in (many, one)]
    assert isinstance(streams[0], torch.utils.data.IterableDataset)
    assert _xs(pickle.loads(pickle.dumps(streams[0]))) == _xs(streams[0])  # a spawned worker gets the same rows
    loader = torch.utils.data.DataLoader(torch.utils.data.ChainDataset(streams), batch_size=None, num_workers=2)
    seen = [int(row["x"]) for row in loader]
    assert sorted(seen) == list(range(30)) + list(range(100, 130))  # every row once across both workers


def _shard_of(meta_counts: list[int]) -> dict[int, int]:
    starts = np.cumsum([0, *meta_counts])
    return {i: int(np.searchsorted(starts, i, side="right") - 1) for i in range(int(starts[-1]))}


def test_sampler_visits_shards_whole_in_a_seeded_order(tmp_path: Path) -> None:
    ds = _numbers(tmp_path, n=40, shard_size_bytes=128)
    counts = ds._backend.shard_row_counts
    shard_of = _shard_of(counts)
    sampler = ShardShuffleSampler(ds, seed=42)
    order = list(sampler)
    assert sorted(order) == list(range(40))
    assert len(sampler) == 40
    runs = [shard_of[order[0]]] + [shard_of[b] for a, b in itertools.pairwise(order) if shard_of[a] != shard_of[b]]
    assert sorted(runs) == list(range(len(counts)))  # each shard one run: never revisited
    assert list(ShardShuffleSampler(ds, seed=42)) == order
    assert list(ShardShuffleSampler(ds, seed=43)) != order
    assert list(pickle.loads(pickle.dumps(sampler))) == order
    sampler.set_epoch(1)
    assert list(sampler) != order
    sequential = list(ds.make_sampler("shard_shuffle", seed=0, within_shard="sequential"))
    for shard in range(len(counts)):
        inside = [i for i in sequential if shard_of[i] == shard]
        assert inside == sorted(inside)
    assert list(ShardShuffleSampler(ds.select([7, 3, 9]), seed=1, within_shard="sequential")) == [0, 1, 2]
    with pytest.raises(ValueError, match="within_shard must be one of"):
        ShardShuffleSampler(ds, within_shard="neither")
    with pytest.raises(ValueError, match="Unknown sampler kind: 'nonexistent'"):
        ds.make_sampler("nonexistent")


def test_lance_cache_is_read_through_its_fragments(tmp_path: Path) -> None:
    pytest.importorskip("lance")
    meta = write_lance_cache(((i, {"x": i, "label": i % 2}) for i in range(12)), _features(), tmp_path / "l")
    assert meta.num_rows == 12
    ds = StableDataset(_features(), backend=LanceBackend(uri=tmp_path / "l"))
    assert _xs(ds.select([11, 0, 11])) == [11, 0, 11]
    assert sorted(ShardShuffleSampler(ds, seed=3)) == list(range(12))
    again = pickle.loads(pickle.dumps(ds))
    assert again[5] == {"x": 5, "label": 1}
    assert sorted(_xs(ds.as_iterable(shuffle=True, seed=1))) == list(range(12))


# -- stable-datasets' own Features handed to se.load ----------------------------------------------------------------


class _Theirs:
    """Stand-ins for stable-datasets' feature types, from its documented API: what counts is each class's name
    and its public attributes (``dtype``, ``names``, ``feature``, ``encode_format``)."""

    class Value:
        def __init__(self, dtype: str) -> None:
            self.dtype = dtype

    class ClassLabel:
        def __init__(self, names: list[str]) -> None:
            self.names = list(names)
            self.num_classes = len(names)

    class Image:
        def __init__(self, encode_format: str = "PNG") -> None:
            self.encode_format = encode_format

    class Sequence:
        def __init__(self, feature: object) -> None:
            self.feature = feature

    class Array4D:
        def __init__(self, shape: tuple[int, ...]) -> None:
            self.shape = shape

    class Features(OrderedDict):  # type: ignore[type-arg]
        def fingerprint_data(self) -> str:
            return repr(dict(self))


def _their_features(names: tuple[str, ...] = ("a", "b", "c")) -> _Theirs.Features:
    return _Theirs.Features(
        image=_Theirs.Image(),
        label=_Theirs.ClassLabel(list(names)),
        x=_Theirs.Value("int32"),
        tags=_Theirs.Sequence(_Theirs.Value("string")),
    )


def _png(i: int) -> bytes:
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.fromarray(np.full((4, 6, 3), i * 20, np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def _check_rows(ds: object) -> None:
    from PIL import Image as PILImage

    row = ds[4]  # type: ignore[index]
    assert isinstance(row["image"], PILImage.Image)
    assert np.asarray(row["image"])[0, 0, 0] == 80
    assert (row["label"], row["x"], row["tags"]) == (1, 4, ["t4"])
    assert ds.features["label"].names == ("a", "b", "c")  # type: ignore[attr-defined]


def test_their_features_open_a_cache_of_their_first_arrow_revision(tmp_path: Path) -> None:
    # stable-datasets 37ff322 wrote version-1 metadata and no layout name, as our writer of its format 1 does
    table = pa.table(
        {
            "image": pa.array([_png(i) for i in range(6)], pa.binary()),
            "label": pa.array([i % 3 for i in range(6)], pa.int64()),
            "x": pa.array(range(6), pa.int32()),
            "tags": pa.array([[f"t{i}"] for i in range(6)], pa.list_(pa.string())),
        }
    )
    write_stable_datasets_v1_cache(tmp_path / "old", [table.slice(0, 3), table.slice(3)])
    _check_rows(se.load(tmp_path / "old", features=_their_features(), home=tmp_path / "home"))


def test_their_features_open_their_arrow_and_lance_layouts_and_are_checked(tmp_path: Path) -> None:
    ours = se.Features(
        image=se.Image(),
        label=se.ClassLabel(names=["a", "b", "c"]),
        x=se.Value("int32"),
        tags=se.Sequence(se.Value("string")),
    )
    rows = [{"image": _png(i), "label": i % 3, "x": i, "tags": [f"t{i}"]} for i in range(6)]
    ds = se.build(rows, ours, name="pets", home=tmp_path / "home", progress=False)
    layouts = ["stable-datasets"] + (["stable-datasets-lance"] if importlib.util.find_spec("lance") else [])
    for layout in layouts:
        folder = ds.export(tmp_path / layout, layout=layout)
        _check_rows(se.load(folder, features=_their_features(), home=tmp_path / "home"))
        with pytest.raises(ValueError, match="schema_fingerprint"):  # other class names: not the builder's features
            se.load(folder, features=_their_features(("a", "b", "d")), home=tmp_path / "home")


def test_their_feature_type_without_a_counterpart_is_named(tmp_path: Path) -> None:
    write_stable_datasets_v1_cache(tmp_path / "old", [pa.table({"x": pa.array([1], pa.int32())})])
    with pytest.raises(ValueError, match="column 'clip': Array4D is not a feature type stable-explore reads"):
        se.load(tmp_path / "old", features=_Theirs.Features(clip=_Theirs.Array4D((2, 2, 2, 3))))


def test_flatten_indices_writes_a_view_as_its_own_cache(tmp_path: Path) -> None:
    ds = _numbers(tmp_path, n=10)
    assert ds.flatten_indices() is ds  # not a view: nothing to write
    flat = ds.select([7, 2, 7]).with_format("numpy").flatten_indices(tmp_path / "flat")
    assert _xs(flat) == [7, 2, 7]
    assert flat._backend.num_shards == 1
    assert json.loads((tmp_path / "flat" / "_metadata.json").read_text())["num_rows"] == 3
    assert flat.features == ds.features


def test_class_names_compare_equal_to_a_list_and_stay_immutable(tmp_path: Path) -> None:
    label = ClassLabel(names=["a", "b"])
    assert label.names == ["a", "b"]
    assert label.names + ["c"] == ["a", "b", "c"]  # noqa: RUF005  # what code written for a list does
    assert label == se.ClassLabel(names=["a", "b"])  # the same feature as ours
    assert hash(label) == hash(se.ClassLabel(names=["a", "b"]))
    with pytest.raises(AttributeError):
        label.names.append("c")  # type: ignore[attr-defined]
    ds = _numbers(tmp_path)
    assert pickle.loads(pickle.dumps(ds)).features["label"].names == ["a", "b"]


def test_writer_lays_out_stable_datasets_arrow_shards_and_leaves_nothing_else(tmp_path: Path) -> None:
    rows = [(i, {"x": i, "label": i % 2}) for i in range(30)]
    meta = write_sharded_arrow_cache(iter(rows), _features(), tmp_path / "c", batch_size=10, compression="zstd")
    raw = json.loads((tmp_path / "c" / "_metadata.json").read_text())
    assert (raw["format"], raw["layout"], raw["cache_format_version"], raw["compression"]) == (
        "arrow",
        "arrow-shards",
        1,
        "zstd",
    )
    assert raw["schema_fingerprint"] == hashlib.sha256(_features().fingerprint_data().encode()).hexdigest()[:16]
    assert (meta.num_rows, meta.num_shards, meta.compression) == (30, 1, "zstd")
    assert se.load(tmp_path / "c", home=tmp_path / "home")[3] == {"x": 3, "label": 1}  # names ride along
    write_sharded_arrow_cache(iter(rows[:5]), _features(), tmp_path / "c")  # a second write replaces the first
    assert read_sharded_cache_meta(tmp_path / "c").num_rows == 5

    def failing() -> Iterator[tuple[int, dict[str, int]]]:
        yield 0, {"x": 0, "label": 0}
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError, match="source broke"):
        write_sharded_arrow_cache(failing(), _features(), tmp_path / "d")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]  # no staging folder or lock left
    other_names = Features({"x": Value("int32"), "label": ClassLabel(names=["a", "c"])})
    with pytest.raises(ValueError, match="Schema fingerprint mismatch"):  # same types, other class names
        validate_sharded_cache(tmp_path / "c", other_names)
    assert validate_sharded_cache(tmp_path / "c", _features()).num_rows == 5


def test_a_dataloader_reads_batches_in_the_sampler_order(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    ds = _numbers(tmp_path, n=24, shard_size_bytes=128).with_format("torch")
    sampler = ds.make_sampler("shard_shuffle", seed=9)
    loader = torch.utils.data.DataLoader(ds, batch_size=5, sampler=sampler)
    batches = list(loader)
    assert [len(b["x"]) for b in batches] == [5, 5, 5, 5, 4]
    assert torch.cat([b["x"] for b in batches]).tolist() == list(sampler)  # the rows, in the sampler's order
    assert torch.cat([b["label"] for b in batches]).tolist() == [i % 2 for i in sampler]
