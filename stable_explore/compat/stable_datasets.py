"""stable-datasets' public API (cache, dataset, iterable, samplers, backends, schema, ...) over stable-explore.

``benchmarks/compat_stable_datasets.py`` puts this module in place of stable-datasets' modules and
runs its own ``test_cache.py``, ``test_dataset.py``, ``test_iterable.py``, ``test_samplers.py`` and
``test_schema.py``; docs/format.md lists the result. The same names let a user port code written for
stable-datasets by changing the import:

- ``write_sharded_arrow_cache(generator, features, cache_dir, ...)`` checks and encodes rows with our
  writer and lays them out in its ``arrow-shards`` layout (its reader opens them);
  ``write_lance_cache`` in its ``lance-rows`` layout;
- ``read_sharded_cache_meta``, ``validate_sharded_cache`` (its fingerprint check on its layouts),
  ``read_shard``: ours, refusals worded as its reader words them;
- ``StableDataset``: rows from a backend (:class:`ArrowBackend`, :class:`LanceBackend`, or a
  stable-explore version), views that hold positions only, formats, transforms, ``map``, column
  changes; ``StableIterableDataset`` and ``ShardShuffleSampler`` feed it to a torch DataLoader;
- ``Features`` is ours, also an ``OrderedDict``, with ``fingerprint_data()`` giving the text
  stable-datasets fingerprints; the feature types are ours (``ClassLabel.names`` compares equal to a list);
- ``BaseDatasetBuilder``: ``Builder(split=..., processed_cache_dir=...)`` builds (or finds) the split
  with :func:`stable_explore.build`, in a catalog at ``processed_cache_dir``.

The names are defined by job in the modules beside this one, as stable-datasets defines them by
module: ``_schema`` (features, ``DatasetInfo``, ``Version``), ``_cache`` (writers and readers),
``_backends``, ``_dataset`` (``StableDataset``), ``_loading`` (iterable and sampler) and
``_builder`` (``BaseDatasetBuilder``, splits). Import them from here.

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

from stable_explore.compat._backends import ArrowBackend, LanceBackend, StorageBackend
from stable_explore.compat._builder import BaseDatasetBuilder, Split, SplitGenerator
from stable_explore.compat._cache import (
    Example,
    LanceCacheMeta,
    read_shard,
    read_sharded_cache_meta,
    validate_sharded_cache,
    write_lance_cache,
    write_sharded_arrow_cache,
)
from stable_explore.compat._dataset import StableDataset
from stable_explore.compat._loading import Row, ShardShuffleSampler, StableIterableBase, Transform, iterable_class
from stable_explore.compat._schema import ClassLabel, ClassNames, DatasetInfo, Features, Image, Version
from stable_explore.schema import Array3D, Sequence, Value, Video
from stable_explore.storage.format.cache_meta import ShardedCacheMeta

__all__ = [
    "Array3D",
    "ArrowBackend",
    "BaseDatasetBuilder",
    "ClassLabel",
    "ClassNames",
    "DatasetInfo",
    "Example",
    "Features",
    "Image",
    "LanceBackend",
    "LanceCacheMeta",
    "Row",
    "Sequence",
    "ShardShuffleSampler",
    "ShardedCacheMeta",
    "Split",
    "SplitGenerator",
    "StableDataset",
    "StableIterableDataset",  # noqa: F822  # made on first use (module __getattr__)
    "StorageBackend",
    "Transform",
    "Value",
    "Version",
    "Video",
    "read_shard",
    "read_sharded_cache_meta",
    "validate_sharded_cache",
    "write_lance_cache",
    "write_sharded_arrow_cache",
]


def __getattr__(name: str) -> type[StableIterableBase]:
    if name == "StableIterableDataset":  # a torch IterableDataset when torch is installed: made on first use
        return iterable_class()
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
