"""``se.evaluate``: a model's predictions, as columns of the dataset or arrays, against its labels.

Examples
--------
>>> import tempfile, stable_explore as se
>>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]), pred=se.ClassLabel(names=["cat", "dog"]))
>>> rows = [{"label": a, "pred": b} for a, b in [("cat", "cat"), ("dog", "cat"), ("dog", "dog")]]
>>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
>>> r = se.evaluate(ds, predictions="pred")
>>> round(r.accuracy, 3), r.rows(true="dog", pred="cat").tolist()
(0.667, [1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from stable_explore.evaluation.classification import ClassificationResult
from stable_explore.evaluation.detection import DetectionResult, evaluate_detections, truth_column
from stable_explore.evaluation.detection_compare import DetectionComparison
from stable_explore.schema import Boxes, ClassLabel, Value
from stable_explore.schema import Sequence as SequenceFeature

if TYPE_CHECKING:
    import pandas as pd

    from stable_explore.dataset import CachedDataset

__all__ = ["Comparison", "evaluate"]


def _label_column(ds: CachedDataset, ground_truth: str | None) -> tuple[str, ClassLabel]:
    name = ground_truth if ground_truth is not None else ds.features.first_of(ClassLabel)
    if name is None:
        msg = f"no ClassLabel column to evaluate against (columns: {list(ds.features)}); pass ground_truth="
        raise ColumnNotFoundError(msg)
    feature = ds.features.get(name)
    if not isinstance(feature, ClassLabel):
        msg = f"ground_truth={name!r} is not a ClassLabel column (it is {feature!r}); columns: {list(ds.features)}"
        raise ColumnNotFoundError(msg)
    return name, feature


def _indices(values: Sequence[object], names: list[str], where: str, keys: Sequence[object]) -> np.ndarray:
    """Class names or indices -> indices into ``names`` (-1 for None), naming the first row that is neither."""
    out = np.full(len(values), -1, dtype=np.int64)
    lookup = {n: i for i, n in enumerate(names)}
    for row, value in enumerate(values):
        if value is None:
            continue
        if isinstance(value, str):
            if value not in lookup:
                msg = f"{where}: row {row} (key {keys[row]!r}) predicts {value!r}, not a class of {names}"
                raise InvalidOptionError(msg)
            out[row] = lookup[value]
        elif isinstance(value, (int, np.integer)) and 0 <= int(value) < len(names):
            out[row] = int(value)
        else:
            msg = (
                f"{where}: row {row} (key {keys[row]!r}) holds {value!r}: expected a class name or 0..{len(names) - 1}"
            )
            raise InvalidOptionError(msg)
    return out


def _probabilities(values: Sequence[object], classes: int, where: str, keys: list[object]) -> np.ndarray:
    probs = np.full((len(values), classes), np.nan)
    for row, value in enumerate(values):
        if value is None:
            continue
        vector = np.asarray(value, dtype=np.float64).reshape(-1)
        if vector.shape != (classes,) or not np.all(np.isfinite(vector) & (vector >= 0) & (vector <= 1)):
            shown = ", ".join(f"{v:.4g}" for v in vector[:8]) + (", ..." if vector.size > 8 else "")
            msg = f"{where}: row {row} (key {keys[row]!r}) should hold {classes} probabilities in 0..1, found [{shown}]"
            raise InvalidOptionError(msg)
        probs[row] = vector
    return probs


def _predictions(
    ds: CachedDataset, predictions: str | np.ndarray | Sequence[object], names: list[str], keys: list[object]
) -> tuple[np.ndarray, np.ndarray | None, str]:
    """Predicted class indices, the probabilities when given, and the predictions' name."""
    if isinstance(predictions, str):
        if predictions not in ds.features:
            msg = f"no column {predictions!r} of predictions; columns are {list(ds.features)}"
            raise ColumnNotFoundError(msg)
        feature = ds.features[predictions]
        values = ds.arrow_column(predictions).to_pylist()
        where = f"column {predictions!r}"
        if isinstance(feature, ClassLabel):
            as_names = [None if v is None else feature.int2str(int(v)) for v in values]
            return _indices(as_names, names, where, keys), None, predictions
        if isinstance(feature, SequenceFeature) or (isinstance(feature, Value) and feature.dtype.startswith("float")):
            if isinstance(feature, Value):
                msg = f"{where} holds one number a row: pass class indices, names, or one probability per class"
                raise InvalidOptionError(msg)
            probs = _probabilities(values, len(names), where, keys)
            pred = np.where(np.isnan(probs).any(axis=1), -1, np.nan_to_num(probs, nan=-1).argmax(axis=1))
            return pred.astype(np.int64), probs, predictions
        return _indices(values, names, where, keys), None, predictions
    array = np.asarray(predictions)
    if len(array) != len(ds):
        msg = f"predictions= has {len(array)} rows for a dataset of {len(ds)}"
        raise InvalidOptionError(msg)
    if array.ndim == 2:
        probs = _probabilities(list(array), len(names), "predictions=", keys)
        return probs.argmax(axis=1).astype(np.int64), probs, "predictions"
    return _indices(array.tolist(), names, "predictions=", keys), None, "predictions"


