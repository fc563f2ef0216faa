"""Ground truth and predictions in a real JupyterLab: the COCO set of test_browser_boxes_lab (objects and
predictions), drawn over one image or side by side in the detail pane, predictions dashed with their scores
and the score threshold applying to them only.

Screenshots go to docs/_static/screenshots/ (docs/labels.md shows them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import CHROMIUM, SharedLab, run_cell_until, screenshot_dark, wait_grid_rows
from tests.widgets.test_browser_boxes_lab import NOTEBOOK

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "_static" / "screenshots"

ROLES = 'print("roles", [(f["name"], f["role"]) for f in browser.label_fields if f["kind"] == "boxes"])'

# a model with mistakes: image 2's and image 5's first prediction given another class (a false positive and a
# missed box each), image 3's first prediction dropped (a missed box); evaluated, then browsed with its evaluation
EVALUATE = """\
wrong = (ds.relabel_boxes({1: {0: "dog"}, 4: {0: "car"}}, column="predictions")
         .drop_boxes({2: [0]}, column="predictions").save("three mistakes", progress=False))
r = se.evaluate(wrong, predictions="predictions", ground_truth="objects")
evaluated = wrong.browse(page_size=24, thumb_size=128, evaluation=r)
evaluated"""

FP_SCORES = """\
scores = [wrong[i]["predictions"]["score"][0] for i in (1, 4)]
print("fp", r.rows("fp").tolist(), "fn", r.rows("fn").tolist(), "scores", scores)"""
SHOWN = 'print("shown", evaluated.subset, evaluated.page_rows().tolist())'
SAVED = """\
mine = browser.dataset[0]["objects"]
rounded = [[round(v) for v in b] for b in mine["bbox"]]
print("saved", browser.dataset.version != ds.version, mine["category"], rounded)"""
FILTERED = 'print("filtered", [f.get("class_name") for f in evaluated.field_filters], evaluated.page_rows().tolist())'


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    cells = [NOTEBOOK, ROLES, EVALUATE, FP_SCORES, SHOWN, SAVED, FILTERED]
    with lab_server.notebook(tmp_path_factory.mktemp("lab"), "labelsets.ipynb", cells, viewport=(1280, 1200)) as page:
        yield page


def count(page: Any, selector: str) -> int:
    return int(page.eval_on_selector_all(selector, "els => els.length"))


def wait_count(page: Any, selector: str, n: int) -> None:
    page.wait_for_function(f"() => document.querySelectorAll({selector!r}).length === {n}", timeout=30_000)


def test_ground_truth_and_predictions_side_by_side_or_overlaid(page: Any) -> None:
    widget = page.locator("[data-testid=se-browser]").first
    widget.wait_for(timeout=120_000)
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=60_000)
    # the kernel says which column is the model's: "predictions" by its name
    out = run_cell_until(page, 1, lambda text: "roles" in text, "the label fields' roles")
    assert "('objects', 'truth'), ('predictions', 'predictions')" in out

    # image 1 in the detail: its 3 truths solid, its 3 predictions dashed, each named with its score
    widget.locator("[data-testid=se-thumb][data-row='0']").dblclick()
    page.wait_for_function("() => document.querySelector('[data-testid=se-detail]').dataset.row === '0'")
    detail = "[data-testid=se-detail]"
    wait_count(page, f"{detail} [data-testid=se-box]", 6)
    assert count(page, f"{detail} [data-testid=se-detail-pane]") == 1
    labels = page.eval_on_selector_all(
        f"{detail} [data-testid=se-box-label][data-field=predictions]", "els => els.map(e => e.textContent)"
    )
    assert len(labels) == 3
    assert "dog 0.20" in labels
    assert all(len(text.split()) == 2 for text in labels)  # "class score"
    truth_labels = page.eval_on_selector_all(
        f"{detail} [data-testid=se-box-label][data-field=objects]", "els => els.map(e => e.textContent)"
    )
    assert sorted(truth_labels) == ["car", "dog", "person"]  # ground truth: names only
    dashes = page.eval_on_selector_all(
        f"{detail} [data-testid=se-box]",
        "els => els.map(e => [e.dataset.field, getComputedStyle(e).strokeDasharray])",
    )
    assert all((dash not in ("none", "")) == (field == "predictions") for field, dash in dashes)

    # the threshold hides the prediction at 0.2 and no ground truth
    widget.locator("[data-testid=se-score-threshold]").fill("0.5")
    wait_count(page, f"{detail} [data-testid=se-box]", 5)
    assert count(page, f"{detail} [data-testid=se-box][data-field=objects]") == 3

    # side by side: ground truth on the left, predictions on the right, each over its own copy of the image
    switch = widget.locator("[data-testid=se-detail-mode][data-mode=side]")
    assert switch.is_visible()
    switch.click()
    wait_count(page, f"{detail} [data-testid=se-detail-pane]", 2)
    panes = page.eval_on_selector_all(
        f"{detail} [data-testid=se-detail-pane]",
        """els => els.map(p => [p.dataset.fields,
            [...p.querySelectorAll('[data-testid=se-box]')].map(b => b.dataset.field)])""",
    )
    assert panes == [["objects", ["objects"] * 3], ["predictions", ["predictions"] * 2]]
    for img in widget.locator(f"{detail} .se-detail-img").all():
        img.evaluate("img => img.decode()")
    left, right = page.eval_on_selector_all(
        f"{detail} [data-testid=se-detail-pane]", "els => els.map(e => e.getBoundingClientRect().left)"
    )
    assert right > left + 50
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(SHOTS / "browser-side-by-side-light.png"))
    screenshot_dark(page, widget, SHOTS / "browser-side-by-side-dark.png")

    # the threshold still applies in the predictions' pane; the next row keeps the layout
    widget.locator("[data-testid=se-score-threshold]").fill("0")
    wait_count(page, f"{detail} [data-testid=se-box][data-field=predictions]", 3)
    widget.locator(f"{detail} .se-detail-bar button[title^='next row']").click()
    page.wait_for_function("() => document.querySelector('[data-testid=se-detail]').dataset.row === '1'")
    wait_count(page, f"{detail} [data-testid=se-detail-pane]", 2)

    # back to overlay: one image with both columns
    widget.locator("[data-testid=se-detail-mode][data-mode=overlay]").click()
    wait_count(page, f"{detail} [data-testid=se-detail-pane]", 1)
    assert count(page, f"{detail} [data-testid=se-box][data-field=predictions]") > 0
    assert count(page, f"{detail} [data-testid=se-box][data-field=objects]") > 0


def in_widget(page: Any, index: int, selector: str, script: str = "els => els.length") -> Any:
    """Run ``script`` on the elements ``selector`` finds inside the page's ``index``-th browser."""
    return page.evaluate(
        f"""() => {{
            const root = document.querySelectorAll('[data-testid=se-browser]')[{index}];
            const els = root ? [...root.querySelectorAll({selector!r})] : [];
            return ({script})(els);
        }}"""
    )


