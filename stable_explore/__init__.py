"""stable-explore: cache notebook generators into sharded Arrow, browse, clean, compare, export.

Examples
--------
>>> import stable_explore as se
>>> se.Features(label=se.ClassLabel(names=["cat", "dog"]))
Features(label=ClassLabel(names=['cat', 'dog']))
"""

from __future__ import annotations

import logging

from stable_explore.api import browse, build, compare, datasets, fsck, gc, load, tag, verify, versions
from stable_explore.api_formats import export, from_lance
from stable_explore.api_interop import concatenate_datasets, from_hf, from_pandas, from_parquet
from stable_explore.api_labels import from_coco, from_yolo
from stable_explore.api_transfer import pull, push
from stable_explore.dataset import CachedDataset
from stable_explore.errors import (
    AnnotationError,
    CacheCorruptionError,
    CacheNotFoundError,
    CacheWriteError,
    ColumnNotFoundError,
    DuplicateKeyError,
    EmptyBuildError,
    EmptyBuildWarning,
    EncodingError,
    ExportTargetError,
    GcProblemWarning,
    ImageTooLargeError,
    InvalidArgumentTypeError,
    InvalidNameError,
    InvalidOptionError,
    LeaseLostError,
    LockTimeoutError,
    LockWaitWarning,
    MissingDependencyError,
    NotACacheError,
    NotInCatalogError,
    ParallelBuildError,
    RemoteStoreError,
    RowIndexError,
    SchemaError,
    StableCacheError,
    StableExploreError,
    StableExploreWarning,
    UnfingerprintableWarning,
    UnsafePathError,
    VideoDecodeError,
)
from stable_explore.evaluation import evaluate
from stable_explore.schema import (
    Array3D,
    Boxes,
    ClassLabel,
    Features,
    Image,
    Keypoints,
    Mask,
    Sequence,
    Value,
    Video,
    VideoFile,
)

__version__ = "0.1.0"

# the package logs (widgets' errors, with a bug's traceback) but stays silent until the user configures logging
logging.getLogger("stable_explore").addHandler(logging.NullHandler())


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext stable_explore``: register ``%stable_cache`` and ``%stable_ls`` (imports IPython only now)."""
    from stable_explore.magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext stable_explore``."""
    from stable_explore.magic import unload_ipython_extension as unload

    unload(ipython)


__all__ = [
    # schema
    "Features",
    "Value",
    "ClassLabel",
    "Image",
    "Array3D",
    "Sequence",
    "Video",
    "VideoFile",
    "Boxes",
    "Mask",
    "Keypoints",
    # building, loading, the catalog
    "build",
    "load",
    "datasets",
    "versions",
    "tag",
    "gc",
    "evaluate",
    "verify",
    "fsck",
    "browse",
    "compare",
    "push",
    "pull",
    "from_hf",
    "from_coco",
    "from_yolo",
    "concatenate_datasets",
    "from_parquet",
    "from_pandas",
    "from_lance",
    "export",
    "CachedDataset",
    # errors
    "StableExploreError",
    "EncodingError",
    "DuplicateKeyError",
    "SchemaError",
    "CacheNotFoundError",
    "AnnotationError",
    "CacheCorruptionError",
    "CacheWriteError",
    "UnsafePathError",
    "VideoDecodeError",
    "ImageTooLargeError",
    "ColumnNotFoundError",
    "InvalidArgumentTypeError",
    "InvalidNameError",
    "InvalidOptionError",
    "ExportTargetError",
    "MissingDependencyError",
    "NotACacheError",
    "NotInCatalogError",
    "ParallelBuildError",
    "RemoteStoreError",
    "LeaseLostError",
    "LockTimeoutError",
    "LockWaitWarning",
    "EmptyBuildWarning",
    "EmptyBuildError",
    "GcProblemWarning",
    "RowIndexError",
    "StableCacheError",
    # warnings
    "StableExploreWarning",
    "UnfingerprintableWarning",
    "__version__",
]
