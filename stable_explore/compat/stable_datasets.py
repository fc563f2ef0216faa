"""The names stable-datasets' tests import (cache, dataset, schema, splits, utils), answered by stable-explore.

``benchmarks/compat_stable_datasets.py`` puts this module in place of ``stable_datasets.cache``,
``.dataset``, ``.schema``, ``.splits`` and ``.utils`` and runs stable-datasets' own ``test_cache.py``
and ``test_schema.py``; docs/format.md lists the result and classifies every failure. The same names
help a user port code written for stable-datasets:

- ``write_sharded_arrow_cache(generator, features, cache_dir, ...)`` writes a stable-explore cache
  (keys, row hashes, batch digests, features in the metadata) with our writer; ``num_encode_workers``
  is accepted and unused (our encoder works a column batch at a time);
- ``read_sharded_cache_meta``, ``validate_sharded_cache``, ``read_shard``: ours;
- ``StableDataset(features=, info=, shard_paths=, shard_row_counts=, num_rows=)``: a
  :class:`~stable_explore.CachedDataset` over those shards, with its ``iter_epoch``;
- ``Features`` is ours, also an ``OrderedDict``, with ``fingerprint_data()`` giving the text
  stable-datasets fingerprints; the feature types are ours (``Value``, ``ClassLabel``, ``Image``, ...);
- ``BaseDatasetBuilder``: ``Builder(split=..., processed_cache_dir=...)`` builds (or finds) the split
  with :func:`stable_explore.build`, in a catalog at ``processed_cache_dir``.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore.compat.stable_datasets import ClassLabel, Features, Value, write_sharded_arrow_cache
>>> features = Features({"x": Value("int32"), "label": ClassLabel(names=["a", "b"])})
>>> features.fingerprint_data()
"{'x': Value('int32'), 'label': ClassLabel(names=['a', 'b'])}"
>>> meta = write_sharded_arrow_cache(((i, {"x": i, "label": i % 2}) for i in range(4)), features,
...                                  pathlib.Path(tempfile.mkdtemp()) / "c")
>>> StableDataset(features=features, shard_paths=meta.shard_paths, shard_row_counts=meta.shard_row_counts,
...               num_rows=meta.num_rows)[3]
{'x': 3, 'label': 1}
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from stable_explore import api
from stable_explore.dataset import CachedDataset
from stable_explore.errors import InvalidOptionError, RowIndexError
from stable_explore.schema import Array3D, ClassLabel, Sequence, Value, Video
from stable_explore.schema import Features as _Features
from stable_explore.schema import Image as _Image
from stable_explore.storage.format.cache_meta import (
    ShardedCacheMeta,
    read_shard,
    read_sharded_cache_meta,
    validate_sharded_cache,
)
from stable_explore.storage.format.stable_datasets import fingerprint_text
from stable_explore.storage.write.writer import write_sharded_arrow_cache as _write

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Array3D",
    "BaseDatasetBuilder",
    "ClassLabel",
    "DatasetInfo",
    "Features",
    "Image",
    "Sequence",
    "ShardedCacheMeta",
    "Split",
    "SplitGenerator",
    "StableDataset",
    "Value",
    "Version",
    "Video",
    "read_shard",
    "read_sharded_cache_meta",
    "validate_sharded_cache",
    "write_sharded_arrow_cache",
]


class Features(_Features, OrderedDict):  # type: ignore[misc,type-arg]  # both dicts; ours first, for its methods
    """Our :class:`~stable_explore.Features`, also an ``OrderedDict`` as stable-datasets' is."""

    def fingerprint_data(self) -> str:
        """The text stable-datasets hashes into ``schema_fingerprint`` (its ``repr`` of the features)."""
        return fingerprint_text(self)


@dataclass(frozen=True, repr=False)
class Image(_Image):
    """Our :class:`~stable_explore.Image`, with stable-datasets' name for encoding one value."""

    def encode(self, value: Any, *, cache_dir: Path | None = None) -> Any:
        """The bytes stored for ``value`` (bytes as given, a file's bytes, a PIL image or array encoded)."""
        del cache_dir  # stable-datasets copies video inputs there; images need nothing
        return self.encode_value(value)


@dataclass
class DatasetInfo:
    """What a builder says about its dataset (stable-datasets' fields)."""

    features: _Features
    description: str = ""
    supervised_keys: tuple[Any, ...] | None = None
    homepage: str = ""
    citation: str = ""
    license: str = ""
    config_name: str = ""