def wait_in_widget(page: Any, index: int, selector: str, script: str) -> None:
    page.wait_for_function(
        f"""() => {{
            const root = document.querySelectorAll('[data-testid=se-browser]')[{index}];
            const els = root ? [...root.querySelectorAll({selector!r})] : [];
            return ({script})(els);
        }}""",
        timeout=30_000,
    )


def test_an_evaluation_colours_tp_fp_fn_and_its_buttons_show_the_mistakes(page: Any) -> None:
    page.wait_for_function("() => document.querySelectorAll('[data-testid=se-browser]').length === 2", timeout=120_000)
    widget = page.locator("[data-testid=se-browser]").nth(1)
    wait_in_widget(page, 1, "[data-testid=se-grid]", "els => els[0] && els[0].dataset.ready === 'page-0'")
    out = run_cell_until(page, 3, lambda text: "scores" in text, "the evaluation's rows")
    assert "fp [1, 4] fn [1, 2, 4]" in out
    scores = [float(x) for x in out.split("scores")[1].strip(" []\n").split(",")]
    by_score = [1, 4] if scores[0] >= scores[1] else [4, 1]

    assert "mAP" in in_widget(page, 1, "[data-testid=se-eval-summary]", "els => els[0].textContent")
    # image 2: its relabelled prediction is a false positive (dashed, red), the person it missed a false negative
    row1 = "[data-testid=se-thumb][data-row='1'] [data-testid=se-box]"
    drawn = in_widget(
        page, 1, row1, "els => els.map(e => [e.dataset.field, e.dataset.outcome, getComputedStyle(e).stroke])"
    )
    assert ["predictions", "fp", "rgb(255, 45, 85)"] in drawn
    assert ["objects", "fn", "rgb(255, 159, 10)"] in drawn
    assert all(outcome in ("tp", "fp", "fn") for _, outcome, _ in drawn)
    legend = in_widget(page, 1, "[data-testid=se-legend-outcome]", "els => els.map(e => e.dataset.outcome)")
    assert legend == ["tp", "fp", "fn"]
    # the first browser (no evaluation) colours by class, as before
    assert in_widget(page, 0, "[data-testid=se-box][data-outcome]") == 0
    assert in_widget(page, 0, "[data-testid=se-evalbar]", "els => els[0].hidden") is True

    # "rows with FP", "rows with FN", then the most confident mistake first: what the grid and the kernel show
    buttons = widget.locator("[data-testid=se-eval-rows]")
    assert buttons.all_inner_texts() == ["rows with FP (2)", "rows with FN (3)", "most confident mistakes (2)"]
    widget.locator("[data-testid=se-eval-rows][data-what=fn]").click()
    wait_grid_rows(page, [1, 2, 4], browser=1)
    widget.locator("[data-testid=se-eval-rows][data-what=fp]").click()
    wait_grid_rows(page, [1, 4], browser=1)
    widget.locator("[data-testid=se-eval-rows][data-what=mistakes]").click()
    wait_grid_rows(page, by_score, browser=1)
    out = run_cell_until(page, 4, lambda text: "most confident" in text, "the mistakes shown")
    assert f"most confident mistakes first (predictions) {by_score}" in out

    # the detail of the worst mistake, coloured by outcome, and a screenshot for the docs
    widget.locator(f"[data-testid=se-thumb][data-row='{by_score[0]}']").dblclick()
    wait_in_widget(page, 1, "[data-testid=se-detail] [data-testid=se-box][data-outcome=fp]", "els => els.length === 1")
    for img in widget.locator("[data-testid=se-detail] .se-detail-img").all():
        img.evaluate("img => img.decode()")
    widget.screenshot(path=str(SHOTS / "browser-evaluation-light.png"))
    screenshot_dark(page, widget, SHOTS / "browser-evaluation-dark.png")

    # colour by class again: no outcome colour left, the class legend back
    widget.locator("[data-testid=se-colour-outcome]").click()
    wait_in_widget(page, 1, "[data-testid=se-legend-outcome]", "els => els.length === 0")
    assert in_widget(page, 1, "[data-testid=se-legend-item]") > 0


