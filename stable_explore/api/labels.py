"""Detection sets from the files other tools write: COCO JSON and YOLO folders, built as versions.

Each checks its whole input first (a bad file raises :class:`~stable_explore.AnnotationError`
naming the file, image and annotation, and nothing is built), then builds with
:func:`stable_explore.build`: every build option applies, and the same files build the same version
(the paths are the build's arguments, so their files' state is its fingerprint).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.api.building import build
from stable_explore.io.coco import coco_rows, read_coco
from stable_explore.io.yolo import read_yolo, yolo_rows

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["from_coco", "from_yolo"]


def from_coco(
    annotations_json: str | Path,
    images_dir: str | Path,
    *,
    predictions: str | Path | None = None,
    name: str | None = None,
    **options: Any,
) -> CachedDataset:
    """Cache a COCO detection set: one row per image (images without boxes too), keyed by image id.

    Parameters
    ----------
    annotations_json:
        A COCO file (``images``, ``annotations``, ``categories``).
    images_dir:
        The folder the images' ``file_name`` are relative to.
    predictions:
        A COCO results file (a list of ``{image_id, category_id, bbox, score}``): a ``predictions``
        column of boxes with scores.
    name:
        The dataset's name (default: the annotation file's name without ``.json``).
    options:
        Any option of :func:`stable_explore.build` (``home=``, ``tag=``, ``description=``...).

    Returns
    -------
    CachedDataset
        Columns ``image``, ``objects`` (:class:`~stable_explore.Boxes`, ``xywh`` pixels, category ids
        kept in ``Boxes.category_ids``, annotation ids in each box's ``id``, other keys as attributes),
        ``image_id``, ``file_name``, ``width``, ``height`` (and ``predictions``).

    Raises
    ------
    AnnotationError
        A box outside its image, a category id with no name, an annotation of an image the file
        has not, an image of no or negative size or without its file; nothing is built.

    Examples
    --------
    >>> import json, tempfile, pathlib, numpy as np, stable_explore as se
    >>> from PIL import Image
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(folder / "a.png")
    >>> coco = {"images": [{"id": 5, "file_name": "a.png", "width": 30, "height": 20}],
    ...         "categories": [{"id": 3, "name": "cat"}, {"id": 7, "name": "dog"}],
    ...         "annotations": [{"id": 9, "image_id": 5, "category_id": 7, "bbox": [1, 2, 10, 5]}]}
    >>> _ = (folder / "pets.json").write_text(json.dumps(coco))
    >>> ds = se.from_coco(folder / "pets.json", folder, home=folder / "home", progress=False)
    >>> ds.keys(), ds[0]["objects"]["category"], ds.features["objects"].category_ids
    ([5], [1], (3, 7))
    """
    checked = read_coco(annotations_json, images_dir, predictions)  # raises before anything is built
    args = (str(annotations_json), str(images_dir), None if predictions is None else str(predictions))
    return build(coco_rows, checked.features, name or Path(annotations_json).stem, args=args, **options)


def from_yolo(root: str | Path, *, name: str | None = None, **options: Any) -> CachedDataset:
    r"""Cache a YOLO (Ultralytics) folder: ``images/``, ``labels/`` and ``data.yaml`` or ``classes.txt``.

    Parameters
    ----------
    root:
        The folder; images under ``images/`` (any subfolders, such as ``train/`` and ``val/``), one
        ``labels/<same path>.txt`` per image (``class cx cy w h`` lines, fractions of the image;
        a sixth number is a score; no file: no boxes). See :mod:`stable_explore.io.yolo`.
    name:
        The dataset's name (default: the folder's name).
    options:
        Any option of :func:`stable_explore.build`.

    Returns
    -------
    CachedDataset
        Columns ``image``, ``objects`` (:class:`~stable_explore.Boxes` ``cxcywh``, normalized),
        ``file_name`` (the path under ``images/``, also the key), ``split`` (its folder), ``width``
        and ``height``.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np, stable_explore as se
    >>> from PIL import Image
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "pets"
    >>> (root / "images").mkdir(parents=True); (root / "labels").mkdir()
    >>> Image.fromarray(np.zeros((10, 10, 3), np.uint8)).save(root / "images" / "a.png")
    >>> _ = (root / "labels" / "a.txt").write_text("1 0.5 0.5 0.2 0.4\n")
    >>> _ = (root / "classes.txt").write_text("cat\ndog\n")
    >>> ds = se.from_yolo(root, home=root.parent / "home", progress=False)
    >>> ds.keys(), ds[0]["objects"]["bbox"]
    (['a.png'], [[0.5, 0.5, 0.20000000298023224, 0.4000000059604645]])
    """
    checked = read_yolo(root)
    return build(yolo_rows, checked.features, name or Path(root).resolve().name, args=(str(root),), **options)
