"""Box edits on a draft: relabel, drop and set boxes, combined with row drops and relabels, saved as versions."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import EncodingError, RowIndexError

NAMES = ["cat", "dog", "bird"]
FEATURES = se.Features(
    image=se.Image(), objects=se.Boxes(names=NAMES), label=se.ClassLabel(names=["day", "night"]), x=se.Value("int64")
)


def _jpeg(i: int) -> bytes:
    pixels = np.random.default_rng(i).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, format="JPEG", quality=80)
    return buffer.getvalue()


def scenes(n: int) -> Any:
    for i in range(n):
        boxes = [{"bbox": [b, b, 10, 10], "category": NAMES[(i + b) % 3], "id": 100 * i + b} for b in range(3)]
        yield f"img{i:04d}", {"image": _jpeg(i), "objects": boxes, "label": i % 2, "x": i}


@pytest.fixture
def ds(tmp_path: Path) -> se.CachedDataset:
    return se.build(scenes, FEATURES, args=(40,), home=tmp_path, progress=False)


def test_box_edits_combine_with_drops_and_relabels_by_origin_rows_and_boxes(ds: se.CachedDataset) -> None:
    draft = (
        ds.drop([0, 1])
        .relabel({4: "night"})
        .drop_boxes({2: [0]})
        .relabel_boxes({2: {2: "cat"}, 7: {0: "bird"}})  # box 2 of row 2 is still its third box
        .set_boxes(9, [{"bbox": [1, 2, 3, 4], "category": "dog"}])
        .relabel_boxes({9: {0: "cat"}})  # after a set, indexes mean the boxes it gave
    )
    assert "drop 2, relabel 1, edit the boxes of 3 row(s)" in repr(draft)
    saved = draft.save(message="boxes", progress=False)
    assert len(saved) == 38
    row = {key: saved[i] for i, key in enumerate(saved.keys())}
    assert row["img0002"]["objects"]["id"] == [201, 202]
    assert row["img0002"]["objects"]["category"] == [0, 0]  # bird dropped, cat kept, dog -> cat
    assert row["img0007"]["objects"]["category"] == [2, 2, 0]
    assert row["img0009"]["objects"] == {"bbox": [[1.0, 2.0, 3.0, 4.0]], "category": [0], "score": [None], "id": [None]}
    assert row["img0004"]["label"] == 1
    assert row["img0003"]["objects"] == ds[3]["objects"]
    untouched = [k for k in row if k not in ("img0002", "img0007", "img0009", "img0004")]
    assert all(row[k]["objects"] == ds[ds.keys().index(k)]["objects"] for k in untouched)


def test_a_box_relabelled_back_is_no_edit_and_bad_edits_name_row_and_box(ds: se.CachedDataset) -> None:
    current = NAMES[ds[4]["objects"]["category"][1]]
    draft = ds.relabel_boxes({4: {1: "bird" if current != "bird" else "cat"}}).relabel_boxes({4: {1: current}})
    assert not draft.pending_edits
    with pytest.raises(RowIndexError, match=r"row 4, column 'objects': no box 3 \(the row has 3 boxes, 0 to 2\)"):
        ds.relabel_boxes({4: {3: "cat"}})
    with pytest.raises(RowIndexError, match="box 1 is dropped in this draft already"):
        ds.drop_boxes({4: [1]}).relabel_boxes({4: {1: "cat"}})
    with pytest.raises(EncodingError, match=r"row 4, field 'objects': box 0: unknown class 'cta'"):
        ds.relabel_boxes({4: {0: "cta"}})
    with pytest.raises(se.ColumnNotFoundError, match="no Boxes column named 'label'"):
        ds.drop_boxes({4: [0]}, column="label")


def test_a_two_box_edit_of_400_images_writes_two_rows_not_the_shard(tmp_path: Path) -> None:
    ds = se.build(scenes, FEATURES, args=(400,), home=tmp_path, progress=False)
    shard_bytes = sum(p.stat().st_size for p in ds.cache_dir.glob("*.arrow"))
    saved = ds.relabel_boxes({10: {1: "bird"}}).drop_boxes({300: [2]}).save(message="two boxes", progress=False)
    new = {p.name: p.stat().st_size for p in saved.cache_dir.rglob("*") if p.is_file() and p.stat().st_nlink == 1}
    written = sum(new.values())
    print(f"two-box edit on 400 images: wrote {written:,} bytes ({new}); the shards hold {shard_bytes:,} bytes")
    assert written < shard_bytes / 20
    assert written < 40 * 1024
    assert saved[10]["objects"]["category"][1] == 2
    assert saved[300]["objects"]["id"] == [30000, 30001]
    operations = json.loads((saved.cache_dir / "_metadata.json").read_text())
    assert "two boxes" in json.dumps(operations)