def test_box_edits_in_the_detail_pane_are_saved_as_a_version(page: Any) -> None:
    widget = page.locator("[data-testid=se-browser]").first
    detail = "[data-testid=se-detail]"
    widget.locator("[data-testid=se-thumb][data-row='0']").dblclick()
    wait_in_widget(page, 0, detail, "els => els[0].dataset.row === '0'")
    # predictions off: the clicks below land on ground truth only
    toggle = widget.locator("[data-testid=se-overlay-toggle][data-field=predictions]")
    if toggle.get_attribute("aria-pressed") == "true":
        toggle.click()
    wait_in_widget(page, 0, f"{detail} [data-testid=se-box]", "els => els.length === 3")
    svg = widget.locator(f"{detail} svg.se-detail-boxes").first
    widget.locator(f"{detail} .se-detail-img").first.evaluate("img => img.decode()")

    def at(fx: float, fy: float) -> tuple[float, float]:
        box = svg.bounding_box()
        return box["x"] + fx * box["width"], box["y"] + fy * box["height"]

    # click the dog (box 2, x 45%..70%, y 8%..38%), make it a car
    page.mouse.click(*at(0.575, 0.23))
    wait_in_widget(page, 0, f"{detail} [data-testid=se-box][data-chosen]", "els => els.length === 1")
    chosen = widget.locator("[data-testid=se-box-chosen]").inner_text()
    assert chosen == "objects box 2 selected"
    assert widget.locator("[data-testid=se-box-class-select]").input_value() == "2"
    widget.locator("[data-testid=se-box-class-select]").select_option("1")
    widget.locator("[data-testid=se-box-relabel]").click()
    wait_in_widget(
        page,
        0,
        f"{detail} [data-testid=se-box][data-field=objects][data-index='2']",
        "els => els[0]?.dataset.class === '1'",
    )
    assert "edit the boxes of 1 row(s)" in widget.locator("[data-testid=se-pending]").inner_text()
    # the thumbnail follows: row 0 shows two cars and no dog
    wait_in_widget(
        page,
        0,
        "[data-testid=se-thumb][data-row='0'] [data-testid=se-box][data-field=objects]",
        "els => els.map(e => e.dataset.class).sort().join() === '0,1,1'",
    )

    # click the person (box 0, x 8%..38%, y 10%..70%) and delete it
    page.mouse.click(*at(0.23, 0.4))
    wait_in_widget(page, 0, f"{detail} [data-testid=se-box][data-chosen]", "els => els[0]?.dataset.class === '0'")
    widget.locator("[data-testid=se-box-delete]").click()
    wait_in_widget(page, 0, f"{detail} [data-testid=se-box]", "els => els.length === 2")

    # draw a dog: x 10%..40%, y 75%..95%
    widget.locator("[data-testid=se-box-draw]").click()
    widget.locator("[data-testid=se-box-class-select]").select_option("2")
    page.mouse.move(*at(0.1, 0.75))
    page.mouse.down()
    page.mouse.move(*at(0.25, 0.85), steps=4)
    page.mouse.move(*at(0.4, 0.95), steps=4)
    page.mouse.up()
    wait_in_widget(page, 0, f"{detail} [data-testid=se-box]", "els => els.length === 3")
    widget.locator("[data-testid=se-box-draw]").click()  # drawing off
    for img in widget.locator(f"{detail} .se-detail-img").all():
        img.evaluate("img => img.decode()")
    widget.screenshot(path=str(SHOTS / "browser-box-edits-light.png"))
    screenshot_dark(page, widget, SHOTS / "browser-box-edits-dark.png")

    # save: a new version whose row 0 has the relabelled car, the car, and the drawn dog (pixels of 180 x 280)
    widget.locator("[data-testid=se-message]").fill("fix row 0's boxes")
    widget.locator("[data-testid=se-save]").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-status]').textContent.includes('saved')", timeout=60_000
    )
    out = run_cell_until(page, 5, lambda text: "saved True" in text, "the saved version")
    categories, boxes = out.split("saved True ")[1].split("] [", 1)
    assert categories.strip("[]") == "1, 1, 2"
    drawn = [int(v) for v in boxes.strip().strip("[]").split("], [")[-1].split(",")]
    assert drawn == pytest.approx([18, 210, 54, 56], abs=3)


