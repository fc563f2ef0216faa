"""stable-explore: cache notebook generators into sharded Arrow, browse, clean, compare, export.

Examples
--------
>>> import stable_explore as se
>>> se.Features(label=se.ClassLabel(names=["cat", "dog"]))
Features(label=ClassLabel(names=['cat', 'dog']))
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from stable_explore._lazy import lazy_exports
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

if TYPE_CHECKING:  # the names themselves, for type checkers and IDEs; at run time each imports when first used
    from stable_explore.api.building import browse, build, compare, load
    from stable_explore.api.catalog import datasets, fsck, gc, tag, verify, versions
    from stable_explore.api.formats import export, from_lance
    from stable_explore.api.interop import concatenate_datasets, from_hf, from_pandas, from_parquet
    from stable_explore.api.labels import from_coco, from_yolo
    from stable_explore.api.transfer import pull, push
    from stable_explore.dataset import CachedDataset
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

# Each public name and the module it is imported from when first used (``se.build``, ``from stable_explore
# import load``): a bare ``import stable_explore`` (the magic's ``%load_ext``, every ``stable-explore`` command,
# each DataLoader worker) imports no catalog, pyarrow.compute, pandas or widgets. Keep it the same as the
# ``if TYPE_CHECKING:`` imports above (tests/test_import_time.py checks).
_LAZY = {
    **dict.fromkeys(["browse", "build", "compare", "load"], ".api.building"),
    **dict.fromkeys(["datasets", "fsck", "gc", "tag", "verify", "versions"], ".api.catalog"),
    **dict.fromkeys(["export", "from_lance"], ".api.formats"),
    **dict.fromkeys(["concatenate_datasets", "from_hf", "from_pandas", "from_parquet"], ".api.interop"),
    **dict.fromkeys(["from_coco", "from_yolo"], ".api.labels"),
    **dict.fromkeys(["pull", "push"], ".api.transfer"),
    "CachedDataset": ".dataset",
    "evaluate": ".evaluation",
    **dict.fromkeys(
        [
            "Array3D",
            "Boxes",
            "ClassLabel",
            "Features",
            "Image",
            "Keypoints",
            "Mask",
            "Sequence",
            "Value",
            "Video",
            "VideoFile",
        ],
        ".schema",
    ),
}
# se.display.show, se.catalog.Catalog, ...: the sub-packages, imported when first reached
_SUBPACKAGES = (
    "api",
    "catalog",
    "dataset",
    "display",
    "evaluation",
    "io",
    "schema",
    "signals",
    "storage",
    "versioning",
    "widgets",
)
if not TYPE_CHECKING:  # hidden from type checkers: to them a name not imported above is a typo, as it should be
    __getattr__, __dir__ = lazy_exports(
        __name__,
        _LAZY,
        _SUBPACKAGES,
    )

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
