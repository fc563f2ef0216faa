"""The JSON the browser sends its page is what widgets/_messages.py's TypedDicts declare, key for key.

mypy checks the code that builds the messages against the TypedDicts; these tests check the messages
the browser really sends against them at run time (every required key there, no key undeclared, each
value of its declared type), so the declarations cannot drift from what ``static/browser.js`` receives.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore.widgets import _messages as messages
from tests.typed_json import conforms
from tests.widgets.commands import invoke

pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (width, height), (90, 120, 150)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def labelled(tmp_path: Path) -> se.CachedDataset:
    """Images with every kind of label drawn over them: boxes and predicted boxes, a mask, keypoints."""
    label_map = np.zeros((40, 60), dtype=np.uint8)
    label_map[:, :20] = 1
    features = se.Features(
        image=se.Image(),
        objects=se.Boxes(names=["cat", "dog"]),
        predictions=se.Boxes(names=["cat", "dog"], format="cxcywh", normalized=True),
        seg=se.Mask(names=["background", "cat"]),
        pose=se.Keypoints(names=["head", "tail"], skeleton=[(0, 1)]),
        label=se.ClassLabel(names=["a", "b"]),
    )
    rows = [
        {
            "image": _png(60, 40),
            "objects": [{"bbox": [1, 2, 10, 20], "category": "dog"}],
            "predictions": {"bbox": [[0.5, 0.5, 0.2, 0.4]], "category": [0], "score": [0.75]},
            "seg": label_map,
            "pose": [[[10, 20, 2], [30, 30, 1]]],
            "label": 1,
        },
        {"image": _png(30, 30), "objects": None, "predictions": [], "seg": None, "pose": None, "label": 0},
    ]
    return se.build(rows, features, name="labelled", home=tmp_path, progress=False)


def test_a_page_and_a_detail_are_the_messages_declared(labelled: se.CachedDataset) -> None:
    browser = labelled.browse()
    conforms(browser.label_fields, list[messages.LabelField], "label_fields")
    page, buffers = invoke(browser, "refresh")
    conforms(page, messages.PageMessage)
    first = page["cells"][0]
    assert set(first["overlays"]) == {"size", "boxes", "masks", "keypoints"}  # every kind of overlay was checked
    assert first["overlays"]["boxes"]["predictions"][0][-1] == 0.75
    assert len(buffers) == 3  # two thumbnails and one mask
    browser.click(0)
    browser.relabel_selection("a")
    detail, buffers = invoke(browser, "detail", {"row": 0})
    conforms(detail, messages.DetailMessage)
    assert detail["pending_label"] == 0
    assert {"image", "mime", "overlays"} <= set(detail)
    sent: list[object] = []
    browser.send = lambda content, buffers=None: sent.append(content)
    browser._push_detail_marks()
    (marks,) = sent
    conforms(marks, messages.DetailMarksMessage)


def test_an_empty_page_and_rows_without_images_are_the_messages_declared(tmp_path: Path) -> None:
    features = se.Features(text=se.Value("string"), label=se.ClassLabel(names=["a", "b"]))
    ds = se.build(
        [{"text": "x", "label": 0}, {"text": "y", "label": 1}], features, name="t", home=tmp_path, progress=False
    )
    browser = ds.browse()
    page, _ = invoke(browser, "refresh")
    conforms(page, messages.PageMessage)
    assert page["cells"][0]["fields"] == {"text": "x", "label": "0"}
    detail, _ = invoke(browser, "detail", {"row": 1})
    conforms(detail, messages.DetailMessage)
    browser.search = "nothing like it"
    page, _ = browser.page_message()
    conforms(page, messages.PageMessage)
    assert page["empty"].startswith("no rows match")


def test_the_checker_catches_a_message_that_drifts() -> None:
    cell = {"row": 0, "key": "a", "label": -1, "shard": 0}
    conforms(cell, messages.Cell)
    with pytest.raises(AssertionError, match=r"keys \['thumb'\] are not in Cell"):
        conforms({**cell, "thumb": 1}, messages.Cell)
    with pytest.raises(AssertionError, match="Cell requires 'shard'"):
        conforms({"row": 0, "key": "a", "label": -1}, messages.Cell)
    with pytest.raises(AssertionError, match=r"message.video.fps: expected a number"):
        conforms({**cell, "video": {"duration": 1.0, "frames": 3, "fps": "24"}}, messages.Cell)


def test_video_tiles_and_details_are_the_messages_declared(tmp_path: Path) -> None:
    pytest.importorskip("av", reason="the video extra is part of the test extras")
    from stable_explore.testing.videos import write_indexed_video

    path = write_indexed_video(tmp_path / "clip.mp4", 12, codec="mpeg4", container="mp4")
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"\x00\x00\x00\x18ftypmp42 cut short")
    features = se.Features(video=se.Video(), label=se.ClassLabel(names=["a", "b"]))
    rows = [("clip", {"video": str(path), "label": 0}), ("broken", {"video": str(broken), "label": 1})]
    browser = se.build(rows, features, name="clips", home=tmp_path / "home", progress=False).browse()
    page, _ = invoke(browser, "refresh")
    conforms(page, messages.PageMessage)
    assert "video" in page["cells"][0]
    assert "broken" in page["cells"][1]
    for row, kind in ((0, messages.PlayerVideo), (1, messages.BrokenVideo)):
        detail, _ = invoke(browser, "detail", {"row": row})
        conforms(detail, messages.DetailMessage)
        conforms(detail["video"], kind)