def test_box_histograms_show_each_box_and_a_bar_filters_the_images(page: Any) -> None:
    # the second browser (no edits there): its histogram panel has the Boxes columns' box by box histograms
    widget = page.locator("[data-testid=se-browser]").nth(1)
    clear = widget.locator("[data-testid=se-subset-clear]")
    if clear.is_visible():
        clear.click()
    wait_grid_rows(page, list(range(12)), browser=1)
    shown = in_widget(
        page, 1, "[data-testid=se-box-histogram]", "els => els.map(e => e.dataset.column + ' ' + e.dataset.what)"
    )
    for what in ("area", "aspect", "count", "classes"):
        assert f"objects {what}" in shown
    assert "predictions score" in shown
    assert "objects score" not in shown  # ground truth has no scores
    # the ground truth's classes: 12 people, 8 cars, 5 dogs over the 12 images; 25 areas, 12 images counted
    classes = "[data-testid=se-box-histogram][data-column=objects][data-what=classes] [data-testid=se-box-hist-slot]"
    assert in_widget(page, 1, classes, "els => els.map(e => Number(e.dataset.count))") == [12, 8, 5]
    area = "[data-testid=se-box-histogram][data-column=objects][data-what=area] [data-testid=se-box-hist-slot]"
    assert in_widget(page, 1, area, "els => els.reduce((n, e) => n + Number(e.dataset.count), 0)") == 25
    count = "[data-testid=se-box-histogram][data-column=objects][data-what=count] [data-testid=se-box-hist-slot]"
    assert in_widget(page, 1, count, "els => els.reduce((n, e) => n + Number(e.dataset.count), 0)") == 12
    widget.locator("[data-testid=se-histograms]").screenshot(path=str(SHOTS / "browser-box-histograms-light.png"))
    screenshot_dark(page, widget.locator("[data-testid=se-histograms]"), SHOTS / "browser-box-histograms-dark.png")

    # a click on the dog bar: the images with a dog (image 1, and every third from image 2)
    widget.locator(f"{classes}[data-bin='2']").click()
    wait_grid_rows(page, [0, 1, 4, 7, 10], browser=1)
    chip = widget.locator("[data-testid=se-field-filters] .se-field-chip").inner_text()
    assert "objects: a box of dog" in chip
    # the bars now count the dogs' images only; the smallest area's bar keeps the dog of the 180 x 280 image
    wait_in_widget(page, 1, classes, "els => els.map(e => e.dataset.count).join() === '5,5,5'")
    widget.locator(f"{area}[data-bin='0']").click()
    wait_grid_rows(page, [0], browser=1)
    assert "area 3780 to" in widget.locator("[data-testid=se-field-filters] .se-field-chip").inner_text()
    out = run_cell_until(page, 6, lambda text: "filtered" in text, "the box filter in the kernel")
    assert "filtered ['dog'] [0]" in out
