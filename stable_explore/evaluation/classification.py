"""A classifier's predictions against the labels: its figures, and the rows behind every number.

Accuracy, the confusion matrix and per-class precision, recall and f1.

The figures are scikit-learn's definitions (``confusion_matrix``, ``precision_recall_fscore_support``
with ``zero_division=0``), computed with numpy and tested equal to scikit-learn's (tests/evaluation/).
A row with no label or no prediction is left out of every figure (``.skipped`` counts them).

Examples
--------
>>> import numpy as np
>>> r = ClassificationResult(np.array([0, 1, 1, 2]), np.array([0, 1, 2, 2]), ["cat", "dog", "fox"])
>>> r.accuracy
0.75
>>> r.confusion_matrix.tolist()
[[1, 0, 0], [0, 1, 1], [0, 0, 1]]
>>> r.rows(true="dog", pred="fox").tolist()
[2]
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.errors import InvalidOptionError
from stable_explore.evaluation._keep import keep_outcomes

if TYPE_CHECKING:
    import pandas as pd

    from stable_explore.dataset import CachedDataset
    from stable_explore.widgets.confusion_matrix import ConfusionMatrixWidget

__all__ = ["ClassificationResult"]


class ClassificationResult:
    """Predicted classes (and, when given, the model's probabilities) against the true ones.

    ``true`` and ``pred`` hold class indices into ``names`` (-1: missing), one per row of the evaluated
    dataset; ``probs`` is rows x classes; ``keys`` are the rows' stored keys (for tables).
    """

    def __init__(
        self,
        true: np.ndarray,
        pred: np.ndarray,
        names: Sequence[str],
        *,
        probs: np.ndarray | None = None,
        keys: Sequence[object] | None = None,
        top_k: int | None = None,
        name: str = "predictions",
        dataset: CachedDataset | None = None,
    ) -> None:
        self.names = list(names)
        self.dataset = dataset
        self.name = name
        true = np.asarray(true, dtype=np.int64)
        pred = np.asarray(pred, dtype=np.int64)
        if true.shape != pred.shape:
            msg = f"{len(true)} labels but {len(pred)} predictions"
            raise InvalidOptionError(msg)
        self._true_all, self._pred_all = true, pred
        self._probs = probs
        self._keys = list(keys) if keys is not None else list(range(len(true)))
        self._kept = np.flatnonzero((true >= 0) & (pred >= 0))
        self.skipped = len(true) - len(self._kept)
        self.top_k = top_k
        self.cache_info = "computed"
        """How ``se.evaluate`` came by this result: ``"reused: ..."`` from the home, or ``"computed: ..."`` and why."""
        if top_k is not None and (probs is None or not 1 <= top_k <= len(self.names)):
            msg = f"top_k={top_k} needs the model's probabilities and 1 <= top_k <= {len(self.names)} classes"
            raise InvalidOptionError(msg)

    # -- the figures ----------------------------------------------------------------------------

    @property
    def row_true(self) -> np.ndarray:
        """The true class of every row of the evaluated dataset (-1: none)."""
        return self._true_all

    @property
    def row_pred(self) -> np.ndarray:
        """The predicted class of every row of the evaluated dataset (-1: none)."""
        return self._pred_all

    @property
    def keys(self) -> list[Any]:
        """The stored key of every row of the evaluated dataset."""
        return self._keys

    @property
    def true(self) -> np.ndarray:
        """The true class of each evaluated row (rows with a label and a prediction)."""
        return self._true_all[self._kept]

    @property
    def pred(self) -> np.ndarray:
        """The predicted class of each evaluated row."""
        return self._pred_all[self._kept]

    @property
    def accuracy(self) -> float:
        """The share of evaluated rows predicted right (with ``top_k``: the true class among the k likeliest)."""
        if not len(self._kept):
            return float("nan")
        if self.top_k is not None and self._probs is not None:
            probs = self._probs[self._kept]
            best = np.argsort(-probs, axis=1, kind="stable")[:, : self.top_k]
            return float((best == self.true[:, None]).any(axis=1).mean())
        return float((self.true == self.pred).mean())

    @property
    def confusion_matrix(self) -> np.ndarray:
        """Counts: rows are the true class, columns the predicted one, both in the names' order."""
        n = len(self.names)
        return np.bincount(self.true * n + self.pred, minlength=n * n).reshape(n, n)

    def report(self) -> pd.DataFrame:
        """Precision, recall, f1 and support per class (indexed by class name), as scikit-learn computes them."""
        import pandas as pd

        matrix = self.confusion_matrix.astype(np.float64)
        hits = np.diag(matrix)
        predicted = matrix.sum(axis=0)
        support = matrix.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(predicted > 0, hits / predicted, 0.0)
            recall = np.where(support > 0, hits / support, 0.0)
            f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
        frame = pd.DataFrame(
            {"precision": precision, "recall": recall, "f1": f1, "support": support.astype(np.int64)},
            index=pd.Index(self.names, name="class"),
        )
        return frame

    # -- the rows behind them -------------------------------------------------------------------

    def _class(self, value: str | int, what: str) -> int:
        if isinstance(value, str):
            if value not in self.names:
                msg = f"{what}={value!r} is not a class; the classes are {self.names}"
                raise InvalidOptionError(msg)
            return self.names.index(value)
        index = int(value)
        if not 0 <= index < len(self.names):
            msg = f"{what}={value!r} is outside 0..{len(self.names) - 1}"
            raise InvalidOptionError(msg)
        return index

    def rows(self, true: str | int | None = None, pred: str | int | None = None) -> np.ndarray:
        """The row numbers of a cell of the confusion matrix (``true=`` and/or ``pred=``, names or indices).

        ``ds[r.rows(true="dog", pred="fox")]`` are the rows behind that number.
        """
        keep = np.ones(len(self._kept), dtype=bool)
        if true is not None:
            keep &= self.true == self._class(true, "true")
        if pred is not None:
            keep &= self.pred == self._class(pred, "pred")
        return self._kept[keep]

    def mistakes(self) -> pd.DataFrame:
        """The rows predicted wrong, the most confident mistakes first (in row order without probabilities).

        Columns: ``row``, ``key``, ``label``, ``predicted``, ``confidence`` (the model's probability of the
        class it predicted) and ``label_probability`` (of the true class).
        """
        import pandas as pd

        wrong = self._kept[self.true != self.pred]
        names = np.asarray(self.names, dtype=object)
        confidence = np.full(len(wrong), np.nan)
        on_label = np.full(len(wrong), np.nan)
        if self._probs is not None and len(wrong):
            confidence = self._probs[wrong, self._pred_all[wrong]]
            on_label = self._probs[wrong, self._true_all[wrong]]
            order = np.argsort(-confidence, kind="stable")
            wrong, confidence, on_label = wrong[order], confidence[order], on_label[order]
        return pd.DataFrame(
            {
                "row": wrong,
                "key": [self._keys[r] for r in wrong],
                "label": names[self._true_all[wrong]] if len(wrong) else [],
                "predicted": names[self._pred_all[wrong]] if len(wrong) else [],
                "confidence": confidence,
                "label_probability": on_label,
            }
        )

    def columns(self) -> dict[str, np.ndarray]:
        """Per-row outcomes to keep with the rows: ``ds.add_columns(r.columns())``.

        ``<name>_correct`` (None where a label or prediction is missing) and, with probabilities,
        ``<name>_confidence``.
        """
        correct = np.full(len(self._true_all), None, dtype=object)
        correct[self._kept] = self.true == self.pred
        out: dict[str, np.ndarray] = {f"{self.name}_correct": correct}
        if self._probs is not None:
            rows = np.arange(len(self._pred_all))
            confidence = np.where(self._pred_all >= 0, self._probs[rows, np.maximum(self._pred_all, 0)], np.nan)
            out[f"{self.name}_confidence"] = confidence
        return out

    def save(self, *, message: str | None = None, tag: str | None = None, progress: bool = True) -> CachedDataset:
        """The evaluated dataset with :meth:`columns` added, as a new version.

        ``se.compare`` of two models' saved evaluations then says which rows got better or worse.
        """
        text = message if message is not None else f"evaluation of {self.name}: accuracy {self.accuracy:.4f}"
        return keep_outcomes(self.dataset, self.columns(), text, tag=tag, progress=progress)

    # -- display --------------------------------------------------------------------------------

    def widget(self, browser: object = None) -> ConfusionMatrixWidget:
        """The confusion matrix as a notebook widget: a click on a cell shows its rows in ``browser``.

        Rows are the true class, columns the predicted one, each count shaded by its size; a click on a
        cell filters a shard browser's grid (``ds.browse()``) to exactly ``r.rows(true=, pred=)``, and
        a click on a class name shows its precision, recall, f1 and support. Needs the ``lab`` extra.

        Examples
        --------
        >>> r = ClassificationResult(np.array([0, 1, 1]), np.array([0, 1, 0]), ["cat", "dog"])
        >>> r.widget().show("dog", "cat")
        [2]
        """
        from stable_explore.widgets.confusion_matrix import ConfusionMatrixWidget

        return ConfusionMatrixWidget(self, browser=browser)

    def __repr__(self) -> str:
        skipped = f", {self.skipped} rows without a label or prediction left out" if self.skipped else ""
        k = f" (top {self.top_k})" if self.top_k else ""
        return (
            f"<ClassificationResult {self.name}: accuracy{k} {self.accuracy:.4f} over {len(self._kept):,} rows, "
            f"{len(self.names)} classes{skipped}>"
        )

    def _repr_html_(self) -> str:
        matrix = self.confusion_matrix
        head = "".join(f"<th>{html.escape(n)}</th>" for n in self.names)
        body = "".join(
            f"<tr><th>{html.escape(name)}</th>" + "".join(f"<td>{int(v)}</td>" for v in row) + "</tr>"
            for name, row in zip(self.names, matrix, strict=True)
        )
        return (
            f"<div><p>{html.escape(repr(self))}</p><table><caption>rows: true class, columns: predicted</caption>"
            f"<tr><th></th>{head}</tr>{body}</table></div>"
        )
