"""Compile, into ``$NUMBA_CACHE_DIR``, the numba kernels the tests would otherwise each compile first (CI only).

Run by ``.ci/run`` in the background while mypy and pytest start: importing umap compiles pynndescent's
distances and trees (numba caches those itself), and one small approximate-neighbours call compiles the
graph kernels stable-explore asks numba to keep (:func:`stable_explore.signals.neighbors.cache_pynndescent_kernels`).
A test's first approximate-neighbours call then loads them instead of compiling ~30 s of CPU. The
arguments' types, not their sizes, decide what numba compiles: float32 vectors and the default metric,
as the tests use.
"""

from __future__ import annotations

import time

import numpy as np

started = time.perf_counter()
import umap  # noqa: E402, F401  (compiles and caches pynndescent's own cached kernels)

imported = time.perf_counter()
from stable_explore.signals import neighbors  # noqa: E402

vectors = np.random.default_rng(0).normal(size=(400, 12)).astype(np.float32)
neighbors.nearest_neighbors(vectors, 10, backend="pynndescent")
graph = time.perf_counter() - imported
print(f"numba kernels compiled ahead: import umap {imported - started:.0f} s, pynndescent's graph {graph:.0f} s")
