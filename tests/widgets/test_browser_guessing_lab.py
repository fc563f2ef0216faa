"""Issue 27's widget items in a real JupyterLab (headless Chromium): a browser that never leaves a user guessing.

One notebook builds the digits with progress bars (``se.build``, ``%stable_cache``, ``save()``), browses
them and diffs two versions. The tests, in order: search on keys, go-to with Enter, histogram tooltips
equal to the filters their clicks make, the cursor and the detail pane, label contrast in light and
dark, Ctrl+S, the post-save status, the diff's bars, the in-page timings (next page, filter, detail),
a kernel restart, then the notebook saved, reopened on a new kernel: no "model not found" and not
marked modified.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import CHROMIUM, SharedLab, wait_grid_rows

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

CELLS = [
    f"""\
import numpy as np
from sklearn.datasets import load_digits
import stable_explore as se

features = se.Features(image=se.Image(), label=se.ClassLabel(names={NAMES!r}), ink=se.Value("float32"))

def digits():
    bunch = load_digits()
    for i, (pixels, target) in enumerate(zip(bunch.images, bunch.target)):
        big = np.kron((pixels * 15).astype(np.uint8), np.ones((4, 4), dtype=np.uint8))
        yield f"digit-{{i:04d}}", {{"image": big, "label": int(target), "ink": float(pixels.sum())}}