def evaluate(
    ds: CachedDataset,
    predictions: str | np.ndarray | Sequence[object],
    ground_truth: str | None = None,
    *,
    top_k: int | None = None,
    cache: bool = True,
) -> ClassificationResult | DetectionResult | Comparison | DetectionComparison:
    """A model's predictions against the dataset's labels.

    Parameters
    ----------
    ds
        The dataset (or a view of it); row numbers in the result are its rows.
    predictions
        A column of ``ds`` (a ``ClassLabel``, class names, class indices, or one probability per class),
        an array with one value (or one row of probabilities) per row, or a list of column names to
        compare models side by side (a :class:`Comparison`; of ``Boxes`` columns, a
        :class:`~stable_explore.evaluation.DetectionComparison`).
    ground_truth
        The ``ClassLabel`` column of true classes (default: the first one).
    top_k
        With probabilities: ``accuracy`` counts a row right when its class is among the k likeliest.
    cache
        Keep the evaluation of columns of a dataset in a catalog in its home, and read it back when the
        same version, columns and parameters are evaluated again (in this kernel or a new one): the
        result's ``cache_info`` says ``"reused: ..."``. A new version (a relabel and save) is evaluated
        afresh. ``cache=False`` always computes (and keeps nothing).

    Returns
    -------
    ClassificationResult or DetectionResult
        ``.accuracy``, ``.confusion_matrix``, ``.report()``, ``.rows(true=, pred=)``, ``.mistakes()``,
        ``.columns()``, ``.save()``. When ``predictions`` and ``ground_truth`` are ``Boxes`` columns,
        a :class:`~stable_explore.evaluation.DetectionResult`: COCO's ``.map``, ``.map50``, ``.map75``,
        ``.per_class_ap()``, ``.precision_recall(cls)``, ``.boxes()`` (each box's outcome at IoU 0.5),
        ``.rows(outcome="fp", cls=...)``.
    """
    if isinstance(predictions, str) and isinstance(ds.features.get(predictions), Boxes):
        if top_k is not None:
            msg = "top_k= is for classifiers; boxes are evaluated at COCO's IoU thresholds"
            raise InvalidOptionError(msg)
        return evaluate_detections(ds, predictions, ground_truth, cache=cache)
    if isinstance(predictions, list) and predictions and all(isinstance(p, str) for p in predictions):
        boxes = [isinstance(ds.features.get(p), Boxes) for p in predictions]
        if any(boxes):
            if not all(boxes):
                kinds = {p: type(ds.features.get(p)).__name__ for p in predictions}
                msg = f"compare detectors with Boxes columns only, or classifiers only; got {kinds}"
                raise InvalidOptionError(msg)
            if top_k is not None:
                msg = "top_k= is for classifiers; boxes are evaluated at COCO's IoU thresholds"
                raise InvalidOptionError(msg)
            truth = truth_column(ds, predictions[0], ground_truth)
            return DetectionComparison(ds, {p: evaluate_detections(ds, p, truth, cache=cache) for p in predictions})
        return Comparison(ds, {p: _evaluate_one(ds, p, ground_truth, top_k, cache) for p in predictions})
    return _evaluate_one(ds, predictions, ground_truth, top_k, cache)


