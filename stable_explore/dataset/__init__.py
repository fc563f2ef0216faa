"""The dataset layer: :class:`CachedDataset` and the views, decoding, export and splits it is made of.

``cached_dataset`` holds the class; ``_selection`` (rows a view selects), ``_rows`` (take, select, filter),
``_habits`` (the other ``datasets`` names), ``_text_export`` (to_dict, to_csv, to_json), ``_concatenate``
(``se.concatenate_datasets``), ``_decoding`` (output formats),
``_export`` (pandas, Arrow, Parquet), ``_splits``, ``_sharding`` and ``_iterable`` (rows split over nodes and
DataLoader workers) are its parts. ``_export_target`` is the one check of where an export may write, and
:func:`export_layout` the one rule of which layout a path names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stable_explore._lazy import lazy_exports

if TYPE_CHECKING:  # the names themselves, for type checkers; at run time each imports when first used
    from stable_explore.dataset._export_target import export_file, export_folder
    from stable_explore.dataset._formats import EXPORT_LAYOUTS, FILE_LAYOUTS, export_layout
    from stable_explore.dataset.cached_dataset import CachedDataset, Metadata

# Each name and its module, imported when first used: the CLI's parser reads FILE_LAYOUTS (its export choices)
# without importing CachedDataset, pyarrow and numpy (issue 39). Keep it the same as the imports above
# (tests/test_import_time.py checks).
_LAZY = {
    **dict.fromkeys(["export_file", "export_folder"], "._export_target"),
    **dict.fromkeys(["EXPORT_LAYOUTS", "FILE_LAYOUTS", "export_layout"], "._formats"),
    **dict.fromkeys(["CachedDataset", "Metadata"], ".cached_dataset"),
}
if not TYPE_CHECKING:  # hidden from type checkers: to them a name not imported above is a typo
    __getattr__, __dir__ = lazy_exports(
        __name__,
        _LAZY,
        (
            "cached_dataset",
            "map_options",
            "video_probes",
        ),  # its public modules, reached as attributes as when this imported them
    )

__all__ = [
    "EXPORT_LAYOUTS",
    "FILE_LAYOUTS",
    "CachedDataset",
    "Metadata",
    "export_file",
    "export_folder",
    "export_layout",
]
