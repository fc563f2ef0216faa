"""Suspected label errors: from predicted probabilities (confident learning) or from neighbours in an embedding.

Confident learning (Northcutt et al., 2021), the rule ``cleanlab`` implements: a class's threshold is
the mean probability the model gives that class over the rows labelled with it (its mean
self-confidence); a row "confidently belongs" to each class whose probability reaches that class's
threshold (the most probable of them when several do); rows labelled one class that confidently
belong to another (the off-diagonal of the confident joint) are suspected, unless the model's top
prediction is the given label. They are ranked by self-confidence, lowest first. On the same input
it flags exactly the rows of cleanlab's ``find_label_issues(filter_by="confident_learning")``
(tests/signals/test_planted.py); cleanlab's default filter (``prune_by_noise_rate``) flags those and
more (on the planted digits: 56 rows against 71, every one of ours among them).
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore._arrays import distinct
from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from stable_explore.signals._rows import keys_of, label_column, labels_of, result_table, view_hint
from stable_explore.signals.embeddings import Embedding, embedding_matrix
from stable_explore.signals.neighbors import nearest_neighbors

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from stable_explore.dataset import CachedDataset
    from stable_explore.schema import ClassLabel

METHODS = ("auto", "cleanlab", "numpy")


def confident_learning(labels: np.ndarray, pred_probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(suspected rows ranked by self-confidence, each row's confident class or -1): our numpy rule.

    Examples
    --------
    >>> import numpy as np
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.1, 0.9], [0.85, 0.15]])
    >>> rows, guess = confident_learning(np.array([0, 0, 1, 1, 1]), probs)
    >>> rows.tolist(), guess.tolist()
    ([4], [0, -1, 1, 1, 0])
    """
    n, classes = pred_probs.shape
    thresholds = np.full(classes, np.inf)
    for c in range(classes):
        mine = labels == c
        if mine.any():
            thresholds[c] = pred_probs[mine, c].mean()
    confident = pred_probs >= thresholds[None, :] - 1e-6
    masked = np.where(confident, pred_probs, -np.inf)
    guess = np.where(confident.any(axis=1), masked.argmax(axis=1), -1)
    self_confidence = pred_probs[np.arange(n), labels]
    suspected = (guess >= 0) & (guess != labels) & (pred_probs.argmax(axis=1) != labels)
    rows = np.flatnonzero(suspected)
    return rows[np.argsort(self_confidence[rows], kind="stable")], guess


def _cleanlab(labels: np.ndarray, pred_probs: np.ndarray) -> np.ndarray:
    from stable_explore._optional import require

    cleanlab_filter = require("cleanlab.filter", "clean", "label_issues(method='cleanlab')")
    ranked: np.ndarray = cleanlab_filter.find_label_issues(
        labels, pred_probs, return_indices_ranked_by="self_confidence"
    )
    return np.asarray(ranked, dtype=np.int64)


def _probabilities(ds: CachedDataset, pred_probs: str | Any, classes: int) -> np.ndarray:
    if isinstance(pred_probs, str):
        if pred_probs not in ds.features:
            msg = f"no column {pred_probs!r} of predicted probabilities; columns are {list(ds.features)}"
            raise ColumnNotFoundError(msg)
        values = ds.arrow_column(pred_probs).to_pylist()
        where = f"column {pred_probs!r}"
    else:
        values = list(np.asarray(pred_probs, dtype=np.float64))
        where = "pred_probs="
    if len(values) != len(ds):
        msg = f"{where} has {len(values)} rows for a dataset of {len(ds)}"
        if not isinstance(pred_probs, str):
            msg += view_hint(ds, len(values), "pred_probs")
        raise InvalidOptionError(msg)
    for row, value in enumerate(values):
        vector = np.asarray(value if value is not None else [], dtype=np.float64)
        if vector.shape != (classes,) or not np.all((vector >= 0) & (vector <= 1)):
            key = keys_of(ds)[row].as_py()
            numbers = ", ".join(f"{v:.4g}" for v in vector.ravel()[:12]) + (", ..." if vector.size > 12 else "")
            shown = "None" if value is None else f"[{numbers}]"
            msg = (
                f"{where}: row {row} (key {key!r}) should hold {classes} probabilities in 0..1 "
                f"(one per class), found {shown}"
            )
            if vector.shape == (classes,) and np.isfinite(vector).all():
                msg += "; scores outside 0..1 look like logits: pass their softmax (scipy.special.softmax(x, axis=1))"
            raise InvalidOptionError(msg)
    probs = np.asarray(values, dtype=np.float64).reshape(len(values), classes)
    _check_sums(ds, probs, where)
    return probs


