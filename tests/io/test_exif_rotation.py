"""Photos taken sideways: a JPEG with EXIF orientation 6 or 8 is shown turned, and its COCO/YOLO sizes and boxes are.

The stored bytes stay as they came; the size read at import, the thumbnail and the boxes all take the
image as shown (``ImageOps.exif_transpose``), so a box lands on what it boxes.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import ImageOps

import stable_explore as se
from stable_explore import AnnotationError
from stable_explore.display.images import open_thumbnail
from stable_explore.schema.image_header import displayed_size, file_displayed_size, jpeg_orientation
from stable_explore.signals import box_issues

SHOWN = (60, 40)  # width, height as viewers show the photo
BOX = [5, 5, 20, 10]  # x, y, width, height of the red block, in the shown image's pixels
# what the camera stored for each orientation: the shown image turned back
STORED = {6: PILImage.Transpose.ROTATE_90, 8: PILImage.Transpose.ROTATE_270}


def sideways_jpeg(orientation: int) -> bytes:
    """A JPEG stored 40 x 60 whose EXIF orientation shows it 60 x 40, a red block at BOX when shown."""
    shown = np.full((SHOWN[1], SHOWN[0], 3), 40, np.uint8)
    x, y, w, h = BOX
    shown[y : y + h, x : x + w] = (230, 20, 20)
    stored = PILImage.fromarray(shown).transpose(STORED[orientation])
    exif = PILImage.Exif()
    exif[0x0112] = orientation
    buffer = io.BytesIO()
    stored.save(buffer, format="JPEG", quality=95, exif=exif)
    return buffer.getvalue()


def _red(image: PILImage.Image, box: tuple[float, float, float, float]) -> float:
    """The mean red-minus-green of the pixels inside ``box`` (corners), well inside its edges."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.float64)
    x0, y0, x1, y1 = (round(v) for v in box)
    inner = pixels[y0 + 1 : y1 - 1, x0 + 1 : x1 - 1]
    return float((inner[..., 0] - inner[..., 1]).mean())


@pytest.mark.parametrize("orientation", [6, 8])
def test_the_size_of_a_sideways_jpeg_is_the_shown_one_read_from_its_header(tmp_path: Path, orientation: int) -> None:
    data = sideways_jpeg(orientation)
    with PILImage.open(io.BytesIO(data)) as opened:
        assert opened.size == (40, 60), "stored upright"
        assert opened.getexif()[0x0112] == orientation
        assert ImageOps.exif_transpose(opened).size == SHOWN
    assert jpeg_orientation(data) == orientation
    assert displayed_size(data) == SHOWN
    (tmp_path / "a.jpg").write_bytes(data)
    assert file_displayed_size(tmp_path / "a.jpg") == SHOWN
    tiff = b"MM\x00\x2a\x00\x00\x00\x08\x00\x01" + struct.pack(">HHIHH", 0x0112, 3, 1, 8, 0) + bytes(4)
    block = b"Exif\x00\x00" + tiff  # a big-endian (Motorola) EXIF block, as many cameras write
    assert jpeg_orientation(b"\xff\xd8\xff\xe1" + struct.pack(">H", len(block) + 2) + block + data[2:]) == 8
    plain = io.BytesIO()
    PILImage.new("RGB", (7, 3)).save(plain, format="JPEG")
    assert (jpeg_orientation(plain.getvalue()), displayed_size(plain.getvalue())) == (1, (7, 3))