def _evaluate_one(
    ds: CachedDataset, predictions: Any, ground_truth: str | None, top_k: int | None, cache: bool
) -> ClassificationResult:
    label, feature = _label_column(ds, ground_truth)
    names = list(feature.names or [])
    keys = ds.keys()
    entry = None
    if not isinstance(predictions, str):
        why = "computed: predictions given as an array, which are not kept"
    elif not cache:
        why = "computed: cache=False"
    else:
        if predictions not in ds.features:
            msg = f"no column {predictions!r} of predictions; columns are {list(ds.features)}"
            raise ColumnNotFoundError(msg)
        from stable_explore.evaluation.cache import cache_entry

        entry = cache_entry(ds, "classification", {"predictions": predictions, "ground_truth": label}, {})
        why = "computed: a dataset outside a catalog, whose evaluations are not kept"
        kept = entry.load() if entry is not None else None
        if kept is not None:
            result = ClassificationResult(
                kept["true"], kept["pred"], names, probs=kept.get("probs"), keys=keys, top_k=top_k,
                name=predictions, dataset=ds,
            )  # fmt: skip
            result.cache_info = "reused: same version, columns and parameters"
            return result
    true = np.asarray(ds.arrow_column(label).fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    pred, probs, name = _predictions(ds, predictions, names, list(keys))
    result = ClassificationResult(true, pred, names, probs=probs, keys=keys, top_k=top_k, name=name, dataset=ds)
    if entry is not None:
        entry.store({"true": true, "pred": pred} | ({} if probs is None else {"probs": probs}))
        why = f"computed: first evaluation of {name} against {label} on this version"
    result.cache_info = why
    return result


class Comparison:
    """Several models' results on the same rows: ``comparison[name]`` is one's :class:`ClassificationResult`."""

    def __init__(self, ds: CachedDataset, results: dict[str, ClassificationResult]) -> None:
        self.dataset = ds
        self.results = results

    def __getitem__(self, name: str) -> ClassificationResult:
        return self.results[name]

    def summary(self) -> pd.DataFrame:
        """Accuracy and macro f1 of each model."""
        import pandas as pd

        rows = {
            n: {"accuracy": r.accuracy, "macro_f1": float(r.report()["f1"].mean())} for n, r in self.results.items()
        }
        return pd.DataFrame.from_dict(rows, orient="index")

    def differ(self) -> pd.DataFrame:
        """The rows where the models disagree on right or wrong.

        Columns: ``row``, ``key``, ``label``, then each model's prediction and whether it was right.
        """
        import pandas as pd

        first = next(iter(self.results.values()))
        names = np.asarray(first.names, dtype=object)
        true = first.row_true
        right = {n: (r.row_pred == true) & (true >= 0) for n, r in self.results.items()}
        stacked = np.stack(list(right.values()))
        rows = np.flatnonzero(stacked.any(axis=0) & ~stacked.all(axis=0))
        keys = first.keys
        table: dict[str, object] = {"row": rows, "key": [keys[r] for r in rows], "label": names[true[rows]]}
        for n, r in self.results.items():
            pred = r.row_pred[rows]
            table[n] = np.where(pred >= 0, names[np.maximum(pred, 0)], None)
            table[f"{n}_right"] = right[n][rows]
        return pd.DataFrame(table)

    def __repr__(self) -> str:
        figures = ", ".join(f"{n}: {r.accuracy:.4f}" for n, r in self.results.items())
        return f"<Comparison of {len(self.results)} models: accuracy {figures}>"