ds = se.build(digits, features, shard_size="64KB")""",
    "browser = ds.browse(page_size=24)\nbrowser",
    "%load_ext stable_explore\nsq = se.Features(x=se.Value('int64'))\n"
    "%stable_cache squares = ({'x': i * i} for i in range(500)) --features sq",
    "clean = ds.drop([0]).save(message='drop the first')",
    "print('VIEW', len(browser.view), browser.filter)",
    "se.compare(ds, clean)",
]


def cell_output(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")


def wait_rows(page: Any, rows: int) -> None:
    page.wait_for_function(
        "(rows) => document.querySelector('[data-testid=se-status]').textContent.startsWith(rows)",
        arg=f"{rows:,} rows",
        timeout=60_000,
    )


def wait_ready(page: Any, number: int = 0) -> None:
    page.wait_for_selector(f"[data-testid=se-grid][data-ready='page-{number}']", timeout=60_000)


def rgb(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text[text.index("(") + 1 : -1].split(",")[:3])


def luminance(colour: tuple[float, ...]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def set_theme(page: Any, theme: str) -> None:
    light = "true" if theme == "JupyterLab Light" else "false"
    page.evaluate("(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme)
    page.wait_for_function("(light) => document.body.dataset.jpThemeLight === light", arg=light, timeout=60_000)
    page.wait_for_timeout(500)  # the theme's stylesheet applied


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[tuple[Any, Path]]:
    root = tmp_path_factory.mktemp("guessing")
    env = {"PYTHONPATH": str(REPO)}
    with lab_server.notebook(root, "guess.ipynb", CELLS, env=env, viewport=(1280, 1400)) as page:
        wait_ready(page)
        page.wait_for_function(
            "() => document.querySelectorAll('.jp-Notebook .jp-Cell')[5].querySelector('[data-testid=se-diff]')",
            timeout=180_000,
        )
        yield page, root


def test_search_covers_keys_and_an_empty_result_says_so(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    search = page.locator("[data-testid=se-search]")
    assert search.get_attribute("placeholder") == "search keys…"  # the digits have no string column
    search.fill("digit-000")
    search.press("Enter")
    wait_rows(page, 10)
    wait_grid_rows(page, list(range(10)))
    wait_ready(page)
    rows = page.eval_on_selector_all("[data-testid=se-thumb]", "els => els.map(e => Number(e.dataset.row))")
    assert rows == list(range(10))
    search.fill("no-such-key")
    search.press("Enter")
    wait_rows(page, 0)
    empty = page.locator("[data-testid=se-empty]")
    empty.wait_for(timeout=30_000)
    assert empty.inner_text() == "no rows match: search “no-such-key” (in keys)"
    search.fill("")
    search.press("Enter")
    wait_rows(page, 1797)
    wait_grid_rows(page, list(range(24)))  # the empty page was page-0 too: the kernel's page of every row
    wait_ready(page)


def test_go_to_jumps_on_enter_and_typing_replaces(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    jump = page.locator("[data-testid=se-jump]")
    pager = page.locator("[data-testid=se-page]")
    jump.click()
    page.keyboard.type("5")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('[data-testid=se-page]').textContent === 'page 5 of 75'")
    jump.click()
    page.keyboard.type("7")  # a new number: page 7, not 57
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('[data-testid=se-page]').textContent === 'page 7 of 75'")
    assert pager.inner_text() == "page 7 of 75"
    page.locator("[data-testid=se-prev]").click()  # back to the first page for the tests after
    jump.click()
    page.keyboard.type("1")
    page.keyboard.press("Enter")
    wait_ready(page)


def test_a_histogram_slot_is_clickable_and_its_count_is_the_filters(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    slots = page.locator("[data-testid=se-histogram][data-column='ink'] [data-testid=se-hist-slot]")
    assert slots.count() == 16
    checked = 0
    for index in (0, 5, 9, 15):  # the first, two inner ones and the closed last bin
        slot = slots.nth(index)
        count = int(slot.get_attribute("data-count") or "0")
        title = slot.get_attribute("title") or ""
        assert re.search(rf": {count:,} rows \(click to filter\)$", title), title
        if not count:
            continue
        slot.click(position={"x": 3, "y": 1})  # the top of the slot, above its bar
        wait_rows(page, count)
        checked += 1
        page.locator("[data-testid=se-field-filters] .se-x").first.click()
        wait_rows(page, 1797)
    assert checked >= 3
    # the count comes a moment before the page, and the filtered page was page-0 too: wait for the kernel's
    # unfiltered page, or the next test's cursor moves over the filtered page's cells
    wait_grid_rows(page, list(range(24)))
    wait_ready(page)


def test_cursor_detail_pane_and_controls(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    widget = page.locator("[data-testid=se-browser]")
    widget.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    cursor = page.locator(".se-cell.se-cursor")
    assert cursor.get_attribute("data-row") == "1"
    style = cursor.evaluate("e => getComputedStyle(e).outlineStyle")
    assert style == "dashed"  # the cursor is not a hover's border
    page.keyboard.press("PageDown")
    wait_ready(page, 1)
    assert page.locator(".se-cell.se-cursor").get_attribute("data-row") == "25"  # kept at its place on the page
    page.keyboard.press("PageUp")
    wait_ready(page, 0)
    # the detail pane shows a pending relabel and where its row stands in the filter
    page.dblclick("[data-testid=se-thumb][data-row='3']")
    page.wait_for_function("() => document.querySelector('[data-testid=se-detail]').dataset.row === '3'")
    marks = page.locator("[data-testid=se-detail-marks]")
    assert marks.inner_text() == "4 of 1,797 shown"
    page.click("[data-testid=se-thumb][data-row='3']")
    page.select_option("[data-testid=se-relabel-class]", label="one")
    page.click("[data-testid=se-relabel]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-detail-marks]').textContent.startsWith('pending relabel → one')"
    )
    page.click("[data-testid=se-filter-label] [data-class='0']")  # row 3 is a three: not among the zeros
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-detail-marks]').textContent.includes('not among the 178 rows')"
    )
    page.click("[data-testid=se-discard]")
    page.click("[data-testid=se-filter-label] [data-class='all']")
    wait_rows(page, 1797)
    page.keyboard.press("Escape")
    # the placeholders fit their inputs, the shard picker is bounded, a lone chip stays on one line
    page.select_option("[data-testid=se-field]", "ink")
    for box in ("se-field-min", "se-field-max"):
        fits = page.eval_on_selector(
            f"[data-testid={box}]",
            """e => {
                const style = getComputedStyle(e);
                const ctx = document.createElement('canvas').getContext('2d');
                ctx.font = `${style.fontSize} ${style.fontFamily}`;
                const room = e.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
                return [ctx.measureText(e.placeholder).width, room];
            }""",
        )
        assert fits[0] <= fits[1], f"{box}: placeholder {fits[0]:.0f} px in {fits[1]:.0f} px"
    assert page.eval_on_selector("[data-testid=se-shard]", "e => e.getBoundingClientRect().width") <= 16 * 13 + 1
    page.fill("[data-testid=se-field-min]", "300")
    page.click("[data-testid=se-field-apply]")
    chip = page.locator("[data-testid=se-field-filters] .se-field-chip")
    chip.wait_for(timeout=30_000)
    height = chip.evaluate("e => e.getBoundingClientRect().height")
    line = chip.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || 17")
    assert height < 2 * line
    chip.locator(".se-x").click()
    wait_rows(page, 1797)
    # the filtered page was page-0 too: wait for the kernel's unfiltered page, whose badges the next test reads
    wait_grid_rows(page, list(range(24)))
    wait_ready(page)


def test_label_badges_are_readable_in_light_and_dark(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    ARTIFACTS.mkdir(exist_ok=True)
    for theme in ("JupyterLab Light", "JupyterLab Dark"):
        set_theme(page, theme)
        badges = page.eval_on_selector_all(
            "[data-testid=se-grid] [data-testid=se-label]:not(.se-nolabel)",
            "els => els.map(e => [e.textContent, getComputedStyle(e).color, getComputedStyle(e).backgroundColor])",
        )
        assert {name for name, _, _ in badges} == set(NAMES)  # the first page shows every class
        for name, fg, bg in badges:
            assert contrast(rgb(fg), rgb(bg)) >= 4.5, f"{theme}: {name} {fg} on {bg}"
        dots = page.eval_on_selector_all(
            "[data-testid=se-filter-label] .se-chip[data-class]:not([data-class=all])",
            "els => els.map(e => [e.dataset.class, getComputedStyle(e.querySelector('.se-dot')).backgroundColor,"
            " getComputedStyle(e).backgroundColor])",
        )
        assert len(dots) == 10
        for index, dot, chip in dots:
            assert contrast(rgb(dot), rgb(chip)) >= 3, f"{theme}: the dot of class {index} is {dot} on {chip}"
        page.locator("[data-testid=se-browser]").screenshot(path=str(ARTIFACTS / f"browser-labels-{theme[11:]}.png"))
    set_theme(page, "JupyterLab Light")


def test_ctrl_s_in_the_widget_saves_the_notebook(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.context.model.dirty = true; }")
    page.locator("[data-testid=se-thumb][data-row='2']").click()
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    widget = page.locator("[data-testid=se-browser]")
    assert widget.get_attribute("data-lm-suppress-shortcuts") == "true"  # its own keys are still its own
    page.keyboard.press("Escape")


def test_the_status_after_a_save_is_one_short_line_that_clears(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    page.click("[data-testid=se-thumb][data-row='4']")
    page.click("[data-testid=se-flag]")
    page.click("[data-testid=se-drop-flagged]")
    page.wait_for_function("() => document.querySelector('[data-testid=se-pending]').textContent === 'pending: drop 1'")
    page.fill("[data-testid=se-message]", "drop a four")
    page.click("[data-testid=se-save]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-status]').textContent.includes('saved digits@')", timeout=60_000
    )
    status = page.locator("[data-testid=se-status]")
    text = status.inner_text()
    assert re.search(r"· saved digits@\w+: 1,796 rows \(drop 1\)$", text), text
    height = status.evaluate("e => e.getBoundingClientRect().height")
    line = status.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || 17")
    assert height < 1.5 * line, f"the status wraps: {height} px"
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=se-status]').textContent.includes('saved')", timeout=20_000
    )
    wait_ready(page)


def test_the_diff_shows_bars_and_the_progress_bars_are_html(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    diff = cell_output(page, 5)
    assert diff.locator("[data-testid=se-diff-bars]").count() == 1
    assert diff.locator("[data-testid=se-diff-bars] [data-testid=se-diff-after]").count() == 10
    assert diff.locator("[data-testid=se-diff-hist]").count() == 1  # ink
    diff.screenshot(path=str(ARTIFACTS / "diff-bars-light.png"))
    build = cell_output(page, 0).locator("[data-testid=se-progress]")
    assert build.count() == 1
    assert "caching digits done: 1,797/1,797 rows" in build.inner_text()  # the count, not "1797/?"
    assert "caching squares done: 500/500 rows" in cell_output(page, 2).inner_text()
    assert "saving digits done: 1,796/1,796 rows" in cell_output(page, 3).inner_text()
    for index in (0, 2, 3):
        assert cell_output(page, index).locator(".jupyter-widgets").count() == 0  # no ipywidget


def test_timings_measured_in_the_page(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    timings = page.evaluate(
        """async () => {
            const grid = () => document.querySelector('[data-testid=se-grid]');
            const until = (test) => new Promise((resolve) => {
                const check = () => (test() ? resolve() : requestAnimationFrame(check));
                check();
            });
            const painted = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
            const out = { next: [], filter: [], detail: [] };
            for (let i = 0; i < 5; i++) {
                const page = Number(grid().dataset.page);
                const t0 = performance.now();
                document.querySelector('[data-testid=se-next]').click();
                await until(() => grid().dataset.ready === `page-${page + 1}`);
                await painted();
                out.next.push(performance.now() - t0);
            }
            for (const cls of ['1', '2', '3', 'all']) {
                const before = grid().firstChild;
                const t0 = performance.now();
                document.querySelector(`[data-testid=se-filter-label] [data-class='${cls}']`).click();
                await until(() => grid().firstChild !== before && grid().dataset.ready === 'page-0');
                await painted();
                out.filter.push(performance.now() - t0);
            }
            const cells = [...document.querySelectorAll('[data-testid=se-thumb]')].slice(0, 5);
            for (const cell of cells) {
                const t0 = performance.now();
                cell.dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
                await until(() => document.querySelector('[data-testid=se-detail]').dataset.row === cell.dataset.row);
                const img = document.querySelector('[data-testid=se-detail-img]');
                if (img) await img.decode().catch(() => undefined);
                await painted();
                out.detail.push(performance.now() - t0);
            }
            return out;
        }"""
    )
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "browser-timings.json").write_text(json.dumps(timings, indent=1))
    medians = {k: sorted(v)[len(v) // 2] for k, v in timings.items()}
    print("BROWSER TIMINGS (ms, median):", {k: round(v) for k, v in medians.items()})
    assert all(len(v) >= 4 for v in timings.values())
    page.keyboard.press("Escape")


def test_a_kernel_restart_is_said_and_disables_the_controls(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    dead = page.locator("[data-testid=se-dead]")
    assert dead.is_hidden()
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:restart-kernel'); }")  # Kernel > Restart
    page.locator(".jp-Dialog .jp-mod-accept").click(timeout=30_000)
    dead.wait_for(state="visible", timeout=60_000)
    assert dead.inner_text() == "the kernel restarted: run the cell again to browse"
    enabled = page.eval_on_selector_all(
        "[data-testid=se-browser] button, [data-testid=se-browser] input, [data-testid=se-browser] select",
        "els => els.filter(e => !e.disabled).length",
    )
    assert enabled == 0
    pager = page.locator("[data-testid=se-page]").inner_text()
    page.locator("[data-testid=se-next]").click(force=True)  # a dead "next" does not pretend to page
    assert page.locator("[data-testid=se-page]").inner_text() == pager
    page.locator("[data-testid=se-browser]").screenshot(path=str(ARTIFACTS / "browser-kernel-restarted.png"))


def test_reopened_on_a_new_kernel_no_model_not_found_and_not_modified(
    lab: tuple[Any, Path], lab_server: SharedLab
) -> None:
    page, root = lab
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    saved = lab_server.saved(root, "guess.ipynb")
    mimes = [set(o.get("data", {})) for c in saved["cells"] for o in c.get("outputs", [])]
    widget_outputs = [m for m in mimes if "application/vnd.jupyter.widget-view+json" in m]
    assert len(widget_outputs) == 1  # the browser only: progress bars are HTML
    page.evaluate(
        "async () => { try { await window.jupyterapp.shell.currentWidget.sessionContext.shutdown(); } catch {} }"
    )
    lab_server.reopen(page, root, "guess.ipynb")  # the kernel is gone for good
    cell_output(page, 1).locator("[data-testid=se-static]").wait_for(state="visible", timeout=60_000)
    page.wait_for_timeout(3000)  # what JupyterLab does after opening has happened
    shown = page.locator(".jp-Notebook").inner_text()
    assert shown.count("model not found") == 0
    assert "caching digits done: 1,797/1,797 rows" in shown
    dirty = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty")
    assert dirty is False, "the notebook is marked modified right after opening"
