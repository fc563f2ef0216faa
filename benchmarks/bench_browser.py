"""Benchmark: the shard browser widget, kernel side and in a real JupyterLab with headless Chromium.

1. Kernel side (this process, no browser): building thumbnails for the page. Per 64 thumbnails through
   ``ShardBrowser._thumbnails(rows)`` (64 rows, exactly what a page of 64 costs), and per page through
   ``page_message(page)`` at page sizes 48 and 96 (thumbnails plus keys, labels and the cell dicts).
   Sources: 64x64 JPEG rows (256 distinct, ~2 KB) and 512x512 JPEG rows (64 distinct, ~76 KB; decoded in
   PIL draft mode), quality 90, gradient plus noise. Cold = a fresh ``ThumbnailCache()`` for every run, on
   a different page each time; warm = the same call again with the cache filled. Median over 15 pages (5
   with ``--quick``) after one discarded warm-up call, with the fastest run beside it; cold runs also show
   where the time goes (read the image bytes, open + decode + resize, encode), timed separately on the
   same rows. Default thumbnail size (128 px).

2. Browser side: JupyterLab on 127.0.0.1 (started and stopped here) and Debian's Chromium, headless, driven
   by Playwright. A notebook builds an N-row cache (64x64 JPEG rows: 256 distinct JPEGs cycled, ClassLabel
   with 10 names) and shows ``ds.browse(page_size=48)``. Instrumentation: an init script counts blob
   object URLs (created, revoked, live) and stamps the first one created (or ``img.src`` set) after each
   action, which is when the widget starts drawing the page message; the notebook wraps the browser's
   ``page_message`` and ``send_page`` to log kernel-side times (to a file, outside the timed work). Each
   measurement runs in the page: ``element.click()``, wait (MutationObserver) for the grid to be rebuilt
   and then for ``data-ready="page-N"`` (every image decoded), then two animation frames (painted); it then
   checks that every ``img`` in the grid is ``complete`` with ``naturalWidth > 0``.

   (a) next page: a click on "next" to the new page painted, page size 48 (20 pages, after 2 warm-up
       clicks) and 96 (10 pages), on pages the kernel has not made thumbnails for yet; then "previous"
       over 10 of those pages again (kernel cache warm: the transport and the page's own work);
   (b) label filter: a click on a label chip to the filtered first page painted, cycling through the
       classes twice (first round: thumbnails not yet made; second round: made, the kernel cache is warm);
   (c) memory: page through 50 pages (size 48); at pages 1, 10, 25 and 50, after forcing GC twice over CDP
       (``HeapProfiler.collectGarbage``): the JS heap in use (``Runtime.getHeapUsage``), DOM nodes and
       listeners (``Memory.getDOMCounters``), live blob URLs, ``img`` elements with a blob ``src``, and
       the renderer processes' USS (psutil).

Targets (informational, the script always exits 0 when it ran): per 64 thumbnails, cold from 64x64
JPEGs <= 15 ms, cold from 512x512 JPEGs <= 60 ms, warm <= 3 ms; next page painted (48 cells, median)
<= 300 ms; label filter to painted (median, first round) <= 500 ms; JS heap growth from page 10 to 50
< 5 MB.

Run::

    python benchmarks/bench_browser.py              # 100k-row cache, 1-2 minutes on 2 cores
    python benchmarks/bench_browser.py --quick      # 10k-row cache, fewer repeats, about a minute
    python benchmarks/bench_browser.py --no-browser # kernel side only, seconds

Needs the ``lab`` and test extras (anywidget, jupyterlab, playwright) and /usr/bin/chromium; never
downloads a browser.
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from _report import rule as _rule
from _report import verdict as _verdict

REPO = Path(__file__).resolve().parents[1]
LABEL_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
SEED = 1234
MB = 1024 * 1024

# kernel side
THUMBS = 64
KERNEL_PAGE_SIZES = (48, 96)
SMALL_SIDE, LARGE_SIDE = 64, 512
SMALL_JPEGS, LARGE_JPEGS = 256, 64
KERNEL_REPEATS, QUICK_KERNEL_REPEATS = 15, 5

# browser side
DEFAULT_ROWS, QUICK_ROWS = 100_000, 10_000
NOTEBOOK_JPEGS = 256
NEXT_WARMUP = 2
NEXT_48, QUICK_NEXT_48 = 20, 8
PREV_48, QUICK_PREV_48 = 10, 5
NEXT_96, QUICK_NEXT_96 = 10, 5
FILTER_CLASSES, QUICK_FILTER_CLASSES = 10, 5
MEMORY_PAGES = 50
MEMORY_MARKS = (1, 10, 25, 50)
JUMP_48 = 20  # page index where the 48-per-page run starts (beyond the rows the filter run has shown)
JUMP_96 = 25  # page index where the 96-per-page run starts (beyond both)
PAUSE_S = 0.1  # between actions, so that one action's trailing work does not land in the next one
VIEWPORT = {"width": 1400, "height": 1000}
ACTION_TIMEOUT_MS = 60_000

# targets
COLD_SMALL_TARGET_MS = 15.0
COLD_LARGE_TARGET_MS = 60.0
WARM_TARGET_MS = 3.0
NEXT_TARGET_MS = 300.0
FILTER_TARGET_MS = 500.0
HEAP_GROWTH_TARGET_MB = 5.0

GRID = "[data-testid=se-grid]"


# --- workload ----------------------------------------------------------------------


def make_jpegs(count: int, side: int, seed: int) -> list[bytes]:
    """Distinct, photo-like JPEGs (quality 90): a random colour gradient plus noise (source pasted in the notebook)."""
    from PIL import Image as PILImage

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:side, 0:side]
    out = []
    for _ in range(count):
        base = rng.integers(0, 256, size=3)
        slope = rng.uniform(-3.0, 3.0, size=(2, 3)) * (64 / side)
        pixels = base + xx[..., None] * slope[0] + yy[..., None] * slope[1] + rng.normal(0, 12, size=(side, side, 3))
        buffer = io.BytesIO()
        PILImage.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=90)
        out.append(buffer.getvalue())
    return out


def build_cache(home: Path, name: str, jpegs: list[bytes], rows: int) -> Any:
    import stable_explore as se

    features = se.Features(image=se.Image(), label=se.ClassLabel(names=LABEL_NAMES))
    m = len(jpegs)
    source = ((f"row-{i:06d}", {"image": jpegs[i % m], "label": (i * 7) % 10}) for i in range(rows))
    return se.build(source, features, name=name, key=f"{name}-{rows}", home=home, progress=False)


# --- kernel side --------------------------------------------------------------------


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def _timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


@dataclass
class KernelCase:
    """One source (64x64 or 512x512 JPEG rows): cold and warm times per 64 thumbnails and per page."""

    name: str
    jpeg_kb: float
    cold: dict[str, float] = field(default_factory=dict)  # "thumbs64" / "page48" / "page96" -> ms
    warm: dict[str, float] = field(default_factory=dict)
    best: dict[str, float] = field(default_factory=dict)  # "cold" / "warm" -> fastest 64-thumbnail run, ms
    stages: dict[str, float] = field(default_factory=dict)  # cold stages per 64 thumbnails, ms
    thumb_kb: float = 0.0
    thumb_px: tuple[int, int] = (0, 0)


def kernel_case(name: str, ds: Any, jpeg_kb: float, repeats: int) -> KernelCase:
    """Cold (fresh cache, new page each run) and warm (same call again) medians for one dataset."""
    from stable_explore.widgets._thumbs import ThumbnailCache
    from stable_explore.widgets.browser import ShardBrowser

    case = KernelCase(name, jpeg_kb)

    def browser(page_size: int) -> Any:
        return ShardBrowser(ds, page_size=page_size, cache=ThumbnailCache())

    # per 64 thumbnails; run 0 is a warm-up (first-call costs) and is dropped
    cold, warm = [], []
    for run in range(repeats + 1):
        rows = np.arange(run * THUMBS, (run + 1) * THUMBS, dtype=np.int64)
        widget = browser(48)
        thumbs: list[Any] = []
        cold.append(_timed(lambda w=widget, r=rows, out=thumbs: out.extend(w._thumbnails(r))))
        warm.append(_timed(lambda w=widget, r=rows: w._thumbnails(r)))
        if any(t is None for t in thumbs):
            raise RuntimeError(f"{name}: a thumbnail failed to build")
        if run == repeats:
            from PIL import Image as PILImage

            case.thumb_kb = statistics.mean(len(t[0]) for t in thumbs) / 1024
            case.thumb_px = PILImage.open(io.BytesIO(thumbs[0][0])).size
        widget.close()
    case.cold["thumbs64"], case.warm["thumbs64"] = _median_ms(cold[1:]), _median_ms(warm[1:])
    case.best = {"cold": min(cold[1:]) * 1000, "warm": min(warm[1:]) * 1000}

    # per page: page_message(page) at each page size
    for size in KERNEL_PAGE_SIZES:
        cold, warm = [], []
        for run in range(repeats + 1):
            widget = browser(size)
            cold.append(_timed(lambda w=widget, p=run: w.page_message(p)))
            warm.append(_timed(lambda w=widget, p=run: w.page_message(p)))
            widget.close()
        case.cold[f"page{size}"], case.warm[f"page{size}"] = _median_ms(cold[1:]), _median_ms(warm[1:])

    case.stages = cold_stages(ds, repeats)
    return case


def cold_stages(ds: Any, repeats: int) -> dict[str, float]:
    """The widget's cold path split in its steps, per 64 thumbnails (medians over the same pages)."""
    from stable_explore.display.images import encode_thumbnail, open_thumbnail

    size = 128
    read, decode, encode = [], [], []
    for run in range(1, repeats + 1):
        rows = np.arange(run * THUMBS, (run + 1) * THUMBS, dtype=np.int64)
        started = time.perf_counter()
        values = ds.select(rows).to_arrow(columns=["image"]).column(0).to_pylist()
        t1 = time.perf_counter()
        images = [open_thumbnail(v, size) for v in values]
        for image in images:
            image.load()  # open_thumbnail may hand back a lazily decoded image; the decode belongs here
        t2 = time.perf_counter()
        for image in images:
            encode_thumbnail(image)
        t3 = time.perf_counter()
        read.append(t1 - started)
        decode.append(t2 - t1)
        encode.append(t3 - t2)
    return {"read": _median_ms(read), "decode": _median_ms(decode), "encode": _median_ms(encode)}