def _coco_folder(root: Path, orientation: int, size: tuple[int, int]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.jpg").write_bytes(sideways_jpeg(orientation))
    coco = {
        "images": [{"id": 7, "file_name": "a.jpg", "width": size[0], "height": size[1]}],
        "categories": [{"id": 1, "name": "block"}],
        "annotations": [{"id": 3, "image_id": 7, "category_id": 1, "bbox": BOX, "area": 200, "iscrowd": 0}],
    }
    (root / "instances.json").write_text(json.dumps(coco))
    return root


@pytest.mark.parametrize("orientation", [6, 8])
def test_from_coco_takes_a_sideways_photo_as_shown_and_its_thumbnail_and_box_agree(
    tmp_path: Path, orientation: int
) -> None:
    folder = _coco_folder(tmp_path / "coco", orientation, SHOWN)
    ds = se.from_coco(folder / "instances.json", folder, home=tmp_path / "home", progress=False)
    row = ds.with_format("python")[0]
    assert row["image"] == (folder / "a.jpg").read_bytes(), "the file is stored byte for byte"
    assert (row["width"], row["height"]) == SHOWN
    x, y, w, h = ds[0]["objects"]["bbox"][0]
    shown = ImageOps.exif_transpose(PILImage.open(io.BytesIO(row["image"])))
    assert shown.size == SHOWN
    assert _red(shown, (x, y, x + w, y + h)) > 150, "the box is on the red block of the image as shown"
    thumb = open_thumbnail(row["image"], 30)  # the browser's and the compare card's thumbnails
    scale = thumb.size[0] / SHOWN[0]
    assert thumb.size == (30, 20)
    assert _red(thumb, (x * scale, y * scale, (x + w) * scale, (y + h) * scale)) > 100
    assert box_issues(ds).num_rows == 0, "the box is inside the image as shown"


@pytest.mark.parametrize("orientation", [6, 8])
def test_a_coco_size_of_the_stored_pixels_is_refused_naming_the_turn(tmp_path: Path, orientation: int) -> None:
    folder = _coco_folder(tmp_path / "coco", orientation, (40, 60))  # the size before the EXIF turn
    with pytest.raises(AnnotationError, match=r"image 7: the file says 40 x 60, but its file 'a.jpg' is 60 x 40") as e:
        se.from_coco(folder / "instances.json", folder, home=tmp_path / "home", progress=False)
    assert "EXIF orientation" in str(e.value)
    assert "exif_transpose" in str(e.value)
    assert not (tmp_path / "home").exists(), "nothing built"


def test_a_coco_size_that_is_not_the_files_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "coco"
    folder.mkdir()
    PILImage.new("RGB", (30, 20)).save(folder / "b.png")
    coco = {
        "images": [{"id": 1, "file_name": "b.png", "width": 640, "height": 480}],
        "categories": [{"id": 1, "name": "x"}],
        "annotations": [],
    }
    (folder / "instances.json").write_text(json.dumps(coco))
    with pytest.raises(AnnotationError, match=r"image 1: the file says 640 x 480, but its file 'b.png' is 30 x 20"):
        se.from_coco(folder / "instances.json", folder, home=tmp_path / "home", progress=False)


def test_yolo_fractions_are_of_the_image_as_shown_both_ways(tmp_path: Path) -> None:
    root = tmp_path / "yolo"
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    (root / "images" / "a.jpg").write_bytes(sideways_jpeg(6))
    x, y, w, h = BOX
    cx, cy = (x + w / 2) / SHOWN[0], (y + h / 2) / SHOWN[1]
    (root / "labels" / "a.txt").write_text(f"0 {cx} {cy} {w / SHOWN[0]} {h / SHOWN[1]}\n")
    (root / "classes.txt").write_text("block\n")
    ds = se.from_yolo(root, home=tmp_path / "home", progress=False)
    assert (ds[0]["width"], ds[0]["height"]) == SHOWN
    out = ds.to_yolo(tmp_path / "out")
    numbers = [float(v) for v in (out / "labels" / "a.txt").read_text().split()[1:]]
    assert numbers == pytest.approx([cx, cy, w / SHOWN[0], h / SHOWN[1]], abs=1e-5)
    coco = json.loads(ds.to_coco(tmp_path / "a.json").read_text())
    assert (coco["images"][0]["width"], coco["images"][0]["height"]) == SHOWN
    assert coco["annotations"][0]["bbox"] == pytest.approx(BOX, abs=1e-3)


@pytest.mark.parametrize("orientation", [6, 8])
def test_the_browser_draws_boxes_over_the_photo_as_shown(orientation: int) -> None:
    from stable_explore.widgets._overlays import image_size

    # the browser's <img> and thumbnails turn the photo; its boxes (in shown pixels) are scaled by this size
    assert image_size(sideways_jpeg(orientation), se.Image()) == SHOWN
