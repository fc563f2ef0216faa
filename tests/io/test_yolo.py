"""YOLO folders in and out: names from data.yaml or classes.txt, splits, images without labels, bad lines refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import AnnotationError

LABELS = {
    "train/a": "0 0.5 0.5 0.25 0.5\n2 0.125 0.2 0.25 0.4\n",
    "train/b": "",  # an empty label file: no boxes
    "val/c": "1 0.75 0.5 0.5 1.0 0.875\n",  # a sixth number: a score
}


def yolo_folder(root: Path, *, names: str = "data.yaml") -> Path:
    for stem in [*LABELS, "val/d"]:  # val/d has no label file: no boxes
        image = root / "images" / f"{stem}.png"
        image.parent.mkdir(parents=True, exist_ok=True)
        PILImage.fromarray(np.zeros((40, 80, 3), dtype=np.uint8)).save(image)
    for stem, text in LABELS.items():
        label = root / "labels" / f"{stem}.txt"
        label.parent.mkdir(parents=True, exist_ok=True)
        label.write_text(text)
    if names == "data.yaml":
        (root / "data.yaml").write_text(
            "path: .\ntrain: images/train\nval: images/val\nnames:\n  0: cat\n  1: dog\n  2: bird\n"
        )
    else:
        (root / "classes.txt").write_text("cat\ndog\nbird\n")
    return root


@pytest.mark.parametrize("names", ["data.yaml", "classes.txt"])
def test_from_yolo_reads_every_box_split_and_image(tmp_path: Path, names: str) -> None:
    ds = se.from_yolo(yolo_folder(tmp_path / "pets", names=names), home=tmp_path / "h", progress=False)
    assert ds.name == "pets"
    assert ds.features["objects"] == se.Boxes(names=["cat", "dog", "bird"], format="cxcywh", normalized=True)
    assert ds.keys() == ["train/a.png", "train/b.png", "val/c.png", "val/d.png"]
    assert ds["split"] == ["train", "train", "val", "val"]
    assert (ds[0]["width"], ds[0]["height"]) == (80, 40)
    a, b, c, d = (ds[i]["objects"] for i in range(4))
    assert a["bbox"] == [[0.5, 0.5, 0.25, 0.5], [0.125, pytest.approx(0.2), 0.25, pytest.approx(0.4)]]
    assert a["category"] == [0, 2]
    assert a["score"] == [None, None]
    assert b["bbox"] == d["bbox"] == []
    assert c["score"] == [0.875]


def test_to_yolo_round_trips_every_line(tmp_path: Path) -> None:
    source = yolo_folder(tmp_path / "pets")
    ds = se.from_yolo(source, home=tmp_path / "h", progress=False)
    out = ds.to_yolo(tmp_path / "out")
    for stem, text in LABELS.items():
        assert (out / "labels" / f"{stem}.txt").read_text() == text
        assert (out / "images" / f"{stem}.png").read_bytes() == (source / "images" / f"{stem}.png").read_bytes()
    assert (out / "labels" / "val" / "d.txt").read_text() == ""
    back = se.from_yolo(out, name="back", home=tmp_path / "h", progress=False)
    assert back["objects"] == ds["objects"]
    assert back.keys() == ds.keys()
    with pytest.raises(se.ExportTargetError, match="a stable-explore export is already there"):
        ds.to_yolo(tmp_path / "out")
    assert ds.to_yolo(tmp_path / "out", overwrite=True) == out  # a folder an export wrote may be replaced


def test_pixel_boxes_go_out_as_fractions(tmp_path: Path) -> None:
    features = se.Features(image=se.Image(), objects=se.Boxes(names=["cat"], format="xyxy"))
    row = {"image": np.zeros((40, 80, 3), dtype=np.uint8), "objects": {"bbox": [[8, 4, 24, 36]], "category": [0]}}
    ds = se.build([("k", row)], features, name="px", home=tmp_path / "h", progress=False)
    out = ds.to_yolo(tmp_path / "out")
    assert (out / "labels" / "k.txt").read_text() == "0 0.2 0.5 0.2 0.8\n"


@pytest.mark.parametrize(
    ("label", "message"),
    [
        ("3 0.5 0.5 0.1 0.1\n", r"a\.txt, annotation 'line 1': class 3 has no name \(there are 3 names"),
        ("0 0.5 0.5 0.1 0.1\n0 0.95 0.5 0.2 0.1\n", r"annotation 'line 2': the box .* reaches outside the image"),
        ("0 0.5 0.5 0.1\n", r"got 4 numbers: too short"),
        ("0 0.1 0.1 0.2 0.1 0.3 0.3 0.2\n", r"a segment or keypoints"),
        ("0 0.5 0.5 -0.1 0.1\n", r"negative size"),
    ],
)
def test_bad_label_lines_are_refused_naming_file_and_line(tmp_path: Path, label: str, message: str) -> None:
    root = yolo_folder(tmp_path / "pets")
    (root / "labels" / "train" / "a.txt").write_text(label)
    with pytest.raises(AnnotationError, match=message):
        se.from_yolo(root, home=tmp_path / "h", progress=False)
    assert not (tmp_path / "h").exists()


def test_a_label_without_its_image_is_refused(tmp_path: Path) -> None:
    root = yolo_folder(tmp_path / "pets")
    (root / "labels" / "val" / "ghost.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    with pytest.raises(AnnotationError, match=r"ghost\.txt: this label file has no image"):
        se.from_yolo(root, home=tmp_path / "h", progress=False)
