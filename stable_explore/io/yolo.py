"""YOLO (Ultralytics) folders in and out: ``images/`` and ``labels/`` side by side, one text file per image.

What is read::

    root/
      data.yaml            names: [cat, dog] or {0: cat, 1: dog}  (or classes.txt: one name a line)
      images/[split/]a.jpg
      labels/[split/]a.txt  one box a line: "class cx cy w h" (fractions of the image), or with a
                            sixth number, a prediction's score; no file or an empty file: no boxes

Every image under ``images/`` is a row (key: its path under ``images/``, such as ``train/a.jpg``);
``split`` is the folder under ``images/`` (empty for images directly in it). A label file without
its image, a class index with no name, a line that is not five or six numbers, and a box leaving
[0, 1] are :class:`~stable_explore.errors.AnnotationError` naming the file and line. Segment and
keypoint lines (more numbers) are refused as such.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore._optional import require
from stable_explore.dataset._export_target import export_folder, write_export_marker
from stable_explore.errors import AnnotationError, ColumnNotFoundError, SchemaError
from stable_explore.io._numbers import float_text
from stable_explore.schema import Boxes, Features, Image, Value, convert_box
from stable_explore.schema.image_header import displayed_size, file_displayed_size
from stable_explore.storage.backends.fsutil import publish_dir, temp_dir_beside

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["IMAGE_SUFFIXES", "YoloImport", "read_yolo", "write_yolo", "yolo_rows"]

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
_SLACK = 1e-6  # normalised coordinates may pass 0 or 1 by this much (rounding in the writer)


@dataclass(frozen=True)
class YoloImport:
    """A checked YOLO folder: the features of its rows and the rows as ``(path under images/, row)`` pairs."""

    features: Features
    rows: list[tuple[str, dict[str, Any]]]


def read_yolo(root: str | Path) -> YoloImport:
    r"""Read and check a YOLO folder (see the module's docstring): rows for :func:`stable_explore.build`.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np
    >>> from PIL import Image
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "images").mkdir(); (root / "labels").mkdir()
    >>> Image.fromarray(np.zeros((10, 10, 3), np.uint8)).save(root / "images" / "a.png")
    >>> _ = (root / "labels" / "a.txt").write_text("1 0.5 0.5 0.2 0.4\n")
    >>> _ = (root / "classes.txt").write_text("cat\ndog\n")
    >>> read_yolo(root).rows[0][1]["objects"]
    [{'bbox': [0.5, 0.5, 0.2, 0.4], 'category': 1}]
    """
    folder = Path(root)
    names = _names(folder)
    images_root, labels_root = folder / "images", folder / "labels"
    if not images_root.is_dir():
        msg = "expected an 'images' folder (and a 'labels' folder beside it), as Ultralytics lays a dataset out"
        raise AnnotationError(msg, path=folder)
    images = sorted(p for p in images_root.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    stems = {p.relative_to(images_root).with_suffix("").as_posix(): p for p in images}
    if labels_root.is_dir():
        for label in sorted(labels_root.rglob("*.txt")):
            if label.relative_to(labels_root).with_suffix("").as_posix() not in stems:
                msg = "this label file has no image of the same name under images/; add the image or remove the file"
                raise AnnotationError(msg, path=label)
    rows = []
    for image in images:
        relative = image.relative_to(images_root)
        label = (labels_root / relative).with_suffix(".txt")
        width, height = _size(image)
        row: dict[str, Any] = {"image": image, "objects": _labels(label, len(names)) if label.is_file() else []}
        row.update(
            file_name=relative.as_posix(),
            split=relative.parent.as_posix() if relative.parent != Path() else "",
            width=width,
            height=height,
        )
        rows.append((relative.as_posix(), row))
    features = Features(
        image=Image(),
        objects=Boxes(names=names, format="cxcywh", normalized=True),
        file_name=Value("string"),
        split=Value("string"),
        width=Value("int64"),
        height=Value("int64"),
    )
    return YoloImport(features, rows)


def yolo_rows(root: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The rows of a YOLO folder, for a build (its argument is a path: its files are the fingerprint)."""
    yield from read_yolo(root).rows


def _size(image: Path) -> tuple[int, int]:
    from stable_explore.errors import EncodingError

    try:
        width, height = file_displayed_size(image)  # as shown: a JPEG's EXIF quarter turn swaps the two
    except EncodingError as exc:
        msg = f"cannot read the image's size: {exc.reason}"
        raise AnnotationError(msg, path=image) from exc
    return width, height


def _names(folder: Path) -> list[str]:
    for candidate in ("data.yaml", "dataset.yaml"):
        if (folder / candidate).is_file():
            return _yaml_names(folder / candidate)
    if (folder / "classes.txt").is_file():
        lines = (folder / "classes.txt").read_text(encoding="utf-8").splitlines()
        return [line.strip() for line in lines if line.strip()]
    msg = "expected data.yaml (with 'names') or classes.txt (one class name a line) to name the classes"
    raise AnnotationError(msg, path=folder)


def _yaml_names(path: Path) -> list[str]:
    yaml = require("yaml", "yolo", "reading a YOLO data.yaml")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        msg = f"not YAML: {exc}"
        raise AnnotationError(msg, path=path) from exc
    names = document.get("names") if isinstance(document, dict) else None
    if isinstance(names, dict) and sorted(names) == list(range(len(names))):
        names = [names[i] for i in range(len(names))]
    if not isinstance(names, list) or not names or not all(isinstance(n, (str, int)) for n in names):
        msg = f"expected 'names' as a list of class names or a mapping 0..n-1 -> name, got {names!r}"
        raise AnnotationError(msg, path=path)
    return [str(n) for n in names]


