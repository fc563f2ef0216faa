"""Progress bars for long work: tqdm.auto (a widget in notebooks, text in terminals), fed by the writer's callback.

Examples
--------
>>> with progress_bar("digits", 3, disable=True) as on_batch:
...     on_batch(3, 1024)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from stable_explore._units import format_size

__all__ = ["bytes_bar", "progress_bar", "saving_bar"]


@contextlib.contextmanager
def progress_bar(
    name: str, total: int | None, *, verb: str = "caching", disable: bool = False
) -> Iterator[Callable[[int, int], None]]:
    """A bar of rows (and bytes written) for work on dataset ``name``; yields the (rows, bytes) callback."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit=" rows", unit_scale=True, desc=f"{verb} {name}", dynamic_ncols=True, disable=disable)

    def on_batch(rows: int, nbytes: int) -> None:
        bar.set_postfix_str(f"{format_size(nbytes)} written", refresh=False)
        bar.update(rows)

    try:
        yield on_batch
    finally:
        bar.close()


def saving_bar(name: str, total: int | None) -> contextlib.AbstractContextManager[Callable[[int, int], None]]:
    """The bar shown while a version is saved."""
    return progress_bar(name, total, verb="saving")


@contextlib.contextmanager
def bytes_bar(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A bar of bytes (copying a version between homes); yields the callback fed each file's size."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=description, dynamic_ncols=True)
    try:
        yield bar.update
    finally:
        bar.close()
