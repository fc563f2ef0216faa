// @ts-check
// The map and the kernel: the points (and a selection made in code) come from it, a box or lasso
// selection goes to it as an Int32Array of rows, hovering asks it for the row's thumbnail and a
// double click for similar rows. A request it did not answer in time is said on the status line.
import { toDataUrl, typedCopy } from "../lib/dom.js";
import { toData } from "../lib/mapview.js";
import { boxRows, lassoRows, nearestRow, rowsInRange } from "../lib/mapselect.js";
import { codesType, keepThumb, tipLine, tipPlace } from "../lib/maptext.js";
import { bounds } from "../lib/spatial.js";
import { drawOverlay, fit, paint, resize, schedule } from "./canvas.js";
import { drawCount } from "./legend.js";

/** @typedef {import("./state.js").MapState} MapState */


/**
 * The selected rows, in row order (drawn on top of the others, which fade).
 * @param {MapState} s
 * @param {Int32Array} rows
 */
export function setSelection(s, rows) {
  s.selectedRows = rowsInRange(rows, s.n);
  s.selectionChanged = true;
  drawCount(s);
  schedule(s);
}

/**
 * Tell the kernel what the page selected.
 * @param {MapState} s
 * @param {Int32Array} rows
 * @param {{kind: string, [key: string]: unknown}} shape
 * @param {number} ms
 */
function sendSelection(s, rows, shape, ms) {
  s.ui.canvas.dataset.selectMs = ms.toFixed(1);
  s.ui.count.dataset.shape = shape.kind; // what the page selected last (box, lasso, clear), for tests to wait on
  s.requests.request("select", { shape }, [/** @type {ArrayBuffer} */ (rows.buffer)]).then(({ response }) => s.statusText.say(response));
}

/**
 * Select nothing, here and in the kernel.
 * @param {MapState} s
 */
export function clearSelection(s) {
  setSelection(s, new Int32Array(0));
  sendSelection(s, new Int32Array(0), { kind: "clear" }, 0);
}

/**
 * The grid; a selection made before the sliced grid is whole finishes it at once.
 * @param {MapState} s
 */
function needGrid(s) {
  if (!s.grid && s.gridJob) s.gridJob.finish();
  return s.grid;
}

/**
 * Select the rows in the box between two CSS pixels.
 * @param {MapState} s
 * @param {number} ax
 * @param {number} ay
 * @param {number} bx
 * @param {number} by
 */
export function selectBox(s, ax, ay, bx, by) {
  const grid = needGrid(s);
  if (!grid) return;
  const t0 = performance.now();
  const [dx0, dy0] = toData(s.view, ax, ay);
  const [dx1, dy1] = toData(s.view, bx, by);
  const { rows, box } = boxRows(grid, s.n, s.shown, dx0, dy0, dx1, dy1);
  setSelection(s, rows);
  sendSelection(s, rows, { kind: "box", ...box }, performance.now() - t0);
}

/**
 * Select the rows inside a lasso drawn through CSS pixels.
 * @param {MapState} s
 * @param {Array<[number, number]>} path
 */
export function selectLasso(s, path) {
  const grid = needGrid(s);
  if (!grid) return;
  const t0 = performance.now();
  const polygon = path.map(([px, py]) => toData(s.view, px, py));
  const rows = lassoRows(grid, s.n, s.shown, polygon);
  setSelection(s, rows);
  sendSelection(s, rows, { kind: "lasso", points: polygon }, performance.now() - t0);
}

/**
 * The shown row drawn nearest CSS pixel (px, py), within ``radius`` CSS pixels, or -1.
 * @param {MapState} s
 * @param {number} px
 * @param {number} py
 * @param {number} [radius]
 */
export function nearest(s, px, py, radius = 8) {
  if (!s.grid || !s.n) return -1;
  const [x, y] = toData(s.view, px, py);
  return nearestRow(s.grid, s.shown, x, y, radius / Math.abs(s.view.sx));
}

/**
 * The tooltip of ``row`` at CSS pixel (px, py), if its thumbnail is here.
 * @param {MapState} s
 * @param {number} row
 * @param {number} px
 * @param {number} py
 */