SUM_TOLERANCE = 0.01
"""How far a row's predicted probabilities may sum from 1 (float16 softmax outputs, rounding)."""


def _check_sums(ds: CachedDataset, probs: np.ndarray, where: str) -> None:
    """Refuse rows whose probabilities do not sum to about 1 (all zeros, scores, one-vs-rest outputs), naming them.

    Confident learning compares each row's probabilities with per-class thresholds: rows of zeros,
    or of scores that are no distribution, would be judged all the same, and flagged in silence.
    """
    if not len(probs):
        return
    sums = probs.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > SUM_TOLERANCE)
    if not len(bad):
        return
    keys = keys_of(ds, bad[:5]).to_pylist()
    named = ", ".join(
        f"row {row} (key {key!r}) sums to {sums[row]:.4g}" for row, key in zip(bad[:5], keys, strict=True)
    )
    more = f", and {len(bad) - 5:,} more" if len(bad) > 5 else ""
    msg = (
        f"{where}: {len(bad):,} of {len(probs):,} rows hold probabilities that do not sum to 1 "
        f"(within {SUM_TOLERANCE:g}): {named}{more}; each row must be a distribution over the classes, such as a "
        f"softmax of the model's outputs (scipy.special.softmax(x, axis=1)); rows of zeros or of per-class "
        f"scores would all be flagged alike"
    )
    raise InvalidOptionError(msg)


def _check_classes_present(labels: np.ndarray, feature: ClassLabel, method: str) -> str:
    """The method to run; confident learning cannot judge rows that all carry one class."""
    present = distinct(labels)
    if len(labels) and len(present) < 2:
        only = feature.int2str(int(present[0]))
        msg = (
            f"each of the {len(labels)} labelled rows is labelled {only!r}: confident learning sets each class's "
            "threshold from the rows labelled with it, so it needs rows of at least two classes; run "
            "label_issues on the whole dataset and keep the rows of its result you want (or use "
            "neighbor_label_issues on an embedding of the whole dataset)"
        )
        raise InvalidOptionError(msg)
    if method == "cleanlab" or (method == "auto" and importlib.util.find_spec("cleanlab") is not None):
        return "cleanlab"
    return "numpy"


def label_issues(
    ds: CachedDataset, pred_probs: str | Any = "pred_probs", *, label: str | None = None, method: str = "auto"
) -> pa.Table:
    """Rows whose label a model's out-of-sample predicted probabilities confidently contradict.

    Parameters
    ----------
    ds
        The dataset (or a view).
    pred_probs
        A column name (one list of class probabilities per row) or an array (rows x classes), from a
        model that did not train on the row (cross-validated), as confident learning requires.
    label
        The ``ClassLabel`` column (default: the first).
    method
        ``"cleanlab"`` (``cleanlab.filter.find_label_issues``, its default filter), ``"numpy"`` (our
        implementation of the core rule, see the module notes) or ``"auto"`` (cleanlab when installed).

    Returns
    -------
    pyarrow.Table
        The suspected rows, most suspicious first: ``row``, ``key``, ``label``, ``suggested`` (the most
        probable class other than the label, as names) and ``self_confidence`` (the probability the
        model gives the label). A row without a label is not judged (nor counted in the thresholds);
        it still needs its row of ``pred_probs``.

    Examples
    --------
    >>> import stable_explore as se, tempfile, numpy as np
    >>> from stable_explore.signals import label_issues
    >>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
    >>> ds = se.build([{"label": v} for v in (0, 0, 1, 1, 1)], features, name="pets",
    ...               home=tempfile.mkdtemp(), progress=False)
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.1, 0.9], [0.85, 0.15]])
    >>> label_issues(ds, probs, method="numpy").to_pylist()
    [{'row': 4, 'key': 4, 'label': 'dog', 'suggested': 'cat', 'self_confidence': 0.15}]
    """
    if method not in METHODS:
        msg = f"method must be one of {METHODS}, got {method!r}"
        raise InvalidOptionError(msg)
    name, feature = label_column(ds, label)
    labels = labels_of(ds, name)
    classes = feature.num_classes or (int(labels.max()) + 1 if len(labels) else 0)
    probs = _probabilities(ds, pred_probs, classes)
    judged = np.flatnonzero(labels >= 0)  # a row without a label is not judged, and sets no threshold
    if not len(judged):
        found = np.zeros(0, dtype=np.int64)
    elif _check_classes_present(labels[judged], feature, method) == "cleanlab":
        found = _cleanlab(labels[judged], probs[judged])
    else:
        found, _ = confident_learning(labels[judged], probs[judged])
    rows = judged[found]
    others = probs[rows].copy()
    others[np.arange(len(rows)), labels[rows]] = -1
    suggested = others.argmax(axis=1) if len(rows) else np.zeros(0, dtype=np.int64)
    return result_table(
        ds,
        rows,
        {
            "label": pa.array([feature.int2str(int(v)) for v in labels[rows]], type=pa.string()),
            "suggested": pa.array([feature.int2str(int(v)) for v in suggested], type=pa.string()),
            "self_confidence": pa.array(probs[rows, labels[rows]], type=pa.float64()),
        },
    )