def run_kernel(root: Path, repeats: int) -> list[KernelCase]:
    rows = (repeats + 1) * max(KERNEL_PAGE_SIZES)
    cases = []
    for label, side, count in (
        (f"{SMALL_SIDE}x{SMALL_SIDE} JPEG rows", SMALL_SIDE, SMALL_JPEGS),
        (f"{LARGE_SIDE}x{LARGE_SIDE} JPEG rows", LARGE_SIDE, LARGE_JPEGS),
    ):
        jpegs = make_jpegs(count, side, SEED)
        ds = build_cache(root / "kernel-home", f"kernel{side}", jpegs, rows)
        cases.append(kernel_case(label, ds, statistics.mean(map(len, jpegs)) / 1024, repeats))
        del ds
    return cases


# --- browser side: notebook -----------------------------------------------------------

BUILD_CELL = """\
import io
import time

import numpy as np
from PIL import Image as PILImage

import stable_explore as se

{make_jpegs}

JPEGS = make_jpegs({jpegs}, 64, {seed})
FEATURES = se.Features(image=se.Image(), label=se.ClassLabel(names={names!r}))


def browser_bench_rows(n):
    for i in range(n):
        yield f"row-{{i:06d}}", {{"image": JPEGS[i % len(JPEGS)], "label": (i * 7) % 10}}


_started = time.perf_counter()
ds = se.build(browser_bench_rows, FEATURES, args=({rows},), progress=False)
print(f"BUILD {{time.perf_counter() - _started:.2f}} s {{len(ds)}} rows {{ds.num_shards}} shards")
"""