function showTip(s, row, px, py) {
  const { tooltip, tipImage, tipText } = s.ui;
  const entry = s.thumbs.get(row);
  if (!entry) { tooltip.hidden = true; return; }
  tipText.textContent = tipLine(row, entry, s.model.get("class_names") || []);
  if (entry.url) {
    tipImage.src = entry.url;
    tipImage.hidden = false;
  } else {
    tipImage.hidden = true;
  }
  tooltip.dataset.row = String(row);
  tooltip.hidden = false;
  const { left, top } = tipPlace(px, py, s.cssWidth, s.cssHeight);
  tooltip.style.left = `${left}px`;
  tooltip.style.top = `${top}px`;
}

/**
 * The kernel's thumbnail of a row (or its error).
 * @param {MapState} s
 * @param {any} message
 * @param {DataView[]} buffers
 */
function onThumb(s, message, buffers) {
  if (message.type !== "thumb") { s.statusText.say(message); s.pendingHover = -1; return; }
  /** @type {import("../lib/maptext.js").Thumb} */
  const entry = { key: message.key, label: message.label, url: null };
  if (buffers.length && message.mime) entry.url = toDataUrl(buffers[0], message.mime);
  keepThumb(s.thumbs, message.row, entry);
  if (s.pendingHover === message.row) s.pendingHover = -1;
  if (s.hoverRow === message.row) {
    showTip(s, message.row, Number(s.ui.stage.dataset.hoverX || 0), Number(s.ui.stage.dataset.hoverY || 0));
  }
}

/**
 * The cursor is at CSS pixel (px, py) with no drag: ring the nearest point and show its thumbnail,
 * asking the kernel for it the first time.
 * @param {MapState} s
 * @param {number} px
 * @param {number} py
 */
export function hover(s, px, py) {
  const row = nearest(s, px, py);
  if (row !== s.hoverRow) {
    s.hoverRow = row;
    drawOverlay(s);
  }
  if (row < 0) { s.ui.tooltip.hidden = true; return; }
  if (s.thumbs.has(row)) showTip(s, row, px, py);
  else if (s.pendingHover !== row) {
    s.pendingHover = row;
    s.requests.request("hover", { row }).then(({ response, buffers }) => onThumb(s, response, buffers));
  }
  s.ui.stage.dataset.hoverX = String(px);
  s.ui.stage.dataset.hoverY = String(py);
}

/**
 * Ask the kernel for the rows similar to the one under CSS pixel (px, py).
 * @param {MapState} s
 * @param {number} px
 * @param {number} py
 */
export function similar(s, px, py) {
  const row = s.alive.dead ? -1 : nearest(s, px, py);
  if (row >= 0) s.requests.request("similar", { row }).then(({ response }) => s.statusText.say(response));
}

/**
 * A reply to "ready", or the kernel's own push: the points, or a selection made in code.
 * @param {MapState} s
 * @param {any} message
 * @param {DataView[]} buffers
 */
export function onMessage(s, message, buffers) {
  const { canvas } = s.ui;
  if (message.type === "points") {
    const t0 = performance.now();
    s.xy = typedCopy(Float32Array, buffers[0]);
    s.codes = typedCopy(codesType(message.codes), buffers[1]);
    s.n = message.count;
    s.extent = bounds(s.xy, s.n);
    s.grid = null;
    if (s.gridJob) s.gridJob.cancel();
    s.gridJob = null;
    s.painted = false;
    const rows = typedCopy(Int32Array, buffers[2]);
    canvas.dataset.pointsBytes = String(buffers.reduce((sum, b) => sum + b.byteLength, 0));
    canvas.dataset.arrivedMs = (t0 - s.started).toFixed(1);
    resize(s);
    fit(s);
    setSelection(s, rows);
    paint(s);
    canvas.dataset.decodeMs = (performance.now() - t0).toFixed(1);
  } else if (message.type === "selection") {
    setSelection(s, typedCopy(Int32Array, buffers[0]));
  }
}
