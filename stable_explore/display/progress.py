"""Progress bars for long work, fed by the writer's callback: HTML in notebooks, tqdm's text in terminals.

In a notebook the bar is one HTML output updated in place (:class:`~.html_progress.HtmlBar`), not
an ipywidget, so a saved notebook reopened on a new kernel shows the finished bar rather than
"Error displaying widget: model not found". A bar whose total was unknown ends showing the count.

Counts are shown as they are (``1797/1797 rows``, not ``1.80k``), the bytes beside them are the
bytes written so far, and a bar whose work fails is closed in red with what failed and where.

Examples
--------
>>> with progress_bar("digits", 3, disable=True) as on_batch:
...     on_batch(3, 1024)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from stable_explore._units import format_size
from stable_explore.display.html_progress import HtmlBar, in_notebook

__all__ = ["bytes_bar", "failure_text", "progress_bar", "saving_bar"]


def failure_text(exc: BaseException, rows_done: int) -> str:
    """What a failed bar says: the error, the row it names (if any) and the rows done before it.

    Examples
    --------
    >>> failure_text(KeyboardInterrupt(), 1000)
    'interrupted after 1,000 rows'
    >>> class Bad(ValueError):
    ...     index = 1234
    >>> failure_text(Bad("no"), 1000)
    'Bad at row 1,234 (1,000 rows written before)'
    """
    if isinstance(exc, KeyboardInterrupt):
        return f"interrupted after {rows_done:,} rows"
    index = getattr(exc, "index", None)
    where = f" at row {index:,}" if isinstance(index, int) else ""
    return f"{type(exc).__name__}{where} ({rows_done:,} rows written before)"


@contextlib.contextmanager
def progress_bar(
    name: str,
    total: int | None,
    *,
    verb: str = "caching",
    disable: bool = False,
    rate: bool = True,
    count_bytes: bool = True,
) -> Iterator[Callable[[int, int], None]]:
    """A bar of rows (and bytes written) for work on dataset ``name``; yields the (rows, bytes) callback.

    The callback may be called with 0 rows to report the final byte count once files are closed.
    ``rate=False`` leaves out rows per second (a save links most rows: its rate means nothing);
    ``count_bytes=False`` leaves out the bytes (work that writes nothing as it goes, such as a signal).
    """
    bar_format = None  # tqdm's default line; a notebook's HTML bar never shows a rate
    if not rate:  # an unknown total is set to the count when the work ends: the line then reads 100%
        bar_format = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} rows [{elapsed}{postfix}]"
    bar: Any = _bar(
        total=total, unit=" rows", unit_scale=False, desc=f"{verb} {name}", disable=disable, bar_format=bar_format
    )
    written = 0

    def on_batch(rows: int, nbytes: int) -> None:
        nonlocal written
        written = max(written, nbytes)  # bytes only grow: a callback from before a file closed never lowers them
        if count_bytes:
            bar.set_postfix_str(_written_text(written, rate), refresh=rows == 0)
        if rows:
            bar.update(rows)

    try:
        yield on_batch
        if bar.total is None:  # known now: the bar ends "1,797/1,797 rows", not "1,797/?"
            bar.total = bar.n
    except BaseException as exc:
        if not disable:
            bar.colour = "red"
            bar.set_description(f"{verb} {name}: failed", refresh=False)
            bar.set_postfix_str(failure_text(exc, int(bar.n)), refresh=False)
            bar.close()
        raise
    finally:
        bar.close()


def _bar(*, total: int | None, disable: bool = False, **options: Any) -> Any:
    """An HTML bar in a notebook, tqdm's text bar elsewhere (a disabled bar draws nothing)."""
    if in_notebook() and not disable:
        return HtmlBar(total, **options)
    from tqdm.std import tqdm

    return tqdm(total=total, dynamic_ncols=True, disable=disable, **options)


def _written_text(written: int, rate: bool) -> str:
    """The bytes beside the count; a save that rewrote no row says what it did instead of "0 B written"."""
    if written == 0 and not rate:
        return "rows kept in place, none rewritten"
    return f"{format_size(written)} written"


def saving_bar(name: str, total: int | None) -> contextlib.AbstractContextManager[Callable[[int, int], None]]:
    """The bar shown while a version is saved: rows and bytes, no rate (kept rows are not copied)."""
    return progress_bar(name, total, verb="saving", rate=False)


@contextlib.contextmanager
def bytes_bar(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A bar of bytes (copying a version between homes); yields the callback fed each file's size."""
    bar = _bar(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=description)
    try:
        yield bar.update
    finally:
        bar.close()