BROWSE_CELL = """\
import json
import time

from stable_explore.widgets._thumbs import SHARED_CACHE

browser = ds.browse(page_size=48)
_page_message, _send_page, _last = browser.page_message, browser.send_page, {{}}


def _timed_page_message(page=None):
    started = time.perf_counter()
    result = _page_message(page)
    _last["page_message_ms"] = (time.perf_counter() - started) * 1000
    return result


def _timed_send_page():
    wall, misses, started = time.time(), SHARED_CACHE.misses, time.perf_counter()
    _send_page()
    entry = {{
        "wall": wall,
        "send_page_ms": (time.perf_counter() - started) * 1000,
        "misses": SHARED_CACHE.misses - misses,
        "page": browser.page,
        "page_size": browser.page_size,
        **_last,
    }}
    with open({log!r}, "a") as log:
        log.write(json.dumps(entry) + "\\n")


browser.page_message = _timed_page_message
browser.send_page = _timed_send_page
browser
"""

# Counts blob object URLs, and stamps the first object URL made or img.src set after each action: the
# widget's drawPage does both for its first cell, right after the page message arrives (whichever way
# it hands the bytes to the img).
INSTRUMENT_JS = """
(() => {
  const bench = { created: 0, revoked: 0, live: new Set(), firstDraw: null };
  const stamp = () => { if (bench.firstDraw === null) bench.firstDraw = performance.now(); };
  const create = URL.createObjectURL.bind(URL);
  const revoke = URL.revokeObjectURL.bind(URL);
  const src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, "src");
  Object.defineProperty(HTMLImageElement.prototype, "src", {
    ...src,
    set(value) { stamp(); src.set.call(this, value); },
  });
  URL.createObjectURL = (object) => {
    stamp();
    const url = create(object);
    bench.created += 1;
    bench.live.add(url);
    return url;
  };
  URL.revokeObjectURL = (url) => {
    if (bench.live.delete(url)) bench.revoked += 1;
    revoke(url);
  };
  window.__seBench = bench;
})();
"""