def _labels(path: Path, classes: int) -> list[dict[str, Any]]:
    boxes = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        where = f"line {number}"
        if len(parts) not in (5, 6):
            kind = "a segment or keypoints (not read here)" if len(parts) > 6 else "too short"
            msg = f"expected 'class cx cy w h' (and a score), got {len(parts)} numbers: {kind}: {line!r}"
            raise AnnotationError(msg, path=path, annotation=where)
        try:
            category = int(parts[0])
            numbers = [float(v) for v in parts[1:]]
        except ValueError as exc:
            msg = f"expected an int class and numbers, got {line!r}"
            raise AnnotationError(msg, path=path, annotation=where) from exc
        if not 0 <= category < classes:
            msg = f"class {category} has no name (there are {classes} names, 0 to {classes - 1})"
            raise AnnotationError(msg, path=path, annotation=where)
        w, h = numbers[2:4]
        if not all(math.isfinite(v) for v in numbers) or w < 0 or h < 0:
            msg = f"the box {numbers[:4]} has a negative size or is not finite"
            raise AnnotationError(msg, path=path, annotation=where)
        left, top, right, bottom = convert_box(numbers[:4], "cxcywh", "xyxy")
        if left < -_SLACK or top < -_SLACK or right > 1 + _SLACK or bottom > 1 + _SLACK:
            msg = f"the box {numbers[:4]} (cx cy w h, fractions of the image) reaches outside the image"
            raise AnnotationError(msg, path=path, annotation=where)
        box: dict[str, Any] = {"bbox": numbers[:4], "category": category}
        if len(numbers) == 5:
            box["score"] = numbers[4]
        boxes.append(box)
    return boxes


def write_yolo(ds: CachedDataset, root: str | Path, *, column: str = "objects", overwrite: bool = False) -> Path:
    """Write a dataset's images and boxes as a YOLO folder (see the module's docstring), whole or not at all."""
    feature = ds.features.get(column)
    if feature is None:
        msg = f"to_yolo: no column {column!r}; the columns are {list(ds.features)}"
        raise ColumnNotFoundError(msg)
    if not isinstance(feature, Boxes):
        msg = f"to_yolo writes a Boxes column; {column!r} is {feature!r}"
        raise SchemaError(msg)
    image_column = ds.features.first_of(Image)
    if image_column is None:
        msg = f"to_yolo writes images and their labels; this dataset has no Image column ({list(ds.features)})"
        raise SchemaError(msg)
    out = export_folder(root, layout="yolo", ds=ds, overwrite=overwrite)
    with temp_dir_beside(out) as folder:
        _write_yolo_files(ds, folder, column, feature, image_column)
        write_export_marker(folder, layout="yolo", ds=ds)
        publish_dir(folder, out)
    return out


def _write_yolo_files(ds: CachedDataset, folder: Path, column: str, feature: Boxes, image_column: str) -> None:
    keys = ds.keys()
    for position, row in enumerate(ds.with_format("python")):
        data = row[image_column]
        if data is None:
            continue
        relative = _relative_name(row, keys[position], data)
        width, height = displayed_size(data)  # the labels' fractions are of the image as shown (EXIF turned)
        image_path = folder / "images" / relative
        if not image_path.resolve().is_relative_to((folder / "images").resolve()):
            msg = f"to_yolo: the file name {relative!r} leads out of {str(folder)!r}; rename it"
            raise SchemaError(msg)
        image_path.parent.mkdir(parents=True, exist_ok=True)
        image_path.write_bytes(data)
        label_path = (folder / "labels" / relative).with_suffix(".txt")
        label_path.parent.mkdir(parents=True, exist_ok=True)
        label_path.write_text(_label_text(row[column], feature, width, height), encoding="utf-8")
    names = ", ".join(_quoted(n) for n in feature.names)
    (folder / "data.yaml").write_text(
        f"# written by stable-explore's to_yolo from {ds.name}@{ds.version}\npath: .\nnames: [{names}]\n",
        encoding="utf-8",
    )


def _quoted(name: str) -> str:
    import json

    return json.dumps(name, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _relative_name(row: dict[str, Any], key: Any, data: bytes) -> str:
    suffix = ".jpg" if data[:3] == b"\xff\xd8\xff" else ".png"
    name = row.get("file_name") or f"{key}{suffix}"
    split = row.get("split")
    if split and not str(name).startswith(f"{split}/"):
        name = f"{split}/{name}"
    return str(name)


def _label_text(value: Any, feature: Boxes, width: int, height: int) -> str:
    if not value or not value["bbox"]:
        return ""
    lines = []
    for i, bbox in enumerate(value["bbox"]):
        cx, cy, w, h = convert_box(bbox, feature.format, "cxcywh")
        if not feature.normalized:
            cx, cy, w, h = cx / width, cy / height, w / width, h / height
        numbers = [float_text(v) if feature.normalized else round(v, 6) for v in (cx, cy, w, h)]
        score = value["score"][i]
        text = " ".join(repr(n) for n in numbers)
        lines.append(f"{value['category'][i]} {text}" + (f" {float_text(score)!r}" if score is not None else ""))
    return "\n".join(lines) + "\n"