class Version:
    """A ``major.minor.patch`` version string."""

    def __init__(self, text: str) -> None:
        parts = text.split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            msg = f"Version string must be 'major.minor.patch', got {text!r}"
            raise InvalidOptionError(msg)
        self.major, self.minor, self.patch = (int(p) for p in parts)
        self._text = text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Version({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(self._text)


class Split:
    """Split names."""

    TRAIN = "train"
    TEST = "test"
    VALIDATION = "validation"


@dataclass
class SplitGenerator:
    """One split: its name and the keyword arguments of ``_generate_examples``."""

    name: str
    gen_kwargs: dict[str, Any]


def write_sharded_arrow_cache(
    generator: Iterable[Any],
    features: _Features,
    cache_dir: Path | str,
    *,
    shard_size_bytes: float = float("inf"),
    batch_size: int = 1000,
    compression: str | None = None,
    num_encode_workers: int = 0,
    single_file: bool = False,
    lineage: Mapping[str, Any] | None = None,
) -> ShardedCacheMeta:
    """stable-datasets' writer signature over ours (``float("inf")``, its default, is one shard)."""
    del num_encode_workers  # ours encodes a column batch at a time
    size = sys.maxsize if single_file or shard_size_bytes == float("inf") else int(shard_size_bytes)
    extra = {"lineage": dict(lineage)} if lineage else None
    return _write(
        generator,
        features,
        Path(cache_dir),
        shard_size_bytes=size,
        batch_size=batch_size,
        compression=compression,
        extra_metadata=extra,
    )


class StableDataset:
    """stable-datasets' dataset over a cache's shards: a :class:`~stable_explore.CachedDataset` inside."""

    def __init__(
        self,
        features: _Features,
        info: DatasetInfo | None = None,
        shard_paths: Seq[Path] | None = None,
        shard_row_counts: Seq[int] | None = None,
        num_rows: int | None = None,
        *,
        dataset: CachedDataset | None = None,
    ) -> None:
        self.features = features
        self.info = info if info is not None else DatasetInfo(features=features)
        if dataset is None and shard_paths:
            dataset = CachedDataset(read_sharded_cache_meta(Path(shard_paths[0]).parent))
        self._dataset = dataset
        self._num_rows = len(dataset) if dataset is not None else int(num_rows or 0)

    @classmethod
    def of(cls, dataset: CachedDataset, info: DatasetInfo | None = None) -> StableDataset:
        """Wrap a stable-explore dataset."""
        return cls(dataset.features, info, dataset=dataset)

    def __len__(self) -> int:
        return self._num_rows

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            if self._dataset is None:
                return self
            return StableDataset(self.features, self.info, dataset=self._dataset[key])
        if self._dataset is None:
            msg = f"row {key} is out of range for a dataset of 0 rows"
            raise RowIndexError(msg)
        return self._dataset[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._dataset) if self._dataset is not None else iter(())

    def iter_epoch(self, *, shuffle_shards: bool = False, seed: int | None = None) -> Iterator[Any]:
        """The rows shard by shard; with ``shuffle_shards``, the shards in a random order (``seed``)."""
        if self._dataset is None:
            return
        counts = self._dataset.shard_row_counts
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        order = np.arange(len(counts))
        if shuffle_shards:
            np.random.default_rng(seed).shuffle(order)
        for shard in order:
            yield from self._dataset[int(starts[shard]) : int(starts[shard + 1])]

    @property
    def table(self) -> pa.Table:
        """Every row as one Arrow table."""
        if self._dataset is None:
            return self.features.to_arrow_schema().empty_table()
        return self._dataset.to_arrow()

    def __getstate__(self) -> dict[str, Any]:
        return {"features": self.features, "info": self.info, "dataset": self._dataset, "num_rows": self._num_rows}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.features, self.info = state["features"], state["info"]
        self._dataset, self._num_rows = state["dataset"], state["num_rows"]


class BaseDatasetBuilder:
    """stable-datasets' builder: ``Builder(split=..., processed_cache_dir=...)`` is the split, built once."""

    VERSION: ClassVar[Version]
    SOURCE: ClassVar[Mapping[str, Any]]

    def __new__(cls, split: str = Split.TRAIN, processed_cache_dir: str | Path | None = None, **options: Any) -> Any:
        """The split as a :class:`StableDataset` (see :meth:`as_dataset`), as stable-datasets' builders return."""
        return super().__new__(cls).as_dataset(split, processed_cache_dir, **options)

    def as_dataset(self, split: str, processed_cache_dir: str | Path | None = None, **options: Any) -> StableDataset:
        """The split, built with :func:`stable_explore.build` into a catalog at ``processed_cache_dir`` (once)."""
        info = self._info()
        generators = {g.name: g for g in self._split_generators()}
        if split not in generators:
            msg = f"no split {split!r}; the builder has {sorted(generators)}"
            raise InvalidOptionError(msg)
        name = f"{type(self).__name__.strip('_').lower()}-{split}"
        built = api.build(
            self._generate_examples,
            info.features,
            name=name,
            kwargs=dict(generators[split].gen_kwargs),
            home=processed_cache_dir,
            progress=False,
            **options,
        )
        return StableDataset.of(built, info)

    def _info(self) -> DatasetInfo:
        raise NotImplementedError

    def _split_generators(self) -> list[SplitGenerator]:
        raise NotImplementedError

    def _generate_examples(self, **kwargs: Any) -> Iterator[tuple[Any, dict[str, Any]]]:
        raise NotImplementedError
