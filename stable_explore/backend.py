"""stable-datasets' ``ArrowBackend``, by its name, over ``stable_explore.storage.read``.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.cache import write_sharded_arrow_cache
>>> from stable_explore.backend import ArrowBackend
>>> meta = write_sharded_arrow_cache(({"x": i} for i in range(3)), Features(x=Value("int64")),
...                                  pathlib.Path(tempfile.mkdtemp()) / "c")
>>> ArrowBackend.from_meta(meta).take([2]).column("x").to_pylist()
[2]
"""

from __future__ import annotations

from stable_explore.storage.read.reader import ArrowBackend

__all__ = ["ArrowBackend"]
