"""The confusion-matrix widget: a classifier's counts, each cell a click away from its rows in the browser.

Rows are the true class, columns the predicted one (the order of ``r.names``), each count shaded by its
size. A click on a cell points an attached shard browser at exactly ``r.rows(true=, pred=)``
(``browser.show_rows``); a click on a class name shows that class's precision, recall, f1 and support
(``r.report()``). What a click does lives here in Python, so it is tested without a browser; the page
(static/confusion_matrix.js) only draws and asks.

Examples
--------
>>> import numpy as np
>>> from stable_explore.evaluation import ClassificationResult
>>> r = ClassificationResult(np.array([0, 1, 1, 2]), np.array([0, 1, 2, 2]), ["cat", "dog", "fox"])
>>> matrix = r.widget()
>>> matrix.counts
[[1, 0, 0], [0, 1, 1], [0, 0, 1]]
>>> matrix.show("dog", "fox")
[2]
>>> matrix.show_class("fox")["precision"]
0.5
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets as t

from stable_explore.widgets._esm import STATIC, widget_module
from stable_explore.widgets._requests import OK, Commands, Reply

if TYPE_CHECKING:
    from stable_explore.evaluation import ClassificationResult

__all__ = ["ConfusionMatrixWidget"]


class ConfusionMatrixWidget(anywidget.AnyWidget):
    """A classification result's confusion matrix; a click on a cell shows its rows in a linked browser.

    Made by :meth:`ClassificationResult.widget() <stable_explore.evaluation.ClassificationResult.widget>`.

    Parameters
    ----------
    result
        What ``se.evaluate`` returned for a classifier.
    browser
        A shard browser of the evaluated dataset: a click on a cell filters its grid to that cell's rows.
    on_show
        Called with (rows, title) on every cell shown, for code of your own.

    Attributes
    ----------
    names, counts
        The class names and the matrix (rows true, columns predicted).
    active_cell
        ``[true, pred]`` of the cell last shown (``[]``: none); ``shown_rows`` are its rows.
    class_figures
        The figures of the class last clicked: name, precision, recall, f1, support.
    """

    _esm = widget_module("confusion_matrix.js")  # with the static/lib/ modules it imports inlined
    _css = STATIC / "confusion_matrix.css"

    title = t.Unicode("").tag(sync=True)
    names = t.List(t.Unicode()).tag(sync=True)
    counts = t.List(t.List(t.Int())).tag(sync=True)
    active_cell = t.List(t.Int()).tag(sync=True)
    shown_rows = t.List(t.Int()).tag(sync=True)
    class_figures = t.Dict().tag(sync=True)
    status = t.Unicode("").tag(sync=True)

    def __init__(
        self,
        result: ClassificationResult,
        *,
        browser: Any = None,
        on_show: Callable[[list[int], str], Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.result = result
        self.browser = browser
        self.on_show = on_show
        self._report = result.report()
        rows = len(result.true)
        title = f"{result.name}: accuracy {result.accuracy:.4f} over {rows:,} rows"
        if result.skipped:
            title += f" ({result.skipped:,} without a label or prediction left out)"
        counts = [[int(v) for v in row] for row in result.confusion_matrix]
        super().__init__(title=title, names=list(result.names), counts=counts, **kwargs)
        self.on_msg(self._on_message)

    def show(self, true: str | int, pred: str | int) -> list[int]:
        """Show one cell: its rows (``result.rows(true=, pred=)``) in the attached browser's grid."""
        rows = [int(r) for r in self.result.rows(true=true, pred=pred)]
        t_index, p_index = self.result._class(true, "true"), self.result._class(pred, "pred")
        names = self.result.names
        title = f"{len(rows):,} rows labelled {names[t_index]}, predicted {names[p_index]}"
        self.active_cell = [t_index, p_index]
        self.shown_rows = rows
        if self.browser is not None:
            self.browser.show_rows(rows, title)
        if self.on_show is not None:
            self.on_show(rows, title)
        return rows

    def show_class(self, cls: str | int) -> dict[str, Any]:
        """Show one class's precision, recall, f1 and support (scikit-learn's, as ``result.report()``)."""
        index = self.result._class(cls, "class")
        row = self._report.iloc[index]
        figures = {
            "index": index,
            "name": self.result.names[index],
            "precision": float(row["precision"]),
            "recall": float(row["recall"]),
            "f1": float(row["f1"]),
            "support": int(row["support"]),
            "predicted": int(self.result.confusion_matrix[:, index].sum()),
        }
        self.class_figures = figures
        return figures

    def __repr__(self) -> str:
        shown = f", showing {len(self.shown_rows):,} rows" if self.active_cell else ""
        return f"ConfusionMatrixWidget({self.title}, {len(self.names)} classes{shown})"

    def _on_message(self, widget: Any, content: Any, buffers: list[Any]) -> None:
        """A request from the page (see :data:`COMMANDS`): run it and send the reply."""
        COMMANDS.answer(self, content, buffers)


# What the matrix's page asks (the request/reply layer is :mod:`._requests`).
COMMANDS = Commands("confusion matrix")


@COMMANDS.command("cell")
def _cell(matrix: ConfusionMatrixWidget, msg: dict[str, Any], buffers: list[Any]) -> Reply:
    """A click on a cell: its rows, here and in the attached browser."""
    matrix.show(int(msg["true"]), int(msg["pred"]))
    return OK, []


@COMMANDS.command("class")
def _class(matrix: ConfusionMatrixWidget, msg: dict[str, Any], buffers: list[Any]) -> Reply:
    """A click on a class name: its figures."""
    matrix.show_class(int(msg["index"]))
    return OK, []
