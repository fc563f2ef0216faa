"""The confusion-matrix widget: a classifier's counts, each cell a click away from its rows in the browser.

Rows are the true class, columns the predicted one (the order of ``r.names``), each count shaded by its
size. A click on a cell points an attached shard browser at exactly ``r.rows(true=, pred=)``
(``browser.show_rows``); a click on a class name shows that class's precision, recall, f1 and support
(``r.report()``). What a click does lives here in Python, so it is tested without a browser; the page
(static/confusion_matrix.js) only draws and asks.

For a detector (a :class:`~stable_explore.evaluation.DetectionResult`) the matrix counts boxes at IoU 0.5
with a last row and column for the background (a false positive on nothing, a ground-truth box missed), a
click on a cell shows the images with a box in it, and a table of per-class AP sits beside it: a click on
a class shows its AP and its precision-recall curve at IoU 0.5.

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
from typing import Any

import anywidget
import traitlets as t

from stable_explore.errors import InvalidOptionError
from stable_explore.evaluation import ClassificationResult, DetectionResult
from stable_explore.widgets._esm import STATIC, widget_module
from stable_explore.widgets._requests import OK, Buffers, Commands, Reply, Request

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
        The figures of the class last clicked: name, precision, recall, f1, support (for a detector: its
        AP, AP50, AP75, true and false positives, misses, and ``curve``, its precision at each recall).
    kind
        ``"classification"`` or ``"detection"``.
    ap_table
        For a detector: each class's name, AP and AP50 (None: no ground-truth box of it).
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
    kind = t.Unicode("classification").tag(sync=True)
    ap_table = t.List(t.Dict()).tag(sync=True)

    def __init__(
        self,
        result: ClassificationResult | DetectionResult,
        *,
        browser: Any = None,
        on_show: Callable[[list[int], str], Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.result = result
        self.browser = browser
        self.on_show = on_show
        self._detection = isinstance(result, DetectionResult)
        if isinstance(result, DetectionResult):
            title = (
                f"{result.name}: mAP {result.map:.4f}, mAP50 {result.map50:.4f} over {len(result.keys):,} images "
                "(boxes at IoU 0.5)"
            )
            matrix = result.confusion_matrix
            names = [*result.names, "background"]
            ap, ap50 = result.per_class_ap(), result.per_class_ap(iou=0.5)
            table = [
                {"name": n, "ap": _number(ap.iloc[i]), "ap50": _number(ap50.iloc[i])}
                for i, n in enumerate(result.names)
            ]
            extra = {"kind": "detection", "ap_table": table}
        else:
            self._report = result.report()
            title = f"{result.name}: accuracy {result.accuracy:.4f} over {len(result.true):,} rows"
            if result.skipped:
                title += f" ({result.skipped:,} without a label or prediction left out)"
            matrix = result.confusion_matrix
            names = list(result.names)
            extra = {}
        counts = [[int(v) for v in row] for row in matrix]
        super().__init__(title=title, names=names, counts=counts, **extra, **kwargs)
        self.on_msg(self._on_message)

    def _index(self, value: str | int, what: str) -> int:
        """A class (or, for a detector, ``"background"``) as its row/column in the matrix."""
        if isinstance(value, str) and value in self.names:
            return self.names.index(value)
        if not isinstance(value, str) and 0 <= int(value) < len(self.names):
            return int(value)
        if isinstance(value, str):
            msg = f"{what}={value!r} is not a class; the classes are {self.names}"
        else:
            msg = f"{what}={value!r} is outside 0..{len(self.names) - 1}"
        raise InvalidOptionError(msg)

    def show(self, true: str | int, pred: str | int) -> list[int]:
        """Show one cell: its rows (``result.rows(true=, pred=)``) in the attached browser's grid."""
        t_index, p_index = self._index(true, "true"), self._index(pred, "pred")
        names = self.names
        result = self.result
        if isinstance(result, DetectionResult):
            rows = [int(r) for r in result.confusion_rows(t_index, p_index)]
            background = len(names) - 1
            if t_index == background:
                what = f"a false {names[p_index]} (on no ground-truth box)"
            elif p_index == background:
                what = f"a missed {names[t_index]}"
            else:
                what = f"a box labelled {names[t_index]}, predicted {names[p_index]}"
            title = f"{len(rows):,} {'image' if len(rows) == 1 else 'images'} with {what}"
        else:
            rows = [int(r) for r in result.rows(true=t_index, pred=p_index)]
            title = f"{len(rows):,} rows labelled {names[t_index]}, predicted {names[p_index]}"
        self.active_cell = [t_index, p_index]
        self.shown_rows = rows
        if self.browser is not None:
            self.browser.show_rows(rows, title)
        if self.on_show is not None:
            self.on_show(rows, title)
        return rows

    def show_class(self, cls: str | int) -> dict[str, Any]:
        """Show one class's precision, recall, f1 and support (scikit-learn's, as ``result.report()``).

        For a detector: its AP, AP50 and AP75, its boxes' outcomes at IoU 0.5 and its precision-recall
        curve at IoU 0.5 (``curve``: ``recall`` and ``precision`` lists, as ``result.precision_recall``).
        """
        index = self._index(cls, "class")
        result = self.result
        if isinstance(result, DetectionResult):
            return self._show_detection_class(result, index)
        row = self._report.iloc[index]
        figures = {
            "index": index,
            "name": self.result.names[index],
            "precision": float(row["precision"]),
            "recall": float(row["recall"]),
            "f1": float(row["f1"]),
            "support": int(row["support"]),
            "predicted": int(result.confusion_matrix[:, index].sum()),
        }
        self.class_figures = figures
        return figures

    def _show_detection_class(self, result: DetectionResult, index: int) -> dict[str, Any]:
        if index >= len(result.names):
            msg = "the background is not a class: click a cell of its row or column for its images"
            raise InvalidOptionError(msg)
        curve = result.precision_recall(index, iou=0.5)
        boxes = result.boxes()
        mine = boxes[boxes["class"] == result.names[index]]
        figures = {
            "index": index,
            "name": result.names[index],
            "ap": _number(result.per_class_ap().iloc[index]),
            "ap50": _number(result.per_class_ap(iou=0.5).iloc[index]),
            "ap75": _number(result.per_class_ap(iou=0.75).iloc[index]),
            "tp": int(((mine["side"] == "prediction") & (mine["outcome"] == "tp")).sum()),
            "fp": int((mine["outcome"] == "fp").sum()),
            "fn": int((mine["outcome"] == "fn").sum()),
            "curve": {
                "recall": [float(v) for v in curve["recall"]],
                "precision": [float(v) for v in curve["precision"]],
            },
        }
        self.class_figures = figures
        return figures

    def __repr__(self) -> str:
        shown = f", showing {len(self.shown_rows):,} rows" if self.active_cell else ""
        return f"ConfusionMatrixWidget({self.title}, {len(self.names)} classes{shown})"

    def _on_message(self, widget: object, content: object, buffers: Buffers | None) -> None:
        """A request from the page (see :data:`COMMANDS`): run it and send the reply."""
        COMMANDS.answer(self, content, buffers)


def _number(value: Any) -> float | None:
    """A figure for the page: None for NaN (a class with no ground-truth box)."""
    number = float(value)
    return None if number != number else number


# What the matrix's page asks (the request/reply layer is :mod:`._requests`).
COMMANDS = Commands("confusion matrix")


@COMMANDS.command("cell")
def _cell(matrix: ConfusionMatrixWidget, msg: Request, buffers: Buffers) -> Reply:
    """A click on a cell: its rows, here and in the attached browser."""
    matrix.show(int(msg["true"]), int(msg["pred"]))
    return OK, []


@COMMANDS.command("class")
def _class(matrix: ConfusionMatrixWidget, msg: Request, buffers: Buffers) -> Reply:
    """A click on a class name: its figures."""
    matrix.show_class(int(msg["index"]))
    return OK, []