# One action (click, or set a value and fire "change") and the page it leads to, timed in the page.
MEASURE_JS = """
async ({ action, ready, timeoutMs }) => {
  const grid = document.querySelector("[data-testid=se-grid]");
  const bench = window.__seBench;
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(performance.now())));
  let drawn = null;
  let readyAt = null;
  let observer = null;
  let timer = null;
  const done = new Promise((resolve, reject) => {
    observer = new MutationObserver((records) => {
      const now = performance.now();
      if (drawn === null && records.some((r) => r.type === "childList")) drawn = now;
      if (drawn !== null && readyAt === null && grid.dataset.ready === ready) {
        readyAt = now;
        resolve();
      }
    });
    observer.observe(grid, { childList: true, attributes: true, attributeFilter: ["data-ready"] });
    timer = setTimeout(() => reject(new Error(`grid not ${ready} within ${timeoutMs} ms`)), timeoutMs);
  });
  const target = document.querySelector(action.selector);
  if (!target) throw new Error(`no element ${action.selector}`);
  if (target.disabled) throw new Error(`${action.selector} is disabled`);
  bench.firstDraw = null;
  const started = performance.now();
  if (action.kind === "click") {
    target.click();
  } else {
    target.value = action.value;
    target.dispatchEvent(new Event("change", { bubbles: true }));
  }
  try {
    await done;
  } finally {
    observer.disconnect();
    clearTimeout(timer);
  }
  await frame();
  const painted = await frame();
  const images = [...grid.querySelectorAll("img")];
  const labels = [...grid.querySelectorAll("[data-testid=se-label]")].map((e) => e.textContent);
  return {
    total: painted - started,
    arrived: bench.firstDraw === null ? null : bench.firstDraw - started,
    drawn: drawn - started,
    ready: readyAt - started,
    cells: grid.querySelectorAll("[data-testid=se-thumb]").length,
    images: images.length,
    loaded: images.filter((img) => img.complete && img.naturalWidth > 0).length,
    page: grid.dataset.page,
    pageText: document.querySelector("[data-testid=se-page]").textContent,
    labels: [...new Set(labels)],
  };
}
"""

BLOB_JS = """
() => ({
  live: window.__seBench.live.size,
  created: window.__seBench.created,
  revoked: window.__seBench.revoked,
  blobImages: document.querySelectorAll('img[src^="blob:"]').length,
})
"""

WIDGET_OR_ERROR_JS = """
() => {
  if (document.querySelector("[data-testid=se-grid][data-ready='page-0']")) return "ready";
  const error = document.querySelector(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'], "
    + ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']");
  return error && /Error|Traceback/.test(error.textContent) ? "error: " + error.textContent.slice(-2000) : null;
}
"""


def notebook_cells(rows: int, log: Path) -> list[str]:
    """The benchmark notebook's two cells: build the cache, then browse it with the kernel-side log on."""
    build = BUILD_CELL.format(
        make_jpegs=inspect.getsource(make_jpegs).rstrip(),
        jpegs=NOTEBOOK_JPEGS,
        seed=SEED,
        names=LABEL_NAMES,
        rows=rows,
    )
    return [build, BROWSE_CELL.format(log=str(log))]


# --- browser side: measurements --------------------------------------------------------


@dataclass
class Action:
    """One measured action: the page's own timings (ms from the action) and the kernel's log entries."""

    phase: str
    result: dict[str, Any]
    window: tuple[float, float]  # wall clock (time.time) before and after, to match the kernel's log
    kernel: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total(self) -> float:
        return float(self.result["total"])


@dataclass
class BrowserRun:
    rows: int
    build_s: float = 0.0
    startup_s: float = 0.0
    actions: list[Action] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)
    heap_fields: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def phase(self, name: str) -> list[Action]:
        return [a for a in self.actions if a.phase == name]


class Driver:
    """Runs actions in the page and checks what they led to."""

    def __init__(self, page: Any, run: BrowserRun) -> None:
        self.page = page
        self.run = run
        self.page_size = 48
        self.current = 0
        self.filtered_rows: int | None = None  # rows the label filter keeps; None: no filter

    def act(
        self,
        phase: str,
        selector: str,
        ready_page: int,
        *,
        value: str | None = None,
        expect_label: str | None = None,
    ) -> Action:
        action = {"kind": "click" if value is None else "change", "selector": selector, "value": value}
        time.sleep(PAUSE_S)
        before = time.time()
        result = self.page.evaluate(
            MEASURE_JS, {"action": action, "ready": f"page-{ready_page}", "timeoutMs": ACTION_TIMEOUT_MS}
        )
        after = time.time()
        self.current = ready_page
        record = Action(phase, result, (before, after))
        self._check(record, ready_page, expect_label)
        self.run.actions.append(record)
        return record

    def _check(self, action: Action, page: int, expect_label: str | None) -> None:
        r = action.result
        expected_cells = min(self.page_size, max(0, self._rows_in_view() - page * self.page_size))
        problems = []
        if r["page"] != str(page) or not r["pageText"].startswith(f"page {page + 1} of "):
            problems.append(f"showed {r['page']!r} / {r['pageText']!r}, expected page {page + 1}")
        if not r["cells"] == r["images"] == r["loaded"] == expected_cells:
            problems.append(f"{r['cells']} cells, {r['images']} img, {r['loaded']} loaded; expected {expected_cells}")
        if expect_label is not None and r["labels"] != [expect_label]:
            problems.append(f"labels {r['labels']}, expected only {expect_label!r}")
        for problem in problems:
            self.run.problems.append(f"{action.phase}: {problem}")

    def _rows_in_view(self) -> int:
        return self.filtered_rows if self.filtered_rows is not None else self.run.rows

    def next(self, phase: str) -> Action:
        return self.act(phase, "[data-testid=se-next]", self.current + 1)

    def prev(self, phase: str) -> Action:
        return self.act(phase, "[data-testid=se-prev]", self.current - 1)

    def jump(self, phase: str, page: int) -> Action:
        return self.act(phase, "input.se-jump", page, value=str(page + 1))

    def set_page_size(self, phase: str, size: int) -> Action:
        self.page_size = size
        return self.act(phase, "select[title='rows per page']", 0, value=str(size))

    def label(self, phase: str, index: int) -> Action:
        self.filtered_rows = len(range((index * 3) % 10, self.run.rows, 10))  # label (i * 7) % 10 == index
        return self.act(
            phase,
            f"[data-testid=se-filter-label] [data-class='{index}']",
            0,
            expect_label=LABEL_NAMES[index],
        )

    def all_labels(self, phase: str) -> Action:
        self.filtered_rows = None
        return self.act(phase, "[data-testid=se-filter-label] [data-class='all']", 0)