def neighbor_label_issues(
    ds: CachedDataset,
    embeddings: Embedding | None = None,
    *,
    label: str | None = None,
    k: int = 10,
    agreement: float = 0.7,
    column: str | None = None,
    num_proc: int | None = None,
    executor: Executor | None = None,
) -> pa.Table:
    """Rows whose ``k`` nearest neighbours in an embedding mostly carry one other label.

    For when there is no model, only embeddings: a row is suspected when at least ``agreement`` of its
    neighbours share a label that is not its own. With ``embeddings=None`` the offline
    :func:`~stable_explore.signals.pixel_embeddings` are used, decoded by ``num_proc`` workers or
    ``executor`` when given. Above :data:`~stable_explore.signals.neighbors.APPROXIMATE_ROWS` rows the
    neighbours are approximate (see :func:`~stable_explore.signals.nearest_neighbors`).

    Returns
    -------
    pyarrow.Table
        The suspected rows, most suspicious first: ``row``, ``key``, ``label``, ``suggested`` (the
        neighbours' label) and ``neighbor_agreement`` (the share of neighbours that carry it). A row
        without a label is not judged, and as a neighbour votes for no class.

    Examples
    --------
    >>> import stable_explore as se, tempfile, numpy as np
    >>> from stable_explore.signals import neighbor_label_issues
    >>> features = se.Features(label=se.ClassLabel(names=["small", "big"]))
    >>> labels = [0, 0, 0, 1, 1, 1, 0]
    >>> ds = se.build([{"label": v} for v in labels], features, name="n", home=tempfile.mkdtemp(), progress=False)
    >>> points = np.array([[0.0], [0.1], [0.2], [9.0], [9.1], [9.2], [9.3]])
    >>> neighbor_label_issues(ds, points, k=3).select(["row", "suggested"]).to_pylist()
    [{'row': 6, 'suggested': 'big'}]
    """
    if not 0 < agreement <= 1:
        msg = f"agreement must be a share of neighbours in (0, 1], got {agreement!r}"
        raise InvalidOptionError(msg)
    name, feature = label_column(ds, label)
    labels = labels_of(ds, name)
    vectors = embedding_matrix(ds, embeddings, column=column, num_proc=num_proc, executor=executor)
    _, positions = nearest_neighbors(vectors, k)
    if positions.shape[1] == 0:
        return result_table(ds, np.zeros(0, dtype=np.int64), {"label": [], "suggested": [], "neighbor_agreement": []})
    votes = labels[positions]
    classes = max(feature.num_classes or 0, int(labels.max()) + 1, 1)
    counts = np.zeros((len(labels), classes), dtype=np.int64)
    voters = np.repeat(np.arange(len(labels)), votes.shape[1])
    cast = votes.ravel() >= 0  # a neighbour without a label carries none: it is counted, but votes for no class
    np.add.at(counts, (voters[cast], votes.ravel()[cast]), 1)
    labelled = labels >= 0
    counts[np.flatnonzero(labelled), labels[labelled]] = -1  # the row's own label never wins as "another label"
    top = counts.argmax(axis=1)
    share = counts[np.arange(len(labels)), top] / votes.shape[1]
    rows = np.flatnonzero((share >= agreement) & labelled)  # a row without a label is not judged
    rows = rows[np.lexsort((rows, -share[rows]))]
    return result_table(
        ds,
        rows,
        {
            "label": pa.array([feature.int2str(int(v)) for v in labels[rows]], type=pa.string()),
            "suggested": pa.array([feature.int2str(int(v)) for v in top[rows]], type=pa.string()),
            "neighbor_agreement": pa.array(share[rows], type=pa.float64()),
        },
    )
