"""stable-explore: cache notebook generators into sharded Arrow, browse, clean, compare, export.

Example
-------
>>> import stable_explore as se
>>> se.Features(label=se.ClassLabel(names=["cat", "dog"]))
Features(label=ClassLabel(names=['cat', 'dog']))
"""

from __future__ import annotations

from stable_explore.cache import verify
from stable_explore.errors import (
    CacheCorruptionError,
    CacheNotFoundError,
    EncodingError,
    SchemaError,
    StableExploreError,
    UnsafePathError,
)
from stable_explore.schema import Array3D, ClassLabel, Features, Image, Sequence, Value, Video

__version__ = "0.1.0"

__all__ = [
    "Array3D",
    "CacheCorruptionError",
    "CacheNotFoundError",
    "ClassLabel",
    "EncodingError",
    "Features",
    "Image",
    "SchemaError",
    "Sequence",
    "StableExploreError",
    "UnsafePathError",
    "Value",
    "Video",
    "__version__",
    "verify",
]
