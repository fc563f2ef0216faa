"""COCO detection files in and out: one row per image, its boxes a ``Boxes`` column, ids kept as they are.

Reading checks the whole file before any row is built: every image has a positive size and a file,
every annotation an image, a named category and a box inside its image (one pixel of slack);
predictions (a COCO results file) the same, except that a predicted box may leave the image. Each
problem is an :class:`~stable_explore.errors.AnnotationError` naming the file, image and annotation.

Category ids stay the file's (``Boxes.category_ids`` maps class indexes to them and back), image
ids stay the row keys and the ``image_id`` column, annotation ids stay each box's ``id``, and every
other key of an annotation (``area``, ``iscrowd``, ``segmentation``...) is a box attribute written
back as it came.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from typing_extensions import NotRequired, TypedDict, TypeIs

from stable_explore._json import Json, JsonObject
from stable_explore.dataset._export_target import export_file, export_folder, write_export_marker
from stable_explore.errors import (
    AnnotationError,
    ColumnNotFoundError,
    EncodingError,
    ExportTargetError,
    InvalidOptionError,
    SchemaError,
)
from stable_explore.io._numbers import float_text
from stable_explore.schema import Boxes, Features, Image, Value, convert_box
from stable_explore.schema.image_header import displayed_size, file_displayed_size, jpeg_orientation
from stable_explore.storage.backends.fsutil import publish_dir, temp_dir_beside

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["CocoImport", "CocoRow", "coco_rows", "read_coco", "write_coco"]

_SLACK = 1.0  # pixels a ground-truth box may reach past the image's edge (rounding in other tools' exports)
_WRITER = "stable-explore to_coco"  # info.description of the files to_coco writes (it overwrites those only)

ImageId: TypeAlias = int | str  # COCO's image ids are ints; some tools' exports use strings
Box: TypeAlias = JsonObject  # one box of a row: 'bbox', 'category', maybe 'id' and 'score', the file's other keys


class CocoRow(TypedDict):
    """One image of a COCO file as a row to build: its file, boxes and the fields of its 'images' entry."""

    image: Path
    objects: list[Box]
    image_id: ImageId
    file_name: str
    width: int
    height: int
    predictions: NotRequired[list[Box]]


class _CheckedImage(TypedDict):
    """An 'images' entry once read and checked, with the path of its file."""

    path: Path
    file_name: str
    width: int
    height: int


class _ImageEntry(TypedDict):
    """An 'images' entry as to_coco writes it (the size None when the row has none and no image to read it from)."""

    id: ImageId
    file_name: str
    width: int | None
    height: int | None


class _Category(TypedDict):
    """A 'categories' entry."""

    id: int
    name: str


class _Info(TypedDict):
    """The 'info' object to_coco writes: ``description`` is how it knows a file it may overwrite."""

    description: str
    version: str
    dataset: str | None


class _Document(TypedDict):
    """A COCO detection file as to_coco writes it (annotations are objects: a box's attributes become keys)."""

    info: _Info
    images: list[_ImageEntry]
    annotations: list[dict[str, object]]
    categories: list[_Category]


@dataclass(frozen=True)
class CocoImport:
    """A checked COCO file: the features of its rows, and the rows as ``(image id, row)`` pairs."""

    features: Features
    rows: list[tuple[ImageId, CocoRow]]


def read_coco(
    annotations: str | Path,
    images_dir: str | Path,
    predictions: str | Path | None = None,
    *,
    check_sizes: bool = True,
) -> CocoImport:
    """Read and check a COCO detection file (and a results file): rows for :func:`stable_explore.build`.

    ``check_sizes`` reads each image file's header (its size as shown, EXIF turn applied) to check
    the file's ``width`` and ``height``; :func:`coco_rows` skips it, the files having been checked by
    the read that came before the build.

    Examples
    --------
    >>> import json, tempfile, pathlib, numpy as np
    >>> from PIL import Image
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(folder / "a.png")
    >>> coco = {"images": [{"id": 5, "file_name": "a.png", "width": 30, "height": 20}],
    ...         "categories": [{"id": 3, "name": "cat"}],
    ...         "annotations": [{"id": 9, "image_id": 5, "category_id": 3, "bbox": [1, 2, 10, 5]}]}
    >>> _ = (folder / "a.json").write_text(json.dumps(coco))
    >>> read_coco(folder / "a.json", folder).rows[0][1]["objects"]
    [{'bbox': [1, 2, 10, 5], 'category': 0, 'id': 9}]
    """
    path = Path(annotations)
    document = _load(path)
    if not isinstance(document, Mapping):
        msg = f"expected a COCO object with 'images', 'annotations' and 'categories', got {type(document).__name__}"
        raise AnnotationError(msg, path=path)
    categories = _categories(document.get("categories"), path)
    images = _images(document.get("images"), path, Path(images_dir), check_sizes=check_sizes)
    objects = _boxes(document.get("annotations", []), path, images, categories, results=False)
    names = [name for _, name in categories]
    ids = [category_id for category_id, _ in categories]
    columns: dict[str, Image | Boxes | Value] = {"image": Image(), "objects": Boxes(names=names, category_ids=ids)}
    id_type = "string" if any(isinstance(i, str) for i in images) else "int64"
    columns.update(image_id=Value(id_type), file_name=Value("string"), width=Value("int64"), height=Value("int64"))
    found: dict[ImageId, list[Box]] | None = None
    if predictions is not None:
        found = _boxes(_results(Path(predictions)), Path(predictions), images, categories, results=True)
        columns["predictions"] = Boxes(names=names, category_ids=ids)
    rows: list[tuple[ImageId, CocoRow]] = []
    for image_id, image in images.items():
        row = CocoRow(
            image=image["path"],
            objects=objects.get(image_id, []),
            image_id=image_id,
            file_name=image["file_name"],
            width=image["width"],
            height=image["height"],
        )
        if found is not None:
            row["predictions"] = found.get(image_id, [])
        rows.append((image_id, row))
    return CocoImport(Features(columns), rows)


def coco_rows(annotations: str, images_dir: str, predictions: str | None = None) -> Iterator[tuple[ImageId, CocoRow]]:
    """The rows of a COCO file, for a build (its arguments are paths: their files are the fingerprint)."""
    yield from read_coco(annotations, images_dir, predictions, check_sizes=False).rows


def _load(path: Path) -> Json:
    try:
        with path.open("rb") as handle:
            document: Json = json.load(handle)
            return document
    except OSError as exc:
        msg = f"cannot read the file: {exc.strerror or exc}"
        raise AnnotationError(msg, path=path) from exc
    except ValueError as exc:
        msg = f"not JSON: {exc}"
        raise AnnotationError(msg, path=path) from exc


def _is_int(value: object) -> TypeIs[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeIs[int | float]:
    """A finite int or float (a bool is no number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _categories(entries: Json, path: Path) -> list[tuple[int, str]]:
    if not isinstance(entries, list) or not entries:
        msg = "expected a non-empty 'categories' list of {'id': int, 'name': str}"
        raise AnnotationError(msg, path=path)
    seen: dict[int, str] = {}
    names: dict[str, int] = {}
    for entry in entries:
        category_id = entry.get("id") if isinstance(entry, Mapping) else None
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not _is_int(category_id) or not isinstance(name, str):
            msg = f"expected a category {{'id': int, 'name': str}}, got {entry!r}"
            raise AnnotationError(msg, path=path)
        if category_id in seen or name in names:
            msg = (
                f"category {category_id} ({name!r}) repeats an id or a name of category {names.get(name, category_id)}"
            )
            raise AnnotationError(msg, path=path)
        seen[category_id] = name
        names[name] = category_id
    return sorted(seen.items())


def _images(entries: Json, path: Path, folder: Path, *, check_sizes: bool = True) -> dict[ImageId, _CheckedImage]:
    if not isinstance(entries, list):
        msg = "expected an 'images' list of {'id', 'file_name', 'width', 'height'}"
        raise AnnotationError(msg, path=path)
    images: dict[ImageId, _CheckedImage] = {}
    for entry in entries:
        image_id = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not (_is_int(image_id) or isinstance(image_id, str)):
            msg = f"expected an image with an int 'id', got {entry!r}"
            raise AnnotationError(msg, path=path)
        if image_id in images:
            msg = "two images have this id; give each image its own id"
            raise AnnotationError(msg, path=path, image=image_id)
        file_name, width, height = entry.get("file_name"), entry.get("width"), entry.get("height")
        if not isinstance(file_name, str) or not file_name:
            msg = f"expected a 'file_name', got {file_name!r}"
            raise AnnotationError(msg, path=path, image=image_id)
        if not (_is_int(width) and _is_int(height)) or width <= 0 or height <= 0:
            msg = f"expected a positive int 'width' and 'height', got {width!r} x {height!r}"
            raise AnnotationError(msg, path=path, image=image_id)
        image_path = folder / file_name
        if not image_path.is_file():
            msg = f"its file {file_name!r} is not in {str(folder)!r}"
            raise AnnotationError(msg, path=path, image=image_id)
        if check_sizes:
            _check_size(image_path, width, height, path=path, image=image_id)
        images[image_id] = {"path": image_path, "file_name": file_name, "width": width, "height": height}
    return images


def _check_size(image_path: Path, width: int, height: int, *, path: Path, image: ImageId) -> None:
    """The file's size as shown (a JPEG's EXIF rotation applied) must be the ``width`` x ``height`` its boxes use."""
    try:
        shown = file_displayed_size(image_path)
    except (EncodingError, OSError) as exc:
        reason = exc.reason if isinstance(exc, EncodingError) else (exc.strerror or str(exc))
        msg = f"cannot read the size of its file {image_path.name!r}: {reason}"
        raise AnnotationError(msg, path=path, image=image) from exc
    if shown == (width, height):
        return
    turned = shown == (height, width) and _orientation_of(image_path) in (5, 6, 7, 8)
    msg = f"the file says {width} x {height}, but its file {image_path.name!r} is {shown[0]} x {shown[1]} as shown"
    if turned:
        msg += (
            f" (its EXIF orientation turns the stored {width} x {height} pixels a quarter, as viewers and "
            "ImageOps.exif_transpose do); COCO's sizes and boxes are of the image as shown: fix 'width', "
            "'height' and the boxes, or save the file turned (ImageOps.exif_transpose) without the EXIF tag"
        )
    else:
        msg += "; fix the image's 'width' and 'height' (its boxes are in the same pixels), or the file"
    raise AnnotationError(msg, path=path, image=image)


def _orientation_of(image_path: Path) -> int:
    """The EXIF orientation of an image file (1 when none or not a JPEG)."""
    with image_path.open("rb") as handle:
        return jpeg_orientation(handle.read(1 << 16))


def _results(path: Path) -> list[Json]:
    document = _load(path)
    if isinstance(document, dict):
        annotations = document.get("annotations")
        if isinstance(annotations, list):
            return annotations
    if not isinstance(document, list):
        msg = "expected a COCO results list of {'image_id', 'category_id', 'bbox', 'score'}"
        raise AnnotationError(msg, path=path)
    return document


def _boxes(
    entries: Json,
    path: Path,
    images: Mapping[ImageId, _CheckedImage],
    categories: list[tuple[int, str]],
    *,
    results: bool,
) -> dict[ImageId, list[Box]]:
    """Each image's boxes, checked, in the file's order."""
    if not isinstance(entries, list):
        msg = "expected an 'annotations' list"
        raise AnnotationError(msg, path=path)
    index_of = {category_id: index for index, (category_id, _) in enumerate(categories)}
    out: dict[ImageId, list[Box]] = {}
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            msg = f"expected an annotation object, got {entry!r}"
            raise AnnotationError(msg, path=path, annotation=f"#{position}")
        annotation = entry.get("id", f"#{position}")
        image_id = _reference(entry.get("image_id"))
        if image_id is None or image_id not in images:
            msg = f"its image_id {entry.get('image_id')!r} is no image of the file's 'images'"
            raise AnnotationError(msg, path=path, annotation=annotation)
        category_id = _reference(entry.get("category_id"))
        if not _is_int(category_id) or category_id not in index_of:
            msg = f"category_id {entry.get('category_id')!r} has no name in 'categories' (ids {sorted(index_of)})"
            raise AnnotationError(msg, path=path, image=image_id, annotation=annotation)
        problem = _checked_bbox(entry.get("bbox"), images[image_id], results=results)
        if problem is not None:
            raise AnnotationError(problem, path=path, image=image_id, annotation=annotation)
        box: Box = {"bbox": entry["bbox"], "category": index_of[category_id]}
        if results:
            score = entry.get("score")
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                msg = f"expected a number 'score', got {score!r}"
                raise AnnotationError(msg, path=path, image=image_id, annotation=annotation)
            box["score"] = score
        if "id" in entry:
            if not _is_int(entry["id"]):
                msg = f"expected an int annotation 'id', got {entry['id']!r}"
                raise AnnotationError(msg, path=path, image=image_id, annotation=annotation)
            box["id"] = entry["id"]
        skip = ("image_id", "category_id", "bbox", "id", "score")
        box.update({k: v for k, v in entry.items() if k not in skip and v is not None})
        out.setdefault(image_id, []).append(box)
    return out


def _reference(value: Json) -> ImageId | None:
    """An image or category id as an annotation gives it: an int (``5.0`` read as ``5``) or a str, else None."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if _is_int(value) or isinstance(value, str) else None


def _checked_bbox(bbox: Json, image: _CheckedImage, *, results: bool) -> str | None:
    """What is wrong with a box (x, y, width, height in pixels), or None."""
    numbers = [v for v in bbox if _is_number(v)] if isinstance(bbox, list) else []
    if not isinstance(bbox, list) or len(bbox) != 4 or len(numbers) != 4:
        return f"expected 'bbox' as 4 finite numbers [x, y, width, height], got {bbox!r}"
    x, y, w, h = numbers
    if w < 0 or h < 0:
        return f"the box {bbox} has a negative size ({w} x {h})"
    width, height = image["width"], image["height"]
    if not results and (x < -_SLACK or y < -_SLACK or x + w > width + _SLACK or y + h > height + _SLACK):
        return (
            f"the box {bbox} (x, y, width, height) reaches outside the {width} x {height} image "
            f"(to x={x + w:g}, y={y + h:g}); fix the box or the image's size"
        )
    return None


def write_coco(
    ds: CachedDataset,
    annotations: str | Path,
    *,
    images_dir: str | Path | None = None,
    column: str = "objects",
    overwrite: bool = False,
) -> Path:
    """Write a dataset's boxes as a COCO detection file (and its images into ``images_dir``)."""
    feature = ds.features.get(column)
    if feature is None:
        msg = f"to_coco: no column {column!r}; the columns are {list(ds.features)}"
        raise ColumnNotFoundError(msg)
    if not isinstance(feature, Boxes):
        msg = f"to_coco writes a Boxes column; {column!r} is {feature!r}"
        raise SchemaError(msg)
    target = export_file(annotations, what="COCO", ds=ds)
    _check_target(target)
    image_column = ds.features.first_of(Image)
    if images_dir is None:
        return _write_coco_files(ds, target, None, column, feature, image_column)
    out = export_folder(images_dir, layout="coco images", ds=ds, overwrite=overwrite)
    with temp_dir_beside(out) as folder:
        _write_coco_files(ds, target, folder, column, feature, image_column)
        write_export_marker(folder, layout="coco images", ds=ds)
        publish_dir(folder, out)
    return target


def _write_coco_files(
    ds: CachedDataset, target: Path, folder: Path | None, column: str, feature: Boxes, image_column: str | None
) -> Path:
    ids = list(feature.category_ids or range(1, len(feature.names) + 1))
    images: list[_ImageEntry] = []
    written: list[dict[str, object]] = []
    keys = ds.keys()
    for position, row in enumerate(ds.with_format("python")):
        image = _image_entry(row, keys[position], position, image_column)
        images.append(image)
        if folder is not None and image_column is not None and row.get(image_column) is not None:
            _write_image(folder, image["file_name"], row[image_column])
        for box in _stored_boxes(row.get(column)):
            written.append(_annotation(box, image, ids, feature))
    _number_annotations(written)
    document: _Document = {
        "info": {"description": _WRITER, "version": ds.version, "dataset": ds.name},
        "images": images,
        "annotations": written,
        "categories": [{"id": i, "name": n} for i, n in zip(ids, feature.names, strict=True)],
    }
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    temporary.replace(target)
    return target


def _check_target(target: Path) -> None:
    if target.is_dir():
        msg = f"to_coco: {str(target)!r} is a folder; give the path of the JSON file to write"
        raise ExportTargetError(msg)
    if target.exists():
        try:
            mine = json.loads(target.read_text(encoding="utf-8")).get("info", {}).get("description") == _WRITER
        except (ValueError, AttributeError, OSError):
            mine = False
        if not mine:
            msg = f"to_coco: {str(target)!r} exists and stable-explore did not write it; give a new path"
            raise ExportTargetError(msg)
    target.parent.mkdir(parents=True, exist_ok=True)


def _image_entry(row: Mapping[str, object], key: object, position: int, image_column: str | None) -> _ImageEntry:
    data = row.get(image_column) if image_column else None
    size = displayed_size(data) if isinstance(data, bytes) and ("width" not in row or "height" not in row) else None
    image_id = row.get("image_id", key if isinstance(key, int) else position)
    file_name = row.get("file_name") or f"{key}.{_extension(data)}"
    width = row["width"] if "width" in row else (size[0] if size else None)
    height = row["height"] if "height" in row else (size[1] if size else None)
    where = f"to_coco: row {key!r} (index {position})"
    if not (_is_int(image_id) or isinstance(image_id, str)):
        msg = f"{where}: expected an int or str 'image_id', found {image_id!r}; fix the column or drop it"
        raise SchemaError(msg)
    if not isinstance(file_name, str):
        msg = f"{where}: expected a str 'file_name', found {file_name!r}; fix the column or drop it"
        raise SchemaError(msg)
    if not (width is None or _is_int(width)) or not (height is None or _is_int(height)):
        msg = f"{where}: expected int 'width' and 'height', found {width!r} x {height!r}; fix the columns"
        raise SchemaError(msg)
    return {"id": image_id, "file_name": file_name, "width": width, "height": height}


def _extension(data: object) -> str:
    if isinstance(data, bytes) and data[:3] == b"\xff\xd8\xff":
        return "jpg"
    return "png"


def _write_image(folder: Path, file_name: str, data: bytes) -> None:
    path = (folder / file_name).resolve()
    if not path.is_relative_to(folder.resolve()):
        msg = f"to_coco: the file name {file_name!r} leads out of {str(folder)!r}; rename it"
        raise InvalidOptionError(msg)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _stored_boxes(value: Mapping[str, Sequence[object]] | None) -> list[dict[str, object]]:
    """A decoded row of boxes (dict of lists: 'bbox', 'category', maybe 'id', 'score', attributes), a dict per box."""
    if not value:
        return []
    count = len(value["bbox"])
    return [{name: column[i] for name, column in value.items()} for i in range(count)]


def _box_fields(box: Mapping[str, object]) -> tuple[Sequence[float], int, int | None, float | None]:
    """A stored box's 'bbox', 'category', 'id' and 'score', as a Boxes column decodes them."""
    bbox, category, box_id, score = box["bbox"], box["category"], box.get("id"), box.get("score")
    coordinates = [v for v in bbox if _is_number(v)] if isinstance(bbox, (list, tuple)) else []
    if len(coordinates) != 4 or not _is_int(category) or not (box_id is None or _is_int(box_id)):
        msg = f"to_coco: a stored box is not a Boxes column's (4 numbers, an int category and id): {dict(box)!r}"
        raise SchemaError(msg)
    if score is not None and not _is_number(score):
        msg = f"to_coco: a stored box's score is no number: {score!r}"
        raise SchemaError(msg)
    return coordinates, category, box_id, score


def _annotation(box: Mapping[str, object], image: _ImageEntry, ids: list[int], feature: Boxes) -> dict[str, object]:
    coordinates, category, box_id, score = _box_fields(box)
    x, y, w, h = convert_box(coordinates, feature.format, "xywh")
    if feature.normalized:
        width, height = image["width"], image["height"]
        if width is None or height is None:
            msg = f"to_coco: image {image['id']!r} has normalized boxes but no size; add 'width' and 'height' columns"
            raise SchemaError(msg)
        bbox = [x * width, y * height, w * width, h * height]
    else:
        bbox = [float_text(v) for v in (x, y, w, h)]
    entry: dict[str, object] = {"id": box_id, "image_id": image["id"], "category_id": ids[category]}
    entry["bbox"] = bbox
    if score is not None:
        entry["score"] = float_text(score)
    attributes = {k: v for k, v in box.items() if k not in ("bbox", "category", "score", "id") and v is not None}
    entry["area"] = attributes.pop("area", bbox[2] * bbox[3])
    entry["iscrowd"] = attributes.pop("iscrowd", 0)
    entry.update(attributes)
    return entry


def _number_annotations(annotations: list[dict[str, object]]) -> None:
    """Boxes keep their ids; a box without one (or repeating one) gets the next free number."""
    taken: set[int] = set()
    for entry in annotations:
        box_id = entry["id"]
        if _is_int(box_id) and box_id not in taken:
            taken.add(box_id)
        else:
            entry["id"] = None
    next_id = max(taken, default=0) + 1
    for entry in annotations:
        if entry["id"] is None:
            entry["id"] = next_id
            next_id += 1
