"""Keeping an evaluation with its rows: its per-row outcomes added to the evaluated dataset as a new version."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from stable_explore.errors import InvalidOptionError

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["keep_outcomes"]


def keep_outcomes(
    dataset: CachedDataset | None, columns: Mapping[str, object], message: str, *, tag: str | None, progress: bool
) -> CachedDataset:
    """``dataset`` with ``columns`` added (``ds.add_columns``), as a new version saying ``message``."""
    if dataset is None:
        msg = "this result was made from arrays, not by se.evaluate(ds, ...): pass its columns() to ds.add_columns"
        raise InvalidOptionError(msg)
    return dataset.add_columns(columns, message=message, tag=tag, progress=progress)
