"""The shard browser's kernel side: paging, filters, shards, selection, flags, details, edits, escaping."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import CachedDataset, ClassLabel, Features, Image, Value
from tests.conftest import NAMES
from tests.widgets.commands import invoke

pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")

from stable_explore.widgets import ShardBrowser
from stable_explore.widgets._thumbs import ThumbnailCache


def test_pages_are_one_message_with_one_buffer_per_thumbnail(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=48)
    assert browser.num_rows == 300
    assert browser.num_pages == 7
    content, buffers = browser.page_message()
    assert content["type"] == "page"
    assert len(content["cells"]) == 48
    assert len(buffers) == 48
    first = content["cells"][0]
    assert first == {"row": 0, "key": "pet-00000", "label": 0, "shard": 0, "buffer": 0, "mime": "image/jpeg"}
    thumb = PILImage.open(io.BytesIO(buffers[0]))
    assert thumb.format == "JPEG"
    assert max(thumb.size) <= 128
    browser.page = 6
    content, buffers = browser.page_message()
    assert [c["row"] for c in content["cells"]] == list(range(288, 300))
    browser.page = 99
    assert browser.page == 6  # clamped
    # nothing image-like is in the synced state
    state = {k: v for k, v in browser.get_state().items() if k not in ("_esm", "_css")}
    assert all(not isinstance(v, (bytes, memoryview)) for v in state.values())
    assert len(str(state)) < 5_000


def test_label_filter_and_counts(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    assert browser.class_names == NAMES
    assert browser.label_counts == [100, 100, 100]
    browser.page = 2
    browser.label_filter = [1]
    assert browser.page == 0
    assert browser.num_rows == 100
    content, _ = browser.page_message()
    assert {c["label"] for c in content["cells"]} == {1}
    browser.label_filter = [0, 2]
    assert browser.num_rows == 200


def test_shard_choice_limits_rows_and_counts(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    assert [s["rows"] for s in browser.shards] == [50] * 6
    browser.shard = 2
    assert browser.num_rows == 50
    content, _ = browser.page_message()
    assert {c["shard"] for c in content["cells"]} == {2}
    assert content["cells"][0]["row"] == 100
    assert sum(browser.label_counts) == 50
    browser.label_filter = [0]
    assert browser.num_rows == len([i for i in range(100, 150) if i % 3 == 0])


def test_text_search(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    browser.search = "N29"
    assert browser.num_rows == 11  # n29, n290..n299
    browser.search = ""
    assert browser.num_rows == 300


def test_selection_clicks_and_flags(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    browser.click(3)
    assert browser.selected == [3]
    browser.click(7, shift=True)
    assert browser.selected == [3, 4, 5, 6, 7]
    browser.click(10, toggle=True)
    browser.click(4, toggle=True)
    assert browser.selected == [3, 5, 6, 7, 10]
    assert [row["name"] for row in browser.selection()] == ["n3", "n5", "n6", "n7", "n10"]
    browser.flag_selection()
    assert browser.flagged == [3, 5, 6, 7, 10]
    browser.clear_selection()
    browser.click(5)
    browser.flag_selection()  # all selected already flagged: unflag
    assert browser.flagged == [3, 6, 7, 10]
    browser.select_page()
    assert browser.selected[:3] == [5, 0, 1]
    assert len(browser.selected) == 24
    assert len(browser.flagged_rows()) == 4


def test_shift_click_ranges_follow_the_filter_order(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    browser.label_filter = [2]
    browser.click(2)
    browser.click(11, shift=True)
    assert browser.selected == [2, 5, 8, 11]


def test_messages_from_the_page_drive_the_same_logic(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    invoke(browser, "click", {"row": 4})
    invoke(browser, "click", {"row": 6, "shift": True})
    invoke(browser, "flag")
    assert browser.flagged == [4, 5, 6]
    invoke(browser, "clear")
    assert browser.selected == []
    invoke(browser, "detail", {"row": 10**9})
    assert "out of range" in browser.status


def test_detail_view_has_every_field_and_the_full_image(pets: CachedDataset, jpegs: list[bytes]) -> None:
    browser = pets.browse()
    content, buffers = browser.detail_message(101)
    assert content["key"] == "pet-00101"
    assert (content["shard"], content["shard_row"]) == (2, 1)
    assert dict(content["fields"])["label"] == "bird (2)"
    assert dict(content["fields"])["name"] == "n101"
    assert buffers == [jpegs[101 % len(jpegs)]]  # small enough: the original bytes
    assert browser.neighbour(101, 1) == 102
    assert browser.neighbour(299, 1) == 299
    browser.label_filter = [2]
    assert browser.neighbour(101, 1) == 104


def test_large_images_are_bounded_in_the_detail_view(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    PILImage.new("RGB", (2000, 1500), (10, 20, 30)).save(buffer, format="JPEG")
    ds = se.build([{"image": buffer.getvalue()}], Features(image=Image()), name="big", home=tmp_path, progress=False)
    content, buffers = ds.browse().detail_message(0)
    assert max(PILImage.open(io.BytesIO(buffers[0])).size) == 1024
    assert content["mime"] == "image/jpeg"


def test_datasets_without_images_show_fields(tmp_path: Path) -> None:
    features = Features(label=ClassLabel(names=["a", "b"]), text=Value("string"), score=Value("float32"))
    rows = [{"label": i % 2, "text": f"t{i}", "score": i / 4} for i in range(30)]
    ds = se.build(rows, features, name="tab", home=tmp_path, progress=False)
    browser = ds.browse(page_size=24)
    assert not browser.has_images
    content, buffers = browser.page_message()
    assert buffers == []
    assert content["cells"][1]["fields"] == {"label": "1", "text": "t1", "score": "0.25"}


def test_image_shaped_arrays_show_as_images(tmp_path: Path) -> None:
    features = Features(pixels=se.Array3D((8, 8, 1), "float32"), label=ClassLabel(num_classes=2))
    rows = [{"pixels": np.full((8, 8, 1), i, dtype=np.float32), "label": i % 2} for i in range(5)]
    ds = se.build(rows, features, name="arr", home=tmp_path, progress=False)
    browser = ds.browse(page_size=24)
    assert browser.has_images
    _, buffers = browser.page_message()
    assert len(buffers) == 5
    assert PILImage.open(io.BytesIO(buffers[0])).size == (128, 128)  # tiny images are enlarged, sharp


def test_class_names_are_data_not_markup(tmp_path: Path, jpegs: list[bytes]) -> None:
    evil = "<script>alert('x')</script>"
    features = Features(image=Image(), label=ClassLabel(names=[evil, "ok"]))
    ds = se.build([{"image": jpegs[0], "label": 0}], features, name="evil", home=tmp_path, progress=False)
    browser = ds.browse()
    assert browser.class_names[0] == evil  # travels as data; the page sets it with textContent
    data, _ = browser._repr_mimebundle_()
    assert "<script>" not in data["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in data
    script = (Path(se.__file__).parent / "widgets" / "static" / "browser.js").read_text()
    assert "innerHTML" not in script.replace("never innerHTML", "")


def test_page_size_is_checked_and_browse_by_ref(pets: CachedDataset) -> None:
    with pytest.raises(ValueError, match="page_size"):
        pets.browse(page_size=50)
    browser = se.browse(f"pets@{pets.version[:6]}", home=pets.cache_dir.parents[2])
    assert browser.num_rows == 300
    assert "300 rows" in repr(browser)


def test_browsing_a_view_selects_positions_in_the_view(pets: CachedDataset) -> None:
    view = pets.filter(label="dog")
    browser = view.browse(page_size=24)
    assert browser.num_rows == 100
    browser.click(0)
    assert browser.selection()[0]["name"] == "n1"
    content, _ = browser.page_message()
    assert content["cells"][1]["key"] == "pet-00004"


def test_drop_flagged_relabel_selection_and_save(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    browser.click(3)
    browser.click(5, shift=True)
    browser.flag_selection()
    browser.drop_flagged()
    assert browser.flagged == []
    assert browser.dropped == [3, 4, 5]
    browser.click(10)
    browser.click(11, toggle=True)  # row 11 is a bird already: no edit for it
    browser.click(12, toggle=True)
    browser.relabel_selection("bird")
    assert browser.pending_labels == {"10": 2, "12": 2}
    assert browser.pending == "drop 3, relabel 2"
    assert browser.draft is not None
    assert browser.draft.pending_edits.dropped == {3, 4, 5}
    saved = browser.save("cleaned in the browser")
    assert len(saved) == 297
    assert saved.metadata["parent"] == pets.version
    assert saved.metadata["message"] == "cleaned in the browser"
    assert browser.dataset.version == saved.version  # the browser now shows the new version
    assert browser.num_rows == 297
    assert browser.pending == ""
    assert browser.dropped == []
    assert saved.ref in browser.status
    keys = saved.keys()
    assert saved[keys.index("pet-00010")]["label"] == 2
    with pytest.raises(ValueError, match="no pending edits"):
        browser.save("again")


def test_edit_messages_from_the_page(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    invoke(browser, "drop_flagged")
    assert browser.status == "nothing flagged to drop"
    invoke(browser, "click", {"row": 7})
    invoke(browser, "relabel", {"label": 0})
    assert browser.pending_labels == {"7": 0}
    invoke(browser, "discard")
    assert browser.pending == ""
    invoke(browser, "relabel", {"label": 2})
    invoke(browser, "save", {"message": "from the page"})
    assert browser.dataset.metadata["message"] == "from the page"


def test_the_next_page_is_prefetched_after_a_page_is_sent(pets: CachedDataset) -> None:
    cache = ThumbnailCache()
    browser = ShardBrowser(pets, page_size=24, cache=cache)
    browser.send_page()
    assert browser._state.prefetched is not None
    browser._state.prefetched[1].result(timeout=30)
    misses = cache.misses
    browser.page = 1  # sends page 1: every thumbnail is already made
    assert cache.misses == misses
    assert cache.hits >= 24


def test_large_sources_are_decoded_on_several_threads(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    photos = []
    for _ in range(12):
        buffer = io.BytesIO()
        PILImage.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)).save(buffer, format="JPEG")
        photos.append(buffer.getvalue())
    ds = se.build([{"image": p} for p in photos], Features(image=Image()), name="big", home=tmp_path, progress=False)
    _, buffers = ShardBrowser(ds, page_size=24, cache=ThumbnailCache(), prefetch=False).page_message()
    assert len(buffers) == 12
    assert all(max(PILImage.open(io.BytesIO(b)).size) == 128 for b in buffers)


def test_a_dataset_with_64_bit_integers_past_2_to_the_53_browses(tmp_path: Path) -> None:
    # the field ranges and histograms cast to float64 with Arrow's safe cast, which refused such values
    features = Features(big=Value("int64"), whole=Value("uint64"), label=ClassLabel(names=NAMES))
    rows = [{"big": -(2**63), "whole": 2**64 - 1, "label": 0}, {"big": 2**63 - 1, "whole": 0, "label": 1}]
    ds = se.build(rows, features, name="wide", home=tmp_path, progress=False)
    browser = ds.browse(page_size=24)
    content, _ = browser.page_message()
    assert [c["key"] for c in content["cells"]] == ["0", "1"]
    ranges = {f["name"]: (f["min"], f["max"]) for f in browser.fields}
    assert ranges["big"] == (float(-(2**63)), float(2**63))
    assert ranges["whole"] == (0.0, float(2**64))


def test_a_version_with_computed_columns_browses_shows_them_and_saves(pets: CachedDataset) -> None:
    scored = pets.add_columns({"score": [i / 2 for i in range(300)]}, progress=False)
    browser = scored.browse(page_size=24)
    assert browser.num_rows == 300
    content, buffers = browser.page_message()
    assert len(buffers) == 24
    assert content["cells"][0]["key"] == "pet-00000"
    detail, _ = browser.detail_message(101)
    assert dict(detail["fields"])["score"] == "50.5"
    assert (detail["shard"], detail["shard_row"]) == (2, 1)  # the shards' layout, as before
    browser.label_filter = [2]
    assert browser.num_rows == 100
    browser.click(2)  # a row number: row 2 is a bird
    browser.relabel_selection("cat")
    saved = browser.save("relabel on computed columns")
    assert saved[2]["label"] == 0
    assert saved[2]["score"] == 1.0
    assert se.verify(saved).num_rows == 300


def test_show_rows_shows_exactly_those_rows_in_the_order_given(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    browser.label_filter = [1]
    browser.where("score", min=100)
    browser.show_rows([250, 3, 3, 17], "near duplicates of row 3")
    assert browser.page_rows().tolist() == [250, 3, 17]  # every other filter cleared; each row once
    assert browser.subset == "near duplicates of row 3"
    assert browser.filter["subset"] == "near duplicates of row 3"
    assert browser.label_counts == [1, 1, 1]  # the chips count the rows shown
    assert browser.neighbour(3, 1) == 17  # the detail pane steps in the order shown
    browser.click(250)
    browser.click(17, shift=True)
    assert browser.selected == [250, 3, 17]
    browser.label_filter = [2]  # a filter chosen afterwards narrows the subset
    assert browser.page_rows().tolist() == [17]
    browser.sort("score", descending=True)
    browser.label_filter = []
    assert browser.page_rows().tolist() == [250, 17, 3]
    invoke(browser, "show_all")  # the status line's "show all"
    assert browser.subset == ""
    assert browser.num_rows == 300
    with pytest.raises(se.errors.RowIndexError, match="row 300 is out of range for 300 rows"):
        browser.show_rows([1, 300])
    assert browser.num_rows == 300


def test_each_request_gets_one_reply_with_its_id_and_buffers(pets: CachedDataset) -> None:
    from stable_explore.widgets._commands import COMMANDS

    browser = pets.browse(page_size=24)
    assert {"refresh", "detail", "where", "sort", "click", "flag", "save", "show_all"} <= set(COMMANDS.handlers)
    page, buffers = invoke(browser, "refresh")  # the page a view asks for when drawn, thumbnails as buffers
    assert page["type"] == "page"
    assert len(page["cells"]) == len(buffers) == 24
    detail, buffers = invoke(browser, "detail", {"row": 5, "step": 1})
    assert (detail["type"], detail["row"], len(buffers)) == ("detail", 6, 1)
    assert invoke(browser, "flag") == ({"type": "ok"}, [])
    reply, _ = invoke(browser, "no-such-command")
    assert reply["type"] == "error"
    assert "unknown command 'no-such-command'" in reply["message"]
    assert browser.status == reply["message"]
    reply, _ = invoke(browser, "click", {})  # a request without its row: the error names the field
    assert reply["message"] == "error: KeyError: 'row'"
    browser._on_message(browser, {"type": "flag"}, [])  # not a command: ignored


def test_a_refused_action_logs_a_line_and_a_bug_logs_its_traceback(
    pets: CachedDataset, caplog: pytest.LogCaptureFixture
) -> None:
    browser = pets.browse(page_size=24)
    with caplog.at_level(logging.INFO, logger="stable_explore"):
        reply, _ = invoke(browser, "no-such-command")  # the user's (or page's) mistake: a project error
        refused = [r for r in caplog.records if r.name == "stable_explore.widgets"]
        assert [r.levelno for r in refused] == [logging.INFO]
        assert refused[0].exc_info is None
        assert "unknown command 'no-such-command'" in refused[0].getMessage()
        caplog.clear()
        reply, _ = invoke(browser, "click", {})  # a KeyError in a handler: a bug, so the log keeps the traceback
        assert reply["message"] == browser.status == "error: KeyError: 'row'"
        bugs = [r for r in caplog.records if r.name == "stable_explore.widgets"]
        assert [r.levelno for r in bugs] == [logging.ERROR]
        assert bugs[0].exc_info is not None
        assert bugs[0].exc_info[0] is KeyError
        assert "browser: click failed" in bugs[0].getMessage()


def test_the_package_logger_is_silent_until_configured() -> None:
    handlers = logging.getLogger("stable_explore").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
