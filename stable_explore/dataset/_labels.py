"""``ds.to_coco``, ``ds.to_yolo`` and box edits (``ds.relabel_boxes``...), mixed into ``CachedDataset``.

The exports hand the work to :mod:`stable_explore.io`; the edits start a draft
(:mod:`stable_explore.versioning.edits`), as ``ds.drop`` and ``ds.relabel`` do.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from stable_explore.dataset._members import DatasetMembers

if TYPE_CHECKING:
    from stable_explore.dataset._patches import Patches
    from stable_explore.dataset.cached_dataset import CachedDataset
    from stable_explore.versioning.edits import Draft

__all__ = ["LabelMethods"]


class LabelMethods(DatasetMembers):
    """Boxes out to other tools' files, and box edits (mixed into ``CachedDataset`` only)."""

    def patches(self, column: str = "objects", *, image: str | None = None) -> Patches:
        """A view with one row per box of ``column``: its crop of the image, box, class, score, row and key.

        FiftyOne's patches view, in the cell: scroll the boxes of a class as tiles and find the wrong
        ones. Making it reads the ``Boxes`` column only; a row's crop is cut from its image when the
        row is read (``patches[i]``, a page of an iteration, ``to_pandas``), each image decoded once
        per page and turned as its EXIF orientation says first. Works on a column of predictions too
        (``score`` then set).

        Parameters
        ----------
        column:
            The :class:`~stable_explore.Boxes` column.
        image:
            The :class:`~stable_explore.Image` column to crop (default: the first one).

        Returns
        -------
        Patches
            ``len``, indexing (a row dict: ``image`` the crop, ``row``, ``key``, ``box``, ``category``,
            ``score``, ``bbox``, ``id``), slices and position lists (views), ``filter``, ``where``
            (``cls=``, score and area ranges), ``sort`` and ``to_pandas``. ``row`` and ``box`` are what
            ``relabel_boxes`` and ``drop_boxes`` take.

        Examples
        --------
        >>> import tempfile, numpy as np, stable_explore as se
        >>> features = se.Features(image=se.Image(), objects=se.Boxes(names=["cat", "dog"]))
        >>> boxes = [{"bbox": [1, 2, 10, 5], "category": "dog"}, {"bbox": [0, 0, 4, 4], "category": "cat"}]
        >>> ds = se.build([{"image": np.zeros((20, 30, 3), np.uint8), "objects": boxes}], features, name="pets",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> dogs = ds.patches().where(cls="dog")
        >>> len(dogs), dogs[0]["row"], dogs[0]["box"], dogs[0]["image"].size
        (1, 0, 0, (10, 5))
        """
        from stable_explore.dataset._patches import patches_of

        return patches_of(cast("CachedDataset", self), column, image=image)

    def to_coco(
        self,
        annotations_json: str | Path,
        *,
        images_dir: str | Path | None = None,
        column: str = "objects",
        overwrite: bool = False,
    ) -> Path:
        """Write the boxes of ``column`` as a COCO detection file (and the images into ``images_dir``).

        Category ids are ``Boxes.category_ids`` (those :func:`~stable_explore.from_coco` read), else
        1..n in the order of the names; image ids the ``image_id`` column, else the row keys (when
        ints); annotation ids each box's ``id`` (a box without one gets the next free number);
        ``area`` and ``iscrowd`` the box's attributes (else width x height and 0), and every other
        attribute (``segmentation``...) as it came. Coordinates are written as the shortest
        decimals their float32 holds (``473.07``, not ``473.070007324``).

        Parameters
        ----------
        annotations_json:
            The file to write (refused if it exists and ``to_coco`` did not write it, or lies in a
            catalog home).
        images_dir:
            A folder for the images, named by ``file_name`` (bytes as stored): new or empty, or one an
            export wrote before (with ``overwrite=True``); written whole or not at all.
        column:
            The :class:`~stable_explore.Boxes` column.
        overwrite:
            Replace an ``images_dir`` an earlier export wrote.

        Returns
        -------
        Path
            ``annotations_json``.

        Examples
        --------
        >>> import json, tempfile, pathlib, stable_explore as se
        >>> home = pathlib.Path(tempfile.mkdtemp())
        >>> features = se.Features(objects=se.Boxes(names=["cat", "dog"], category_ids=[3, 7]))
        >>> rows = [(5, {"objects": [{"bbox": [1, 2, 10.3, 5], "category": "dog", "id": 9}]})]
        >>> ds = se.build(rows, features, name="pets", home=home / "home", progress=False)
        >>> written = json.loads(ds.to_coco(home / "pets.json").read_text())
        >>> written["annotations"]
        [{'id': 9, 'image_id': 5, 'category_id': 7, 'bbox': [1.0, 2.0, 10.3, 5.0], 'area': 51.5, 'iscrowd': 0}]
        """
        from stable_explore.io.coco import write_coco

        ds = cast("CachedDataset", self)
        return write_coco(ds, annotations_json, images_dir=images_dir, column=column, overwrite=overwrite)

    def to_yolo(self, path: str | Path, *, column: str = "objects", overwrite: bool = False) -> Path:
        r"""Write the images and the boxes of ``column`` as a YOLO (Ultralytics) folder.

        ``images/<file_name>`` (under ``<split>/`` when the dataset has a ``split`` column), one
        ``labels/<same name>.txt`` per image (``class cx cy w h`` as fractions of the image, and
        the score when a box has one) and ``data.yaml`` with the names; :func:`~stable_explore.from_yolo`
        reads it back. Images are named by the ``file_name`` column, else by their keys.

        Parameters
        ----------
        path:
            The folder: new or empty, or one an export wrote before (with ``overwrite=True``); written
            whole or not at all.
        column:
            The :class:`~stable_explore.Boxes` column.
        overwrite:
            Replace a folder an earlier export wrote.

        Returns
        -------
        Path
            ``path``.

        Examples
        --------
        >>> import tempfile, pathlib, numpy as np, stable_explore as se
        >>> home = pathlib.Path(tempfile.mkdtemp())
        >>> features = se.Features(image=se.Image(), objects=se.Boxes(names=["cat", "dog"]))
        >>> boxes = {"bbox": [[0, 0, 10, 5]], "category": [1]}
        >>> rows = [("a", {"image": np.zeros((10, 20, 3), np.uint8), "objects": boxes})]
        >>> ds = se.build(rows, features, name="pets", home=home / "home", progress=False)
        >>> (ds.to_yolo(home / "yolo") / "labels" / "a.txt").read_text()
        '1 0.25 0.25 0.5 0.5\n'
        """
        from stable_explore.io.yolo import write_yolo

        return write_yolo(cast("CachedDataset", self), path, column=column, overwrite=overwrite)

    def relabel_boxes(self, changes: dict[int, dict[int, str | int]], *, column: str | None = None) -> Draft:
        """A draft with boxes given new classes: ``ds.relabel_boxes({row: {box_index: "dog"}})``.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> features = se.Features(objects=se.Boxes(names=["cat", "dog"]))
        >>> rows = [{"objects": {"bbox": [[0, 0, 2, 2], [1, 1, 2, 2]], "category": ["cat", "cat"]}}]
        >>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> ds.relabel_boxes({0: {1: "dog"}}).save(message="box 1 is a dog")[0]["objects"]["category"]
        [0, 1]
        """
        from stable_explore.versioning.edits import Draft

        self._check_stored_columns("relabel_boxes")
        return Draft(cast("CachedDataset", self)).relabel_boxes(changes, column=column)

    def drop_boxes(self, changes: dict[int, list[int]], *, column: str | None = None) -> Draft:
        """A draft without some boxes: ``ds.drop_boxes({row: [box_index, ...]})``.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> features = se.Features(objects=se.Boxes(names=["cat", "dog"]))
        >>> rows = [{"objects": {"bbox": [[0, 0, 2, 2], [1, 1, 2, 2]], "category": ["cat", "dog"]}}]
        >>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> ds.drop_boxes({0: [0]}).save(message="box 0 was a shadow")[0]["objects"]["category"]
        [1]
        """
        from stable_explore.versioning.edits import Draft

        self._check_stored_columns("drop_boxes")
        return Draft(cast("CachedDataset", self)).drop_boxes(changes, column=column)

    def set_boxes(self, row: int, boxes: object, *, column: str | None = None) -> Draft:
        """A draft with all the boxes of one row replaced (a dict of lists or a list of box dicts).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> features = se.Features(objects=se.Boxes(names=["cat", "dog"]))
        >>> ds = se.build([{"objects": []}], features, name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> saved = ds.set_boxes(0, [{"bbox": [1, 2, 3, 4], "category": "dog"}]).save(message="a missed dog")
        >>> saved[0]["objects"]["bbox"]
        [[1.0, 2.0, 3.0, 4.0]]
        """
        from stable_explore.versioning.edits import Draft

        self._check_stored_columns("set_boxes")
        return Draft(cast("CachedDataset", self)).set_boxes(row, boxes, column=column)
