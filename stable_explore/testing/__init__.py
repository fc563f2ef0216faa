"""Test helpers for stable-explore and code on it: tiny caches, stable-datasets' format-1 writer, the store suite.

Examples
--------
>>> import tempfile
>>> from stable_explore.testing import tiny_dataset
>>> ds = tiny_dataset(tempfile.mkdtemp(), rows=6)
>>> len(ds), ds.label_counts()
(6, {'cat': 2, 'dog': 2, 'bird': 2})
"""

from __future__ import annotations

from stable_explore.testing.caches import TINY_NAMES, tiny_dataset, tiny_features, write_stable_datasets_v1_cache

__all__ = ["TINY_NAMES", "tiny_dataset", "tiny_features", "write_stable_datasets_v1_cache"]
