"""box_issues: boxes outside the image, degenerate, tiny and duplicated, and images without boxes, by row and box."""

from __future__ import annotations

from pathlib import Path

import stable_explore as se
from stable_explore.signals import box_issues

FEATURES = se.Features(objects=se.Boxes(names=["cat", "dog"]), width=se.Value("int64"), height=se.Value("int64"))
ROWS = [
    ("a", {"objects": {"bbox": [[0, 0, 20, 20], [35, 0, 10, 10]], "category": [0, 1]}, "width": 40, "height": 30}),
    ("b", {"objects": {"bbox": [[5, 5, 0, 10], [1, 1, 3, 30]], "category": [1, 1]}, "width": 40, "height": 40}),
    ("c", {"objects": [], "width": 40, "height": 40}),
    (
        "d",
        {
            "objects": {"bbox": [[0, 0, 20, 20], [1, 0, 20, 20], [0, 0, 20, 20]], "category": [0, 0, 1]},
            "width": 40,
            "height": 40,
        },
    ),
]


def test_every_kind_of_box_issue_is_named_by_row_box_and_class(tmp_path: Path) -> None:
    ds = se.build(ROWS, FEATURES, name="det", home=tmp_path, progress=False)
    found = [(r["key"], r["box"], r["category"], r["issue"], r["other"]) for r in box_issues(ds).to_pylist()]
    assert found == [
        ("a", 1, "dog", "outside", -1),  # reaches x=45 in a 40-pixel-wide image
        ("b", 0, "dog", "degenerate", -1),
        ("b", 1, "dog", "tiny", -1),  # 3 pixels wide
        ("c", -1, None, "no boxes", -1),
        ("d", 1, "cat", "duplicate", 0),  # the dog over the same place is another class: no duplicate
    ]
    view = ds.select([3, 1])
    assert [(r["row"], r["key"], r["issue"]) for r in box_issues(view).to_pylist()] == [
        (0, "d", "duplicate"),
        (1, "b", "degenerate"),
        (1, "b", "tiny"),
    ]
    fixed = ds.drop_boxes({0: [1], 1: [0, 1], 3: [1]}).drop([2]).save(message="clean", progress=False)
    assert box_issues(fixed).num_rows == 1  # b has no boxes left
    assert box_issues(fixed).column("issue").to_pylist() == ["no boxes"]


def test_normalized_boxes_use_the_image_size_for_tiny(tmp_path: Path) -> None:
    features = se.Features(
        objects=se.Boxes(names=["cat"], format="cxcywh", normalized=True),
        width=se.Value("int64"),
        height=se.Value("int64"),
    )
    rows = [
        {
            "objects": {"bbox": [[0.5, 0.5, 0.01, 0.5], [0.5, 0.5, 0.5, 0.5]], "category": [0, 0]},
            "width": 100,
            "height": 100,
        }
    ]
    ds = se.build(rows, features, name="yolo", home=tmp_path, progress=False)
    assert [(r["box"], r["issue"]) for r in box_issues(ds).to_pylist()] == [(0, "tiny")]
