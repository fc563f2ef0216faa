"""Two (or more) detectors on the same images: each one's COCO figures, and the images where they differ.

``se.evaluate(ds, predictions=["model_a", "model_b"], ground_truth="objects")`` on ``Boxes`` columns gives a
:class:`DetectionComparison`: each model's :class:`~stable_explore.evaluation.DetectionResult` (its figures
equal pycocotools'), their mAPs side by side, per-class AP side by side, and the images where a
ground-truth box one model found (a true positive at IoU 0.5) the other missed, or where they make a
different number of false positives.

Examples
--------
>>> import tempfile, stable_explore as se
>>> boxes = se.Boxes(names=["cat"])
>>> features = se.Features(objects=boxes, model_a=boxes, model_b=boxes)
>>> cat = {"bbox": [0, 0, 10, 10], "category": "cat"}
>>> rows = [{"objects": [cat], "model_a": [{**cat, "score": 0.9}], "model_b": []},
...         {"objects": [cat], "model_a": [{**cat, "score": 0.8}], "model_b": [{**cat, "score": 0.7}]}]
>>> ds = se.build(rows, features, name="two", home=tempfile.mkdtemp(), progress=False)
>>> both = se.evaluate(ds, predictions=["model_a", "model_b"], ground_truth="objects")
>>> both.differ()[["row", "model_a_tp", "model_b_fn"]].values.tolist()
[[0, 1, 1]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stable_explore.errors import InvalidOptionError

if TYPE_CHECKING:
    import pandas as pd

    from stable_explore.dataset import CachedDataset
    from stable_explore.evaluation.detection import DetectionResult

__all__ = ["DetectionComparison"]


class DetectionComparison:
    """Several detectors' results on the same images and ground truth: ``comparison[name]`` is one's result."""

    def __init__(self, ds: CachedDataset, results: dict[str, DetectionResult]) -> None:
        self.dataset = ds
        self.results = results
        first = next(iter(results.values()))
        self.names = first.names
        self.keys = first.keys

    def __getitem__(self, name: str) -> DetectionResult:
        return self.results[name]

    def summary(self) -> pd.DataFrame:
        """Each model's mAP, mAP50 and mAP75 (COCO's), and its true positives, false positives and misses at IoU 0.5."""
        import pandas as pd

        rows = {}
        for name, r in self.results.items():
            counts = r.counts()
            rows[name] = {
                "map": r.map,
                "map50": r.map50,
                "map75": r.map75,
                **{k: int(v.sum()) for k, v in counts.items()},
            }
        return pd.DataFrame.from_dict(rows, orient="index")

    def per_class_ap(self) -> pd.DataFrame:
        """Each class's AP over IoU 0.50:0.95 (rows), for each model (columns)."""
        import pandas as pd

        return pd.DataFrame({name: r.per_class_ap() for name, r in self.results.items()})

    def _found(self) -> dict[str, list[np.ndarray]]:
        """Per model and image: whether each ground-truth box was found (a true positive at IoU 0.5)."""
        return {n: [o == "tp" for o in r.matches.truth_outcomes] for n, r in self.results.items()}

    def rows(self, found_by: str, missed_by: str, cls: str | int | None = None) -> np.ndarray:
        """The images with a ground-truth box (of class ``cls``, if given) ``found_by`` found and ``missed_by`` not."""
        for name in (found_by, missed_by):
            if name not in self.results:
                msg = f"{name!r} is not one of the compared predictions {list(self.results)}"
                raise InvalidOptionError(msg)
        found = self._found()
        first = self.results[found_by]
        k = None if cls is None else first.class_index(cls)
        hit = []
        for image, (a, b) in enumerate(zip(found[found_by], found[missed_by], strict=True)):
            differs = a & ~b & (first.matches.truth_outcomes[image] != "ignored")
            if k is not None:
                differs &= first.truth_classes(image) == k
            hit.append(bool(differs.any()))
        return np.flatnonzero(hit)

    def differ(self) -> pd.DataFrame:
        """The images where the models differ, at IoU 0.5.

        An image is listed when a ground-truth box is a true positive of one model and missed by another,
        or when the models make different numbers of false positives. Columns: ``row``, ``key``, then for
        each model ``<name>_tp``, ``<name>_fp``, ``<name>_fn`` (its boxes' outcomes in that image) and
        ``<name>_only`` (ground-truth boxes it alone found).
        """
        import pandas as pd

        found = self._found()
        names = list(self.results)
        counts = {n: r.counts() for n, r in self.results.items()}
        images = len(self.keys)
        only = {n: np.zeros(images, dtype=np.int64) for n in names}
        disagree = np.zeros(images, dtype=bool)
        for image in range(images):
            stacked = np.stack([found[n][image] for n in names])  # models x ground-truth boxes
            if not stacked.size:
                continue
            disagree[image] = bool((stacked.any(axis=0) & ~stacked.all(axis=0)).any())
            alone = stacked & (stacked.sum(axis=0) == 1)
            for i, n in enumerate(names):
                only[n][image] = int(alone[i].sum())
        fps = np.stack([counts[n]["fp"] for n in names])
        rows = np.flatnonzero(disagree | (fps.min(axis=0) != fps.max(axis=0)))
        table: dict[str, object] = {"row": rows, "key": [self.keys[r] for r in rows]}
        for n in names:
            for outcome in ("tp", "fp", "fn"):
                table[f"{n}_{outcome}"] = counts[n][outcome][rows]
            table[f"{n}_only"] = only[n][rows]
        return pd.DataFrame(table)

    def __repr__(self) -> str:
        figures = ", ".join(f"{n}: mAP {r.map:.4f}" for n, r in self.results.items())
        return f"<DetectionComparison of {len(self.results)} models over {len(self.keys):,} images: {figures}>"

    def _repr_html_(self) -> str:
        import html

        summary = self.summary()
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in summary.columns)
        body = "".join(
            f"<tr><th>{html.escape(str(name))}</th>"
            + "".join(f"<td>{v:.4f}</td>" if isinstance(v, float) else f"<td>{v}</td>" for v in row)
            + "</tr>"
            for name, row in zip(summary.index, summary.itertuples(index=False), strict=True)
        )
        return f"<div><p>{html.escape(repr(self))}</p><table><tr><th></th>{head}</tr>{body}</table></div>"
