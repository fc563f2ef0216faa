"""The shard browser, finished (kernel side): value filters, sort and histograms, the detail's image
facts, what a save refreshes, and the static snapshot shown beside the widget."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import CachedDataset, Features

pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")

from tests.conftest import pet_rows
from tests.widgets.commands import invoke


@pytest.fixture
def pets(tmp_path: Path, pet_features: Features, jpegs: list[bytes]) -> CachedDataset:
    return se.build(
        pet_rows(300, jpegs), pet_features, name="pets", home=tmp_path, progress=False, batch_size=50, shard_size=1
    )


class Sent:
    """Records what the browser sends to the page: what it pushes, and the responses of its replies."""

    def __init__(self, browser: Any) -> None:
        self.messages: list[tuple[dict[str, Any], list[bytes]]] = []
        browser.send = self.record

    def record(self, content: dict[str, Any], buffers: Any = None) -> None:
        if content.get("kind") == "anywidget-command-response":
            content = content["response"]
        self.messages.append((content, list(buffers or [])))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [m for m, _ in self.messages if m.get("type") == kind]


# -- 6. filters beyond labels ------------------------------------------------------------------


def test_fields_list_number_and_string_columns_with_their_ranges(pets: CachedDataset) -> None:
    browser = pets.browse()
    edges = [149.5 * i / 16 for i in range(17)]
    assert browser.fields == [
        {"name": "score", "kind": "number", "min": 0.0, "max": 149.5, "edges": edges},
        {"name": "name", "kind": "string"},
    ]
    assert set(browser.histograms) == {"score"}
    assert sum(browser.histograms["score"]) == 300
    assert len(browser.histograms["score"]) == 16


def test_numeric_range_string_equals_and_contains(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    browser.where("score", min=10, max=20)  # score = i / 2: rows 20..40
    assert browser.num_rows == 21
    assert browser.label_counts == [7, 7, 7]  # the label chips count under the value filters
    assert browser.view.base_rows().tolist() == list(range(20, 41))
    assert sum(browser.histograms["score"]) == 21  # the histogram follows the filters
    browser.where("name", contains="N3")  # case-insensitive: n30..n39 and n3 is out of range
    assert browser.view.base_rows().tolist() == list(range(30, 40))
    browser.where("name", equals="n33")
    assert browser.view.base_rows().tolist() == [33]
    browser.where("name")  # removes the filter on name
    assert browser.num_rows == 21
    browser.label_filter = [1]  # labels combine with value filters
    assert all(r % 3 == 1 for r in browser.view.base_rows().tolist())
    assert browser.filter == {
        "shard": None,
        "labels": ["dog"],
        "search": None,
        "fields": [{"column": "score", "min": 10.0, "max": 20.0}],
        "sort": None,
        "subset": None,
        "rows": 7,
    }
    browser.clear_filters()
    assert browser.num_rows == 100


def test_value_filters_are_checked(pets: CachedDataset) -> None:
    browser = pets.browse()
    with pytest.raises(se.errors.ColumnNotFoundError, match="score"):
        browser.where("nope", min=1)
    with pytest.raises(se.errors.InvalidOptionError, match="string column"):
        browser.where("name", min=1)
    with pytest.raises(se.errors.InvalidOptionError, match="number column"):
        browser.where("score", contains="1")
    with pytest.raises(se.errors.InvalidOptionError, match="cannot sort"):
        browser.sort("image")
    assert browser.num_rows == 300


def test_sort_by_any_field_and_selection_follows_the_order_shown(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    browser.sort("score", descending=True)
    assert browser.page_rows().tolist()[:3] == [299, 298, 297]
    assert browser.view.base_rows().tolist()[-1] == 0
    assert browser.filter["sort"] == ("score", "descending")
    browser.click(299)
    browser.click(296, shift=True)  # a range in the order shown
    assert browser.selected == [299, 298, 297, 296]
    assert browser.neighbour(298, 1) == 297
    browser.sort("name")  # strings sort as text: n0, n1, n10, n100, ...
    assert browser.page_rows().tolist()[:4] == [0, 1, 10, 100]
    browser.sort()
    assert browser.page_rows().tolist()[:3] == [0, 1, 2]


def test_filter_and_sort_messages_from_the_page(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    sent = Sent(browser)
    invoke(browser, "where", {"column": "score", "min": 100, "max": None})
    assert browser.num_rows == 100
    assert sent.of("page")[-1]["num_rows"] == 100
    invoke(browser, "where", {"column": "name", "contains": "n29"})
    assert browser.view.base_rows().tolist() == [290, 291, 292, 293, 294, 295, 296, 297, 298, 299]
    invoke(browser, "sort", {"column": "score", "descending": True})
    assert browser.page_rows().tolist()[0] == 299
    invoke(browser, "where", {"column": "score", "min": "x"})
    assert browser.status.startswith("error: ValueError")
    invoke(browser, "where", {"column": "nope", "min": 1})
    assert "ColumnNotFoundError" in browser.status


# -- 7. detail view --------------------------------------------------------------------------


def test_detail_says_width_height_format_and_bytes(pets: CachedDataset, jpegs: list[bytes]) -> None:
    browser = pets.browse()
    content, buffers = browser.detail_message(5)
    assert content["image"] == {"width": 16, "height": 16, "format": "JPEG", "bytes": len(jpegs[5])}
    assert dict(content["fields"])["image"] == f"16 x 16 JPEG, {len(jpegs[5]):,} bytes"
    assert PILImage.open(io.BytesIO(buffers[0])).size == (16, 16)


def test_detail_of_a_large_png_says_its_stored_size(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    PILImage.new("RGB", (1500, 900), "red").save(buffer, format="PNG")
    ds = se.build(
        [{"image": buffer.getvalue()}], se.Features(image=se.Image()), name="big", home=tmp_path, progress=False
    )
    browser = ds.browse()
    content, buffers = browser.detail_message(0)
    assert content["image"]["width"] == 1500
    assert content["image"]["format"] == "PNG"
    assert max(PILImage.open(io.BytesIO(buffers[0])).size) == 1024  # what is sent is bounded
    content, buffers = browser.detail_message(0, full=True)  # "1:1" asks for the stored size
    assert content["full"] is True
    assert buffers[0] == buffer.getvalue()  # a PNG is sent as stored
    sent = Sent(browser)
    invoke(browser, "detail", {"row": 0, "full": True})
    assert sent.messages[-1][0]["full"] is True


# -- 2. after "save version", everything in view comes from the new version -----------------


def test_save_refreshes_the_open_detail_to_the_same_key_in_the_new_version(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    sent = Sent(browser)
    invoke(browser, "detail", {"row": 10})
    assert sent.of("detail")[-1]["key"] == "pet-00010"
    browser.click(3)
    browser.flag_selection()
    browser.drop_flagged()
    browser.save("drop 3")
    detail = sent.of("detail")[-1]
    assert detail["row"] == 9  # row 10 of the old version is row 9 of the new one
    assert detail["key"] == "pet-00010"
    page = sent.of("page")[-1]
    assert [c["key"] for c in page["cells"]][:4] == ["pet-00000", "pet-00001", "pet-00002", "pet-00004"]
    assert browser.title.startswith(browser.dataset.ref)
    assert browser.fields[0]["max"] == 149.5


def test_save_closes_the_detail_of_a_dropped_row(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    sent = Sent(browser)
    invoke(browser, "detail", {"row": 7})
    browser.click(7)
    browser.flag_selection()
    browser.drop_flagged()
    browser.save("drop the row shown")
    closed = sent.of("detail_closed")
    assert closed
    assert "pet-00007" in closed[-1]["reason"]


def test_a_closed_detail_is_not_reopened_by_a_save(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    sent = Sent(browser)
    invoke(browser, "detail", {"row": 7})
    invoke(browser, "detail_closed")
    browser.click(1)
    browser.relabel_selection("bird")
    browser.save()
    assert len(sent.of("detail")) == 1
    assert not sent.of("detail_closed")


# -- 4. the static snapshot --------------------------------------------------------------------


def test_display_is_a_static_snapshot_then_the_widget(pets: CachedDataset) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    browser = pets.browse()
    published: list[tuple[dict[str, Any], dict[str, Any]]] = []
    shell = InteractiveShell.instance()
    original = shell.display_pub.publish
    shell.display_pub.publish = lambda data, metadata=None, **kw: published.append((data, kw))  # type: ignore[method-assign]
    try:
        browser._ipython_display_()
    finally:
        shell.display_pub.publish = original  # type: ignore[method-assign]
    (snapshot, snapshot_kw), (widget, _) = published
    assert set(snapshot) == {"text/html"}
    assert 'data-testid="se-static"' in snapshot["text/html"]
    assert "pets@" in snapshot["text/html"]
    assert snapshot_kw["transient"]["display_id"] == f"se-static-{browser.model_id}"
    assert "application/vnd.jupyter.widget-view+json" in widget
    assert "text/html" not in widget  # the card is in the snapshot only, not twice
    # images stay out of the widget's state
    state = {k: v for k, v in browser.get_state().items() if k not in ("_esm", "_css")}
    assert "base64" not in str(state)


# -- a version gc deleted while the browser was open ------------------------------------------------------


def test_a_version_gc_deleted_is_named_instead_of_paged(pets: CachedDataset, tmp_path: Path) -> None:
    browser = pets.browse(page_size=24)
    sent = Sent(browser)
    invoke(browser, "refresh")
    assert len(sent.of("page")) == 1
    newer = pets.drop([0]).save(message="newer", progress=False)  # latest moves: the opened one is untagged
    assert se.gc("pets", keep=0, home=tmp_path).removed == [f"pets@{pets.version}"]
    assert pets.deleted_reason() is not None
    assert newer.deleted_reason() is None
    for name, message in (("refresh", {}), ("detail", {"row": 3})):
        assert invoke(browser, name, message)[0]["type"] == "gone"
    browser.page = 2  # the pager, as the page's "next" sets it
    assert len(sent.of("page")) == 1, "a page of a deleted version was sent"
    assert sent.of("detail") == []
    gone = sent.of("gone")
    assert len(gone) == 3
    assert f"version {pets.version}" in gone[0]["message"]
    assert "garbage-collected by gc" in gone[0]["message"]
    assert "load the dataset again" in gone[0]["message"]
    assert browser.status == f"error: {gone[0]['message']}"


# -- issue 27: search, histograms, status, detail marks (kernel side) -----------------------------------


def test_search_covers_keys_and_string_columns_and_an_empty_result_says_why(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    assert browser.searched == "keys, name"
    browser.search = "pet-0029"  # only keys hold this
    assert browser.view.base_rows().tolist() == list(range(290, 300))
    browser.search = "zebra"
    assert browser.num_rows == 0
    content, _ = browser.page_message()
    assert content["empty"] == "no rows match: search “zebra” (in keys, name)"
    browser.search = ""
    browser.label_filter = [1]
    browser.where("score", min=1000)
    assert browser.page_message()[0]["empty"] == "no rows match: label dog; score ≥ 1000"


def test_search_on_keys_of_a_dataset_without_string_columns(tmp_path: Path) -> None:
    features = se.Features(label=se.ClassLabel(names=["a", "b"]))
    ds = se.build(((f"k{i}", {"label": i % 2}) for i in range(30)), features, name="nostr", home=tmp_path,
                  progress=False)  # fmt: skip
    browser = ds.browse(page_size=24)
    assert browser.searched == "keys"
    browser.search = "K2"
    assert browser.page_rows().tolist() == [2, *range(20, 30)]


def test_histogram_counts_are_the_rows_a_click_on_the_bar_keeps(tmp_path: Path) -> None:
    # values on the bins' edges, between them, the minimum and the maximum: each counted once, where a click keeps it
    values = [0.0, 1.0, 2.0, 2.5, 3.0, 4.0, 5.5, 6.0, 7.999, 8.0, 8.0, *[i / 7 for i in range(57)]]
    ds = se.build([{"x": v} for v in values], se.Features(x=se.Value("float32")), name="h", home=tmp_path,
                  progress=False)  # fmt: skip
    browser = ds.browse(page_size=24)
    counts = browser.histograms["x"]
    assert sum(counts) == len(values)
    for index, count in enumerate(counts):
        invoke(browser, "where_bin", {"column": "x", "bin": index})
        assert browser.num_rows == count, f"bin {index}"
        spec = browser.field_filters[0]
        assert ("below" in spec) == (index < len(counts) - 1)  # half-open, the last closed
    browser.clear_filters()
    reply, _ = invoke(browser, "where_bin", {"column": "x", "bin": 16})
    assert "bins 0 to 15, not 16" in reply["message"]


def test_the_status_after_a_save_is_one_short_line_that_clears_on_the_next_action(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    invoke(browser, "click", {"row": 3})
    invoke(browser, "flag")
    invoke(browser, "drop_flagged")
    invoke(browser, "save", {"message": "drop one"})
    assert browser.status == f"saved {browser.dataset.ref}: 299 rows (drop 1)"
    invoke(browser, "refresh")  # not an action of the user's
    assert browser.status.startswith("saved")
    invoke(browser, "click", {"row": 5})
    assert browser.status == ""
    browser.click(5)
    browser.relabel_selection(browser.dataset[5]["label"])  # to the class it has: nothing changes
    browser.save()
    assert browser.status.startswith("nothing to save: the edits change no row of")


def test_the_open_detail_follows_pending_edits_and_filters(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    sent = Sent(browser)
    detail, _ = invoke(browser, "detail", {"row": 4})
    assert (detail["pending_label"], detail["dropped"], detail["position"], detail["shown"]) == (None, False, 4, 300)
    browser.click(4)
    browser.relabel_selection("bird")
    marks = sent.of("detail_marks")[-1]
    assert (marks["row"], marks["pending_label"]) == (4, 2)
    browser.flag_selection()
    browser.drop_flagged()
    assert sent.of("detail_marks")[-1]["dropped"] is True
    browser.label_filter = [0]  # row 4 is a dog: not among the rows shown
    marks = sent.of("detail_marks")[-1]
    assert (marks["position"], marks["shown"]) == (-1, 100)
    invoke(browser, "detail_closed")
    count = len(sent.of("detail_marks"))
    browser.label_filter = []
    assert len(sent.of("detail_marks")) == count  # a closed pane is left alone