def renderer_uss() -> float | None:
    """USS of Chromium's renderer processes (our descendants), in bytes; None where psutil cannot tell."""
    try:
        import psutil
    except ImportError:
        return None
    total = 0
    for child in psutil.Process().children(recursive=True):
        try:
            if "--type=renderer" in " ".join(child.cmdline()):
                total += child.memory_full_info().uss
        except (psutil.Error, OSError):
            continue
    return float(total) if total else None


def memory_snapshot(cdp: Any, page: Any, page_number: int) -> dict[str, Any]:
    for _ in range(2):
        cdp.send("HeapProfiler.collectGarbage")
    heap = cdp.send("Runtime.getHeapUsage")
    counters = cdp.send("Memory.getDOMCounters")
    blobs = page.evaluate(BLOB_JS)
    return {"page": page_number, "heap": heap, "dom": counters, "blobs": blobs, "renderer_uss": renderer_uss()}


def measure_browser(page: Any, run: BrowserRun, quick: bool) -> None:
    driver = Driver(page, run)
    classes = FILTER_CLASSES if not quick else QUICK_FILTER_CLASSES
    order = [(1 + i) % 10 for i in range(classes)]

    # warm-up (first-call costs in the page and the kernel), far from every page measured later
    driver.jump("warmup", run.rows // 48 - NEXT_WARMUP - 2)
    for _ in range(NEXT_WARMUP):
        driver.next("warmup")

    # (b) label filter first, while the kernel has only made page 0's thumbnails: round 1 cold, round 2 warm
    for round_name in ("filter-cold", "filter-warm"):
        for index in order:
            driver.label(round_name, index)
    driver.all_labels("setup")

    # (a) next page, 48 per page, from a page no filter has shown (cold kernel cache)
    driver.jump("setup", JUMP_48)
    for _ in range(QUICK_NEXT_48 if quick else NEXT_48):
        driver.next("next-48")
    for _ in range(QUICK_PREV_48 if quick else PREV_48):
        driver.prev("prev-48")  # pages just shown: the kernel's thumbnails are cached

    # (a) next page, 96 per page, beyond every row shown so far
    driver.set_page_size("pagesize-96", 96)
    driver.jump("setup", JUMP_96)
    for _ in range(QUICK_NEXT_96 if quick else NEXT_96):
        driver.next("next-96")

    # (c) memory while paging 50 pages of 48
    cdp = page.context.new_cdp_session(page)
    driver.set_page_size("pagesize-48", 48)
    run.memory.append(memory_snapshot(cdp, page, 1))
    for number in range(2, MEMORY_PAGES + 1):
        driver.next("memory")
        if number in MEMORY_MARKS:
            run.memory.append(memory_snapshot(cdp, page, number))
    cdp.detach()


def match_kernel_log(run: BrowserRun, log: Path) -> None:
    """Give each action the kernel's page sends that started while it ran (one clock: same machine)."""
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    for action in run.actions:
        before, after = action.window
        action.kernel = [e for e in entries if before <= e["wall"] <= after]
        if len(action.kernel) != 1:
            run.problems.append(f"{action.phase}: {len(action.kernel)} kernel page sends during one action")


def _lab_helpers() -> ModuleType:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests import lab

    return lab


def wait_widget(page: Any, timeout_ms: int) -> None:
    state = page.wait_for_function(WIDGET_OR_ERROR_JS, timeout=timeout_ms).json_value()
    if state != "ready":
        raise RuntimeError(f"the notebook failed: {state}")


def run_browser(root: Path, rows: int, quick: bool) -> BrowserRun:
    from playwright.sync_api import sync_playwright

    lab = _lab_helpers()
    if not Path(lab.CHROMIUM).exists():
        raise RuntimeError(f"{lab.CHROMIUM} is not installed")
    notebooks = root / "notebooks"
    notebooks.mkdir()
    log = root / "kernel-log.jsonl"
    lab.write_notebook(notebooks / "bench.ipynb", notebook_cells(rows, log))
    run = BrowserRun(rows)
    env = {"STABLE_EXPLORE_HOME": str(root / "home"), "IPYTHONDIR": str(root / "ipython")}
    started = time.perf_counter()
    with jupyter_session(lab, root, notebooks, env) as url, sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=lab.CHROMIUM, headless=True, args=lab.CHROMIUM_ARGS)
        try:
            context = chromium.new_context(viewport=VIEWPORT)
            context.add_init_script(INSTRUMENT_JS)
            page = context.new_page()
            lab.open_notebook(page, url, "bench.ipynb")
            lab.run_all(page)
            wait_widget(page, timeout_ms=600_000)
            run.startup_s = time.perf_counter() - started
            output = page.locator(".jp-Notebook .jp-Cell").nth(0).locator(".jp-OutputArea").inner_text()
            run.build_s = float(output.split("BUILD", 1)[1].split()[0])
            page.locator(GRID).scroll_into_view_if_needed()
            measure_browser(page, run, quick)
            context.close()
        finally:
            chromium.close()
    match_kernel_log(run, log)
    return run


