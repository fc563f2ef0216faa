"""The dataset layer: :class:`CachedDataset` and the views, decoding, export and splits it is made of.

``cached_dataset`` holds the class; ``_selection`` (rows a view selects), ``_rows`` (take, select, filter),
``_habits`` (the other ``datasets`` names), ``_text_export`` (to_dict, to_csv, to_json), ``_concatenate``
(``se.concatenate_datasets``), ``_decoding`` (output formats),
``_export`` (pandas, Arrow, Parquet), ``_splits``, ``_sharding`` and ``_iterable`` (rows split over nodes and
DataLoader workers) are its parts. ``_export_target`` is the one check of where an export may write, and
:func:`export_layout` the one rule of which layout a path names.
"""

from __future__ import annotations

from stable_explore.dataset._export_target import export_file, export_folder
from stable_explore.dataset._formats import EXPORT_LAYOUTS, FILE_LAYOUTS, export_layout
from stable_explore.dataset.cached_dataset import CachedDataset, Metadata

__all__ = [
    "EXPORT_LAYOUTS",
    "FILE_LAYOUTS",
    "CachedDataset",
    "Metadata",
    "export_file",
    "export_folder",
    "export_layout",
]
