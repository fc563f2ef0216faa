"""The user-facing functions the package root re-exports, one module per job.

- :mod:`~stable_explore.api.building`: ``build``, ``load``, ``browse``, ``compare`` (and ``BuildKwargs``,
  the options every build-like function takes);
- :mod:`~stable_explore.api.catalog`: the catalog's listings and upkeep (``datasets``, ``versions``,
  ``tag``, ``gc``, ``verify``, ``fsck``);
- :mod:`~stable_explore.api.interop`: Hugging Face ``datasets``, Parquet, pandas, ``concatenate_datasets``;
- :mod:`~stable_explore.api.labels`: COCO and YOLO detection sets;
- :mod:`~stable_explore.api.formats`: ``from_lance`` and ``export``;
- :mod:`~stable_explore.api.transfer`: ``push`` and ``pull`` between homes.

The magic and the command line call these same functions. Each name is imported from its module
when first used, so ``from stable_explore.api import build`` imports neither the labels' readers
nor Hugging Face's converters.

Examples
--------
>>> import tempfile
>>> from stable_explore.api import build, versions
>>> from stable_explore import Features, Value
>>> home = tempfile.mkdtemp()
>>> ds = build([{"x": 1}], Features(x=Value("int64")), name="one", home=home, progress=False)
>>> len(versions("one", home=home))
1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stable_explore._lazy import lazy_exports

if TYPE_CHECKING:  # the names themselves, for type checkers; at run time each imports when first used
    from stable_explore.api.building import (
        BuildKwargs,
        browse,
        build,
        build_from_options,
        compare,
        load,
    )
    from stable_explore.api.catalog import datasets, fsck, gc, tag, verify, versions
    from stable_explore.api.formats import export, from_lance
    from stable_explore.api.interop import concatenate_datasets, from_hf, from_pandas, from_parquet
    from stable_explore.api.labels import from_coco, from_yolo
    from stable_explore.api.transfer import pull, push

# each name and its module (keep it the same as the imports above: tests/test_import_time.py checks)
_LAZY = {
    **dict.fromkeys(["BuildKwargs", "browse", "build", "build_from_options", "compare", "load"], ".building"),
    **dict.fromkeys(["datasets", "fsck", "gc", "tag", "verify", "versions"], ".catalog"),
    **dict.fromkeys(["export", "from_lance"], ".formats"),
    **dict.fromkeys(["concatenate_datasets", "from_hf", "from_pandas", "from_parquet"], ".interop"),
    **dict.fromkeys(["from_coco", "from_yolo"], ".labels"),
    **dict.fromkeys(["pull", "push"], ".transfer"),
}
if not TYPE_CHECKING:  # hidden from type checkers: to them a name not imported above is a typo
    __getattr__, __dir__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "BuildKwargs",
    "browse",
    "build",
    "build_from_options",
    "compare",
    "concatenate_datasets",
    "datasets",
    "export",
    "fsck",
    "from_coco",
    "from_hf",
    "from_lance",
    "from_pandas",
    "from_parquet",
    "from_yolo",
    "gc",
    "load",
    "pull",
    "push",
    "tag",
    "verify",
    "versions",
]