@contextmanager
def jupyter_session(lab: ModuleType, root: Path, notebooks: Path, env: dict[str, str]) -> Iterator[str]:
    """The lab helper's server; on failure, the end of its log is printed."""
    try:
        with lab.jupyter_lab(root, notebooks, env) as url:
            yield url
    except BaseException:
        log = root / "lab.log"
        if log.exists():
            print("--- end of the JupyterLab log ---", file=sys.stderr)
            print(log.read_text()[-4000:], file=sys.stderr)
        raise


# --- report ------------------------------------------------------------------------


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


LOAD_AT_START = _load()


def _p90(values: list[float]) -> float:
    return float(np.percentile(values, 90))


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_header(rows: int, quick: bool) -> None:
    from importlib.metadata import version

    import anywidget
    import jupyterlab
    import PIL

    import stable_explore

    print("stable-explore shard browser benchmark" + (" (--quick)" if quick else ""))
    print("======================================" + ("==========" if quick else ""))
    print(
        f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python "
        f"{platform.python_version()}, Pillow {PIL.__version__}, anywidget {anywidget.__version__}, "
        f"jupyterlab {jupyterlab.__version__}, playwright {version('playwright')}, "
        f"stable-explore {stable_explore.__version__}"
    )
    print(f"browser workload: {rows:,} rows of 64x64 JPEG ({NOTEBOOK_JPEGS} distinct, cycled) + ClassLabel(10 names)")
    print(f"load average at the start: {LOAD_AT_START}, at the end: {_load()} (other work on the machine skews times)")


def print_kernel(cases: list[KernelCase], repeats: int) -> None:
    _rule(f"KERNEL: thumbnails for the page (128 px), median of {repeats} pages, ms; lower is better")
    head = f"{'source':<24}{'':<6}{'64 thumbs':>11}{'(best)':>9}{'page of 48':>12}{'page of 96':>12}"
    print(head)
    for case in cases:
        for kind, values in (("cold", case.cold), ("warm", case.warm)):
            print(
                f"{case.name:<24}{kind:<6}{values['thumbs64']:>11.2f}{f'({case.best[kind]:.2f})':>9}"
                f"{values['page48']:>12.2f}{values['page96']:>12.2f}"
            )
    print("64 thumbs = ShardBrowser._thumbnails(64 rows); page of N = page_message(page) with page_size=N;")
    print("(best) = the fastest run, the least disturbed by other load on the machine; targets use the median")
    print("cold = new ThumbnailCache() per run, a different page each run; warm = the same call again")
    print()
    print("cold, where the time goes per 64 thumbnails (same pages, steps timed separately), ms:")
    print(f"{'source':<24}{'JPEG in':>9}{'read':>8}{'decode':>9}{'encode':>9}{'thumb out':>19}")
    for case in cases:
        s = case.stages
        out = f"{case.thumb_px[0]}x{case.thumb_px[1]}, {case.thumb_kb:.1f} KB"
        print(f"{case.name:<24}{case.jpeg_kb:>6.1f} KB{s['read']:>8.2f}{s['decode']:>9.2f}{s['encode']:>9.2f}{out:>19}")
    print("read = take(rows) -> image bytes; decode = open_thumbnail (open, JPEG draft, resize, 2x nearest")
    print("enlarge for images under half the size) + load; encode = encode_thumbnail (JPEG q80)")


