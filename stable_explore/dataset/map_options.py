"""The options of ``ds.map``, declared once: the method takes them as ``**options`` and hands them on as they are.

``CachedDataset.map`` (the dataset layer) and ``versioning.columns.map_rows`` (the layer that writes the new
version) both read this declaration, so the two can never list different options or different types.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, TypedDict

from stable_explore.errors import InvalidArgumentTypeError

if TYPE_CHECKING:
    from stable_explore.schema import Features
    from stable_explore.schema.base import Feature

__all__ = ["MapOptions", "check_map_options"]


class MapOptions(TypedDict, total=False):
    """The keyword options of :meth:`CachedDataset.map` (each is described there, with its default).

    Examples
    --------
    >>> from stable_explore.dataset.map_options import MapOptions, check_map_options
    >>> options: MapOptions = {"batched": True, "batch_size": 64}
    >>> check_map_options(options)
    >>> check_map_options({"batchsize": 64})
    Traceback (most recent call last):
    ...
    stable_explore.errors.InvalidArgumentTypeError: map() got an unexpected option 'batchsize'; its options are: batch_size, batched, executor, features, force, message, num_proc, progress, set_latest, tag
    """  # noqa: E501

    batched: bool
    batch_size: int
    num_proc: int | None
    executor: Executor | None
    features: Features | Mapping[str, Feature] | None
    message: str | None
    tag: str | None
    force: bool
    progress: bool
    set_latest: bool


def check_map_options(options: Mapping[str, object]) -> None:
    """Refuse an option ``map`` does not have (a misspelt one would otherwise be ignored at run time)."""
    known = MapOptions.__optional_keys__ | MapOptions.__required_keys__
    unknown = sorted(set(options) - known)
    if unknown:
        msg = f"map() got an unexpected option {unknown[0]!r}; its options are: {', '.join(sorted(known))}"
        raise InvalidArgumentTypeError(msg)
