// @ts-check
// The map's two canvases: the points (an ImageData filled by lib/mappaint.js, at once for a few points
// and in slices for many, a quick move of the last full frame while many points pan or zoom) and the
// overlay above them (the box or lasso being drawn, the point under the cursor). The spatial grid is
// built in slices after the first paint. Timings and the view go on the canvas's data attributes,
// which the tests read.
import { QUICK_ABOVE, fitView, framePlacement, sameView, toScreen } from "../lib/mapview.js";
import { mapPalette, paintStages, runStages, shownCodes } from "../lib/mappaint.js";
import { SLICE_MS, sliced } from "../lib/slices.js";
import { gridStages } from "../lib/spatial.js";

/** @typedef {import("./state.js").MapState} MapState */
/** @typedef {import("../lib/mapview.js").View} View */
/** @typedef {import("../lib/colours.js").Rgb} Rgb */

/**
 * A CSS colour property of ``element`` as RGB (0..255), ``fallback`` where it is unset.
 * @param {Element} element
 * @param {string} property
 * @param {string} fallback
 * @returns {Rgb}
 */
export function cssRgb(element, property, fallback) {
  const probe = document.createElement("canvas");
  probe.width = probe.height = 1;
  const ctx = /** @type {CanvasRenderingContext2D} */ (probe.getContext("2d"));
  ctx.fillStyle = fallback;
  ctx.fillStyle = getComputedStyle(element).getPropertyValue(property).trim() || fallback;
  ctx.fillRect(0, 0, 1, 1);
  const d = ctx.getImageData(0, 0, 1, 1).data;
  return [d[0], d[1], d[2]];
}

/** @param {HTMLCanvasElement} canvas */
function context(canvas) {
  return /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
}

/**
 * Size both canvases to the stage (device pixels), with a fresh ImageData.
 * @param {MapState} s
 */
export function resize(s) {
  const { canvas, overlay, stage } = s.ui;
  s.dpr = window.devicePixelRatio || 1;
  s.cssWidth = Math.max(200, stage.clientWidth || 600);
  s.cssHeight = Math.max(200, stage.clientHeight || 480);
  for (const c of [canvas, overlay]) {
    c.width = Math.round(s.cssWidth * s.dpr);
    c.height = Math.round(s.cssHeight * s.dpr);
    c.style.width = `${s.cssWidth}px`;
    c.style.height = `${s.cssHeight}px`;
  }
  s.image = context(canvas).createImageData(canvas.width, canvas.height);
  s.pixels = new Uint32Array(s.image.data.buffer);
}

/**
 * Show every point.
 * @param {MapState} s
 */
export function fit(s) {
  if (s.extent) s.view = fitView(s.extent, s.cssWidth, s.cssHeight);
}

/** @param {MapState} s */
function publishView(s) {
  s.ui.canvas.dataset.view = JSON.stringify(s.view);
}

/**
 * The classes' colours on the page's background (the theme's --se-map-bg), and what is shown.
 * @param {MapState} s
 */
export function makePalette(s) {
  s.background = cssRgb(s.ui.root, "--se-map-bg", "#ffffff");
  s.palette = mapPalette((s.model.get("class_names") || []).length, s.background);
  makeShown(s);
}

/** @param {MapState} s */
export function makeShown(s) {
  s.shown = shownCodes(s.hidden, s.palette.length);
}

/**
 * After the first paint, in slices: hover and selection need the grid, drawing does not.
 * @param {MapState} s
 */
function buildGrid(s) {
  const begun = performance.now();
  const { canvas } = s.ui;
  s.gridJob = sliced(gridStages(s.xy, s.codes, s.n, /** @type {import("../lib/spatial.js").Box} */ (s.extent), (made) => { s.grid = made; }), (work) => {
    s.gridJob = null;
    canvas.dataset.gridMs = work.toFixed(1);
    canvas.dataset.gridWallMs = (performance.now() - begun).toFixed(1);
    canvas.dataset.grid = "ready";
  });
}

/**
 * A full frame is on the canvas: keep it for quick pans and zooms, and say so on the canvas.
 * @param {MapState} s
 * @param {number} work
 * @param {View} drawnView
 */
function paintDone(s, work, drawnView) {
  const { canvas } = s.ui;
  context(canvas).putImageData(/** @type {ImageData} */ (s.image), 0, 0);
  if (s.n > QUICK_ABOVE) {
    s.snapshot.width = canvas.width;
    s.snapshot.height = canvas.height;
    context(s.snapshot).drawImage(canvas, 0, 0);
  }
  s.paintedView = drawnView;
  canvas.dataset.paintedView = JSON.stringify(drawnView); // the view of the pixels now on the canvas
  canvas.dataset.paintMs = work.toFixed(1);
  canvas.dataset.paints = String(++s.paints);
  delete canvas.dataset.quick;
  publishView(s);
  if (!s.painted && s.n) {
    s.painted = true;
    canvas.dataset.firstPaintMs = (performance.now() - s.started).toFixed(1);
    canvas.dataset.ready = `points-${s.n}`;
    buildGrid(s);
  }
}

/**
 * Draw every point now (a few) or start doing so in slices (many), replacing any frame asked for.
 * @param {MapState} s
 */