def _phase_line(name: str, actions: list[Action], target: float | None = None) -> str:
    totals = [a.total for a in actions]
    line = f"{name:<34}{len(totals):>3}{_med(totals):>9.0f}{_p90(totals):>8.0f}{min(totals):>7.0f}{max(totals):>7.0f}"
    if target is not None:
        line += f"   target <= {target:.0f}  {_verdict(_med(totals) <= target)}"
    return line


def _breakdown_line(name: str, actions: list[Action]) -> str:
    def med(key: str) -> float:
        return _med([float(a.result[key]) for a in actions if a.result[key] is not None])

    kernel = [a.kernel[0] for a in actions if len(a.kernel) == 1]
    page_message = _med([k.get("page_message_ms", float("nan")) for k in kernel])
    send = _med([k["send_page_ms"] for k in kernel])
    misses = _med([k["misses"] for k in kernel])
    others = _med(
        [
            a.result["arrived"] - a.kernel[0]["send_page_ms"]
            for a in actions
            if len(a.kernel) == 1 and a.result["arrived"] is not None
        ]
    )
    arrived, drawn, ready, total = med("arrived"), med("drawn"), med("ready"), med("total")
    return (
        f"{name:<14}{page_message:>8.1f}{send - page_message:>7.1f}{others:>8.1f}{arrived:>9.1f}"
        f"{drawn - arrived:>8.1f}{ready - drawn:>9.1f}{total - ready:>9.1f}{misses:>8.0f}"
    )


def print_browser(run: BrowserRun) -> None:
    _rule("BROWSER: action -> page painted, ms (in-page clock); lower is better")
    print(
        f"JupyterLab + notebook + {run.rows:,}-row build: {run.startup_s:.0f} s "
        f"(build in the kernel {run.build_s:.1f} s)"
    )
    print(f"{'action':<34}{'n':>3}{'median':>9}{'p90':>8}{'min':>7}{'max':>7}")
    print(_phase_line("(a) next page, 48 cells", run.phase("next-48"), NEXT_TARGET_MS))
    print(_phase_line("(a) previous page, 48, warm kernel", run.phase("prev-48")))
    print(_phase_line("(a) next page, 96 cells", run.phase("next-96")))
    print(_phase_line("(b) label filter, cold kernel", run.phase("filter-cold"), FILTER_TARGET_MS))
    print(_phase_line("(b) label filter, warm kernel", run.phase("filter-warm")))
    print(_phase_line("page size 48 -> 96 (page 1)", run.phase("pagesize-96")))
    print("painted = grid data-ready (every img decoded) + 2 animation frames; p90 interpolated")
    print()
    print("where the time goes (medians, ms):")
    print(f"{'action':<14}{'kernel':>8}{'send':>7}{'other':>8}{'=arrive':>9}{'draw':>8}{'decode':>9}{'paint':>9}")
    print(f"{'':<14}{'page':>8}{'':>7}{'':>8}{'':>9}{'':>8}{'imgs':>9}{'2 frames':>9}{'misses':>8}")
    print(_breakdown_line("next, 48", run.phase("next-48")))
    print(_breakdown_line("prev, 48", run.phase("prev-48")))
    print(_breakdown_line("next, 96", run.phase("next-96")))
    print(_breakdown_line("filter, cold", run.phase("filter-cold")))
    print(_breakdown_line("filter, warm", run.phase("filter-warm")))
    print("kernel page = page_message() in the kernel; send = serialising + sending the message (send_page minus")
    print("page_message); other = the rest until the page starts drawing: the click's comm message to the kernel,")
    print("trait sync and observers, websocket and server hops both ways, the frontend's message decoding;")
    print("arrive = action -> first object URL or img.src of the page; draw = the page's drawPage (a Blob and an")
    print("object URL per thumbnail, the cells) and the image requests its img.src settings queue (microtasks that")
    print("run before the grid's MutationObserver); decode = until data-ready (every img.decode() resolved);")
    print("paint = 2 animation frames;")
    print("misses = thumbnails the kernel had to make for the page (ThumbnailCache misses)")


