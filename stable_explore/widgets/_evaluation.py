"""An evaluation shown in the shard browser: ``ds.browse(evaluation=se.evaluate(ds, ...))``.

For boxes, each page's overlays carry every evaluated box's outcome at IoU 0.5 (``"tp"``, ``"fp"``,
``"fn"``, ``"ignored"``), which the page draws in colours of their own; for both kinds the status line's
buttons show the rows with a false positive, with a false negative, or the most confident mistakes
first (a classifier's: :meth:`ClassificationResult.mistakes` order; a detector's: the rows with a false
positive, the one with the highest-scoring false positive first).

Examples
--------
>>> import tempfile, stable_explore as se
>>> names = ["a", "b"]
>>> ds = se.build([{"label": i % 2, "guess": (i // 3) % 2} for i in range(6)],
...               se.Features(label=se.ClassLabel(names=names), guess=se.ClassLabel(names=names)),
...               name="ab", home=tempfile.mkdtemp(), progress=False)
>>> view = EvaluationView.of(se.evaluate(ds, predictions="guess", ground_truth="label"), ds)
>>> view.rows("mistakes")[0].tolist()
[1, 4]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.errors import InvalidOptionError

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["WHAT", "EvaluationView"]

# what the status line's buttons show, in words (boxes / classes)
WHAT = {
    "fp": "rows with a false positive",
    "fn": "rows with a false negative",
    "mistakes": "most confident mistakes first",
}


@dataclass
class EvaluationView:
    """An evaluation result made to fit the browsed dataset's rows (see the module)."""

    result: Any
    kind: str  # "boxes" or "classes"
    version: str

    @classmethod
    def of(cls, result: Any, ds: CachedDataset) -> EvaluationView:
        """Check that ``result`` evaluated exactly these rows (same version and keys), then wrap it."""
        from stable_explore.evaluation import ClassificationResult, DetectionResult

        if isinstance(result, DetectionResult):
            kind = "boxes"
        elif isinstance(result, ClassificationResult):
            kind = "classes"
        else:
            msg = (
                f"evaluation= takes what se.evaluate returns for one model (a ClassificationResult or a "
                f"DetectionResult), got {type(result).__name__}; for two models pass one of them"
            )
            raise InvalidOptionError(msg)
        keys = list(ds.keys())
        if keys != list(result.keys):
            evaluated = getattr(result.dataset, "ref", "another dataset")
            msg = (
                f"evaluation= was computed on {evaluated} ({len(result.keys):,} rows), not on the rows browsed "
                f"({ds.ref}, {len(keys):,} rows): run se.evaluate on the dataset you browse, then browse it"
            )
            raise InvalidOptionError(msg)
        return cls(result, kind, ds.version)

    @property
    def predictions(self) -> str:
        """The column of the model's predictions."""
        return str(self.result.name)

    @property
    def ground_truth(self) -> str | None:
        """The Boxes column of the ground truth (None for a classifier)."""
        return getattr(self.result, "ground_truth", None) if self.kind == "boxes" else None

    def described(self) -> dict[str, Any]:
        """The browser's synced ``evaluation``: what was evaluated, and how many rows each button shows."""
        counts = {what: len(self.rows(what)[0]) for what in self.choices()}
        return {
            "kind": self.kind,
            "predictions": self.predictions,
            "ground_truth": self.ground_truth,
            "summary": repr(self.result).strip("<>"),
            "counts": counts,
        }

    def choices(self) -> tuple[str, ...]:
        """What the buttons offer: a detector's rows with FP, with FN and its mistakes; a classifier's mistakes."""
        return ("fp", "fn", "mistakes") if self.kind == "boxes" else ("mistakes",)

    def rows(self, what: str) -> tuple[np.ndarray, str]:
        """The rows ``what`` (``"fp"``, ``"fn"``, ``"mistakes"``) shows, in order, and their title."""
        if what not in self.choices():
            msg = f"the evaluation of {self.predictions} shows one of {list(self.choices())}, not {what!r}"
            raise InvalidOptionError(msg)
        title = f"{WHAT[what]} ({self.predictions})"
        if self.kind == "classes":
            return np.asarray(self.result.mistakes()["row"], dtype=np.int64), title
        if what in ("fp", "fn"):
            return np.asarray(self.result.rows(what), dtype=np.int64), title
        top = self.top_false_positive()
        rows = np.flatnonzero(~np.isnan(top))
        return rows[np.argsort(-top[rows], kind="stable")], title

    def top_false_positive(self) -> np.ndarray:
        """Per row: the highest score of its false positives (NaN: none)."""
        ds = self.result.dataset
        column = ds.arrow_column(self.predictions)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        offsets = np.asarray(column.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        scores = pc.fill_null(column.values.field("score"), 0.0)
        score = np.asarray(scores.to_numpy(zero_copy_only=False), dtype=np.float64)
        top = np.full(len(offsets) - 1, np.nan)
        for row, outcomes in enumerate(self.result.matches.detection_outcomes):
            wrong = np.asarray(outcomes) == "fp"
            if wrong.any():
                top[row] = float(score[offsets[row] : offsets[row + 1]][wrong].max())
        return top

    def outcomes(self, rows: np.ndarray) -> list[dict[str, list[str]] | None]:
        """Each row's boxes' outcomes, ``{predictions: [...], ground_truth: [...]}`` in the rows' box order."""
        if self.kind != "boxes":
            return [None] * len(rows)
        matches = self.result.matches
        truth = self.ground_truth or ""
        return [
            {
                self.predictions: [str(o) for o in matches.detection_outcomes[row]],
                truth: [str(o) for o in matches.truth_outcomes[row]],
            }
            for row in np.asarray(rows, dtype=np.int64).tolist()
        ]