export function paint(s) {
  if (s.frame) cancelAnimationFrame(s.frame); // called directly, it replaces the frame asked for
  s.frame = 0;
  if (s.quickFrame) cancelAnimationFrame(s.quickFrame);
  s.quickFrame = 0;
  if (s.paintJob) s.paintJob.cancel();
  s.paintJob = null;
  if (!s.pixels) return;
  const { canvas } = s.ui;
  const drawnView = { ...s.view };
  const w = canvas.width, ht = canvas.height;
  const layer = s.layer;
  const fresh = !(layer && layer.whole && layer.w === w && layer.h === ht && layer.codes === s.codes &&
    layer.shown === s.shown && layer.dpr === s.dpr && sameView(layer.view, drawnView));
  // few points and no new selection (a pan or zoom frame): draw them straight, the layer waits
  const direct = fresh && s.n <= QUICK_ABOVE && !s.selectionChanged;
  s.selectionChanged = false;
  if (direct) {
    s.layer = null;
  } else if (fresh) {
    const cells = layer && layer.cells.length === w * ht ? layer.cells : new Uint32Array(w * ht);
    s.layer = { cells, w, h: ht, codes: s.codes, shown: s.shown, dpr: s.dpr, view: drawnView, whole: false };
  }
  const stages = paintStages(s, s.pixels, w, ht, fresh, direct);
  if (s.n <= QUICK_ABOVE) {
    // few points: the whole frame at once, within this animation frame
    const t0 = performance.now();
    runStages(stages);
    paintDone(s, performance.now() - t0, drawnView);
    return;
  }
  // many points: in slices, the last frame (or its quick move) staying on screen until this one is whole
  // (a new selection in this view, no pass over every point: at once, in this frame, unless the
  // selection is so large that its own pass would hold the page)
  const begun = performance.now();
  const target = s.pixels;
  const job = sliced(stages, (work) => {
    s.paintJob = null;
    if (target !== s.pixels) return; // resized meanwhile: the next frame draws again
    canvas.dataset.paintWallMs = (performance.now() - begun).toFixed(1);
    canvas.dataset.paintFresh = String(fresh);
    paintDone(s, work, drawnView);
  }, fresh ? 0 : s.selectedRows.length > QUICK_ABOVE * 2 ? 2 * SLICE_MS : Infinity);
  s.paintJob = job.running ? job : null;
}

/**
 * Paint in the next animation frame (once, however often asked).
 * @param {MapState} s
 */
export function schedule(s) {
  if (!s.frame) s.frame = requestAnimationFrame(() => paint(s));
}

/**
 * While panning or zooming many points: move and scale the last full frame (one drawImage).
 * @param {MapState} s
 */
function quick(s) {
  s.quickFrame = 0;
  if (s.frame || !s.paintedView) return;
  if (s.paintJob) s.paintJob.cancel(); // its view is out of date
  s.paintJob = null;
  const t0 = performance.now();
  const { canvas } = s.ui;
  const ctx = context(canvas);
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.fillStyle = `rgb(${s.background.join(",")})`;
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(s.snapshot, ...framePlacement(s.view, s.paintedView, s.dpr, canvas.width, canvas.height));
  canvas.dataset.paintMs = (performance.now() - t0).toFixed(1);
  canvas.dataset.quick = "1";
  publishView(s);
}

/**
 * The view moved: a few points are drawn again in the next frame; many move the last full frame, and
 * are drawn again once the view has been still for a moment.
 * @param {MapState} s
 */
export function moved(s) {
  if (s.n <= QUICK_ABOVE || !s.paintedView) {
    schedule(s);
    return;
  }
  if (s.paintJob) s.paintJob.cancel();
  s.paintJob = null;
  if (!s.quickFrame && !s.frame) s.quickFrame = requestAnimationFrame(() => quick(s));
  clearTimeout(s.settle);
  s.settle = setTimeout(() => schedule(s), 150);
}

/**
 * The overlay: the box or lasso being drawn, and a ring round the point under the cursor.
 * @param {MapState} s
 */
export function drawOverlay(s) {
  const ctx = context(s.ui.overlay);
  const drag = s.drag;
  ctx.setTransform(s.dpr, 0, 0, s.dpr, 0, 0);
  ctx.clearRect(0, 0, s.cssWidth, s.cssHeight);
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = "rgba(30, 30, 30, 0.9)";
  ctx.fillStyle = "rgba(40, 120, 220, 0.12)";
  if (drag && drag.kind === "box") {
    const [x0, y0, x1, y1] = [drag.x0, drag.y0, drag.x, drag.y];
    ctx.fillRect(Math.min(x0, x1), Math.min(y0, y1), Math.abs(x1 - x0), Math.abs(y1 - y0));
    ctx.strokeRect(Math.min(x0, x1), Math.min(y0, y1), Math.abs(x1 - x0), Math.abs(y1 - y0));
  } else if (drag && drag.kind === "lasso" && drag.path.length > 1) {
    ctx.beginPath();
    drag.path.forEach(([px, py], k) => (k ? ctx.lineTo(px, py) : ctx.moveTo(px, py)));
    ctx.closePath();
    ctx.fill();
    ctx.stroke();
  }
  if (s.hoverRow >= 0) {
    const [px, py] = toScreen(s.view, s.xy[2 * s.hoverRow], s.xy[2 * s.hoverRow + 1]);
    ctx.beginPath();
    ctx.arc(px, py, 6, 0, 2 * Math.PI);
    ctx.stroke();
  }
}

/**
 * Stop every frame, timer and sliced job of this view.
 * @param {MapState} s
 */
export function stopDrawing(s) {
  if (s.frame) cancelAnimationFrame(s.frame);
  if (s.quickFrame) cancelAnimationFrame(s.quickFrame);
  if (s.paintJob) s.paintJob.cancel();
  if (s.gridJob) s.gridJob.cancel();
  clearTimeout(s.settle);
}