def print_memory(run: BrowserRun) -> float:
    _rule(f"MEMORY: paging {MEMORY_PAGES} pages of 48, after forced GC (CDP HeapProfiler.collectGarbage x2)")
    extra = [f for f in ("embedderHeapUsedSize", "backingStorageSize") if f in run.memory[0]["heap"]]
    head = f"{'page':>5}{'JS heap used':>14}{'heap total':>12}"
    head += "".join(f"{('embedder' if f.startswith('embedder') else 'backing store'):>15}" for f in extra)
    print(head + f"{'DOM nodes':>11}{'listeners':>11}{'live blob URLs':>16}{'blob <img>':>12}{'renderer USS':>14}")
    for snap in run.memory:
        heap, dom, blobs = snap["heap"], snap["dom"], snap["blobs"]
        line = f"{snap['page']:>5}{heap['usedSize'] / MB:>11.1f} MB{heap['totalSize'] / MB:>9.1f} MB"
        line += "".join(f"{heap[f] / MB:>12.1f} MB" for f in extra)
        uss = snap["renderer_uss"]
        uss_text = f"{uss / MB:.0f} MB" if uss is not None else "n/a"
        line += f"{dom['nodes']:>11,}{dom['jsEventListeners']:>11,}{blobs['live']:>16,}{blobs['blobImages']:>12,}"
        print(line + f"{uss_text:>14}")
    last = run.memory[-1]["blobs"]
    print(f"blob URLs over the whole run: {last['created']:,} created, {last['revoked']:,} revoked")
    if extra:
        totals = {s["page"]: s["heap"]["usedSize"] + sum(s["heap"][f] for f in extra) for s in run.memory}
        print(
            f"JS heap + {' + '.join(extra)} growth page 10 -> {MEMORY_PAGES}: "
            f"{(totals[MEMORY_PAGES] - totals[10]) / MB:+.2f} MB"
        )
    growth = heap_growth(run)
    print(
        f"JS heap growth page 10 -> {MEMORY_PAGES}: {growth:+.2f} MB   target < {HEAP_GROWTH_TARGET_MB:.0f} MB   "
        f"{_verdict(growth < HEAP_GROWTH_TARGET_MB)}"
    )
    return growth


def heap_growth(run: BrowserRun) -> float:
    used = {snap["page"]: snap["heap"]["usedSize"] for snap in run.memory}
    return (used[MEMORY_PAGES] - used[10]) / MB


def print_summary(cases: list[KernelCase], run: BrowserRun | None) -> None:
    small, large = cases
    warm = max(small.warm["thumbs64"], large.warm["thumbs64"])
    rows: list[tuple[str, str, bool]] = [
        (
            f"cold 64 thumbs from 64x64 JPEG <= {COLD_SMALL_TARGET_MS:.0f} ms",
            f"{small.cold['thumbs64']:.1f} ms",
            small.cold["thumbs64"] <= COLD_SMALL_TARGET_MS,
        ),
        (
            f"cold 64 thumbs from 512x512 JPEG <= {COLD_LARGE_TARGET_MS:.0f} ms",
            f"{large.cold['thumbs64']:.1f} ms",
            large.cold["thumbs64"] <= COLD_LARGE_TARGET_MS,
        ),
        (f"warm 64 thumbs <= {WARM_TARGET_MS:.0f} ms", f"{warm:.2f} ms", warm <= WARM_TARGET_MS),
    ]
    if run is not None:
        nxt = _med([a.total for a in run.phase("next-48")])
        flt = _med([a.total for a in run.phase("filter-cold")])
        growth = heap_growth(run)
        rows += [
            (f"next page painted (48) median <= {NEXT_TARGET_MS:.0f} ms", f"{nxt:.0f} ms", nxt <= NEXT_TARGET_MS),
            (f"label filter painted median <= {FILTER_TARGET_MS:.0f} ms", f"{flt:.0f} ms", flt <= FILTER_TARGET_MS),
            (
                f"JS heap growth page 10 -> {MEMORY_PAGES} < {HEAP_GROWTH_TARGET_MB:.0f} MB",
                f"{growth:+.2f} MB",
                growth < HEAP_GROWTH_TARGET_MB,
            ),
        ]
    _rule("TARGETS (informational; the exit status is 0 either way)")
    for label, value, ok in rows:
        print(f"{label:<46}{value:>12}   {_verdict(ok)}")


# --- main --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,}-row cache, fewer repeats")
    parser.add_argument("--rows", type=int, default=None, help=f"rows in the browsed cache (default {DEFAULT_ROWS:,})")
    parser.add_argument("--no-browser", action="store_true", help="kernel side only")
    args = parser.parse_args(argv)
    rows = args.rows if args.rows is not None else (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    needed = (JUMP_96 + max(NEXT_96, QUICK_NEXT_96) + 2) * 96
    if rows < needed:
        parser.error(f"--rows must be at least {needed:,} (the 96-per-page run starts at page {JUMP_96 + 1})")
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="bench_browser-"))
    try:
        repeats = QUICK_KERNEL_REPEATS if args.quick else KERNEL_REPEATS
        cases = run_kernel(root, repeats)
        run = None if args.no_browser else run_browser(root, rows, args.quick)
        print_header(rows, args.quick)
        print_kernel(cases, repeats)
        if run is not None:
            print_browser(run)
            print_memory(run)
            if run.problems:
                _rule("PROBLEMS seen while measuring")
                for problem in run.problems:
                    print(problem)
        print_summary(cases, run)
        print()
        print(f"total benchmark time {time.perf_counter() - started:.0f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
