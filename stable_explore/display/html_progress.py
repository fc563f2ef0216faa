"""A progress bar for notebooks that outlives its kernel: one HTML output, updated in place.

tqdm's notebook bar is an ipywidget: once its kernel is gone (the notebook saved and reopened on
a new kernel), JupyterLab shows "Error displaying widget: model not found" in its place. This bar
is plain HTML in an output with a display id, replaced as the work goes on (at most ten times a
second) and left, when done, as a static line that says what was done. Its surface is the part of
tqdm's that :mod:`stable_explore.display.progress` uses (``update``, ``set_postfix_str``,
``set_description``, ``n``, ``total``, ``colour``, ``close``).

Examples
--------
>>> bar = HtmlBar(total=3, desc="caching digits", unit=" rows", show=False)
>>> bar.update(3)
>>> bar.close()
>>> "3/3 rows" in bar.html() and "done" in bar.html()
True
"""

from __future__ import annotations

import html
import time
import uuid
from typing import Any

from stable_explore._units import format_size

__all__ = ["HtmlBar", "in_notebook"]

_MIN_INTERVAL_S = 0.1
_STYLE = (
    "display:flex;gap:8px;align-items:center;flex-wrap:wrap;font-size:12px;"
    "font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:var(--jp-ui-font-color1,#1f2328)"
)


def in_notebook() -> bool:
    """True in a Jupyter kernel (where outputs are HTML), False in a terminal or a plain IPython shell."""
    import sys

    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class HtmlBar:
    """A progress bar drawn as HTML in one notebook output (see the module's docstring)."""

    def __init__(
        self,
        total: int | None = None,
        *,
        desc: str = "",
        unit: str = "",
        unit_scale: bool = False,
        show: bool = True,
        **_: object,  # tqdm's other options (dynamic_ncols, unit_divisor) mean nothing here
    ) -> None:
        self.total = total
        self.n = 0
        self.desc = desc
        self.unit = unit
        self.bytes = unit.strip() == "B" and unit_scale
        self.postfix = ""
        self.colour: str | None = None
        self.closed = False
        self._started = time.monotonic()
        self._drawn = 0.0
        self._show = show
        self._display_id = f"se-progress-{uuid.uuid4().hex}"
        if show:
            self._publish(update=False)

    # -- tqdm's surface --------------------------------------------------------------------------

    def update(self, n: int = 1) -> None:
        """Count ``n`` more done."""
        self.n += n
        self._refresh()

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        """Say ``text`` after the count (the bytes written, or what failed)."""
        self.postfix = text
        if refresh:
            self._refresh()

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        """Say ``desc`` before the count."""
        self.desc = desc or ""
        if refresh:
            self._refresh()

    def close(self) -> None:
        """Draw the bar a last time, as what was done; it is static HTML from now on."""
        if self.closed:
            return
        self.closed = True
        if self._show:
            self._publish(update=True)

    # -- drawing ------------------------------------------------------------------------------

    def _count(self, value: float) -> str:
        return format_size(int(value)) if self.bytes else f"{int(value):,}"

    def text(self) -> str:
        """The bar as one line of text: ``caching digits: 1,797/1,797 rows · 408.6 KiB written · 0.3 s``."""
        total = "?" if self.total is None else self._count(self.total)
        unit = "" if self.bytes else self.unit
        parts = [f"{self._count(self.n)}/{total}{unit}"]
        if self.postfix:
            parts.append(self.postfix)
        parts.append(f"{time.monotonic() - self._started:.1f} s")
        state = " done" if self.closed and self.colour != "red" else ""  # a failed bar's description says so
        return f"{self.desc}{state}: {' · '.join(parts)}"

    def html(self) -> str:
        """The bar as HTML: a ``<progress>`` (full when done) and the text line, escaped."""
        failed = self.colour == "red"
        if self.total:
            value = f" value='{min(self.n, self.total)}' max='{self.total}'"
        elif self.closed:
            value = " value='1' max='1'"
        else:
            value = ""  # an unknown total: the browser's indeterminate bar
        colour = ";color:var(--jp-error-color1,#d1242f)" if failed else ""
        return (
            f"<div class='se-progress' data-testid='se-progress' data-done='{str(self.closed).lower()}' "
            f"style='{_STYLE}{colour}'><progress{value} style='width:14em'></progress>"
            f"<span>{html.escape(self.text())}</span></div>"
        )

    def _refresh(self) -> None:
        if self._show and not self.closed and time.monotonic() - self._drawn >= _MIN_INTERVAL_S:
            self._publish(update=True)

    def _publish(self, *, update: bool) -> None:
        import IPython.display

        display: Any = IPython.display.display  # untyped
        update_display: Any = IPython.display.update_display
        self._drawn = time.monotonic()
        bundle = {"text/html": self.html(), "text/plain": self.text()}
        if update:
            update_display(bundle, raw=True, display_id=self._display_id)
        else:
            display(bundle, raw=True, display_id=self._display_id)
