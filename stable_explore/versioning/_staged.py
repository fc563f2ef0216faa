"""A save written into its staging folder, and what it hands the version it publishes instead of a read back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from stable_explore.storage.format.cache_meta import METADATA_FILE
from stable_explore.storage.format.cell_patches import PATCHES
from stable_explore.storage.format.content_runs import RUNS

if TYPE_CHECKING:
    from pathlib import Path

    from stable_explore.storage.format.cache_meta import ShardedCacheMeta
    from stable_explore.storage.format.cell_patches import CellPatches, ParentPatches
    from stable_explore.storage.format.content_runs import ParentRuns
    from stable_explore.storage.write.shards import ShardList
    from stable_explore.storage.write.writer import ShardFields

__all__ = ["Staged"]


@dataclass(frozen=True)
class Staged:
    """A save written into its staging folder: the shard fields to publish, the shards, and the rows' segments."""

    fields: ShardFields
    shards: ShardList
    segments: list[list[int]]
    note: str = ""
    """What else the save wrote, for its ``build_info`` (column groups)."""
    unsynced: tuple[Path, ...] = ()
    """Small files written without their fsync (``stage(defer_sync=True)``): the publish flushes them."""
    runs: tuple[list[tuple[int, str]], ParentRuns | None] | None = None
    """The content runs written, and the parent's runs file they were spliced against (None: not known)."""
    patches: tuple[CellPatches, ParentPatches | None] | None = None
    """The cell patches written, and the parent's patches file they were spliced against (None: none, or not known)."""

    def remember_in(self, meta: ShardedCacheMeta) -> None:
        """Give ``meta`` (the published version's, just read) the runs and patches this save holds, not read back.

        Not for a version in a bucket: its folder here mirrors the metadata only, and the small files a
        next save links from it are there once read (fetched) from the bucket.
        """
        if meta.remote is not None:
            return
        meta_path = meta.cache_dir / METADATA_FILE
        if self.runs is not None and isinstance(meta.content_runs_field, dict):
            runs, parent = self.runs
            runs_file = RUNS.written(meta.content_runs_field, runs, parent, meta.cache_dir, meta_path)
            if runs_file is not None:
                meta.remember_small_files(runs=(runs, runs_file))
        if self.patches is not None and isinstance(meta.cell_patches_field, dict):
            patches, parent_patches = self.patches
            entries = patches.entries
            written = PATCHES.written(meta.cell_patches_field, entries, parent_patches, meta.cache_dir, meta_path)
            if written is not None:
                meta.remember_small_files(patches=(patches, written))
