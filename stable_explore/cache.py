"""stable-datasets' names for the shard cache (its writer and ``ArrowBackend``), over :mod:`stable_explore.storage`.

A cache directory holds ``shard-NNNNN.arrow`` files and ``_metadata.json``; see
:mod:`stable_explore.storage.format.cache_meta` for the format. These names stay where
stable-datasets put them, so code written against it keeps working.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.cache import write_sharded_arrow_cache, read_sharded_cache_meta
>>> home = pathlib.Path(tempfile.mkdtemp())
>>> meta = write_sharded_arrow_cache(({"x": i} for i in range(5)), Features(x=Value("int64")), home / "c")
>>> meta.num_rows, meta.num_shards
(5, 1)
>>> read_sharded_cache_meta(home / "c").shard_filenames
['shard-00000.arrow']
"""

from __future__ import annotations

from stable_explore.storage.check.verify import VerifyReport, verify
from stable_explore.storage.format.cache_meta import DEFAULT_SHARD_SIZE_BYTES, ShardedCacheMeta
from stable_explore.storage.read.open_meta import read_sharded_cache_meta, validate_sharded_cache
from stable_explore.storage.read.shard_file import open_shard, read_shard
from stable_explore.storage.write.writer import write_sharded_arrow_cache

__all__ = [
    "DEFAULT_SHARD_SIZE_BYTES",
    "ShardedCacheMeta",
    "VerifyReport",
    "open_shard",
    "read_shard",
    "read_sharded_cache_meta",
    "validate_sharded_cache",
    "verify",
    "write_sharded_arrow_cache",
]
