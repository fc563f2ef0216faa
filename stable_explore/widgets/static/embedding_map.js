// The embedding map's view: points arrive as one Float32Array (x, y pairs) and one array of label codes
// (Uint8Array below 255 classes: label + 1, 0 = no label); they are drawn into an ImageData (passes over
// typed arrays), found under the cursor through a spatial grid, and selected with a box or a lasso whose
// rows go back as an Int32Array. Above QUICK_ABOVE points a pan or zoom moves the last full frame, and
// the full redraw and the grid are built in slices of a few milliseconds, so no task holds the page.
// User text reaches the page through textContent only, never innerHTML.

import { h, toDataUrl, typedCopy } from "./lib/dom.js";
import { labelRgb, packed } from "./lib/colours.js";
import { SLICE_MS, sliced } from "./lib/slices.js";
import { bounds, boundaryCells, cellX, cellY, collect, forCells, gridStages, lassoTest } from "./lib/spatial.js";
import { requester } from "./lib/requests.js";
import { deadWatch } from "./lib/alive.js";

function cssRgb(element, property, fallback) {
  const probe = document.createElement("canvas");
  probe.width = probe.height = 1;
  const ctx = probe.getContext("2d");
  ctx.fillStyle = fallback;
  ctx.fillStyle = getComputedStyle(element).getPropertyValue(property).trim() || fallback;
  ctx.fillRect(0, 0, 1, 1);
  const d = ctx.getImageData(0, 0, 1, 1).data;
  return [d[0], d[1], d[2]];
}

const QUICK_ABOVE = 150000; // more points than this: pans and zooms move the last frame until the view is still

function render({ model, el }) {
  const root = h("div", { class: "se-map", "data-testid": "se-map", "data-lm-suppress-shortcuts": "true", tabindex: "0" });
  const title = h("div", { class: "se-map-title", "data-testid": "se-map-title" });
  const modes = {};
  const toolbar = h("div", { class: "se-map-toolbar" });
  for (const [mode, label, tip] of [
    ["pan", "pan", "drag to pan, wheel to zoom (shift-drag: box)"],
    ["box", "box", "drag a box to select"],
    ["lasso", "lasso", "draw around points to select"],
  ]) {
    modes[mode] = h("button", { "data-testid": `se-map-mode-${mode}`, title: tip, text: label });
    modes[mode].addEventListener("click", () => { model.set("mode", mode); model.save_changes(); });
    toolbar.append(modes[mode]);
  }
  const reset = h("button", { "data-testid": "se-map-reset", title: "show every point", text: "reset view" });
  const clear = h("button", { "data-testid": "se-map-clear", title: "select nothing (Esc)", text: "clear" });
  const count = h("span", { class: "se-map-count", "data-testid": "se-map-count" });
  const status = h("span", { class: "se-map-status", "data-testid": "se-map-status" });
  toolbar.append(reset, clear, count, status);
  const canvas = h("canvas", { class: "se-map-canvas", "data-testid": "se-map-canvas" });
  const overlay = h("canvas", { class: "se-map-overlay", "data-testid": "se-map-overlay" });
  const tooltip = h("div", { class: "se-map-tooltip", "data-testid": "se-map-tooltip", hidden: "" });
  const tipImage = h("img", { alt: "" });
  const tipText = h("div", { class: "se-map-tip-text" });
  tooltip.append(tipImage, tipText);
  const stage = h("div", { class: "se-map-stage" }, [canvas, overlay, tooltip]);
  const legend = h("div", { class: "se-map-legend", "data-testid": "se-map-legend" });
  const body = h("div", { class: "se-map-body" }, [stage, legend]);
  root.append(title, toolbar, body);
  el.append(root);

  const started = performance.now();
  const requests = requester(model);
  // after a kernel restart the map says so and stops selecting (lib/alive.js, as the browser does)
  const alive = deadWatch(model, root, requests, "the kernel restarted: run the cell again to select on the map", () => {
    drag = null;
    tooltip.hidden = true;
    drawOverlay();
  });
  title.after(alive.note);
  let pageError = ""; // a request the kernel did not answer in time; the kernel's next status replaces it
  let n = 0;
  let xy = new Float32Array(0);
  let codes = new Uint8Array(0); // label + 1 (0: no label), the kernel's narrowest unsigned type
  let grid = null; // built in slices after the first paint (hover and selection need it; drawing does not)
  let gridJob = null;
  let paintJob = null; // a full redraw of many points, in slices
  let paints = 0;
  let layer = null; // the code of the point drawn last at each pixel, for one view (see paintStages)
  let selectionChanged = false; // since the last paint
  let extent = null;
  let selectedCount = 0;
  let hidden = new Set(); // label codes hidden from view (legend clicks)
  let shown = new Uint8Array(1).fill(1); // by label + 1 (0: no label): 1 = drawn and selectable
  let selectedRows = new Int32Array(0);
  let view = { sx: 1, sy: -1, ox: 0, oy: 0 }; // css px = x * sx + ox, y * sy + oy
  let cssWidth = 0, cssHeight = 0, dpr = 1;
  let image = null, pixels = null;
  let frame = 0;
  let quickFrame = 0;
  let settle = 0;
  const snapshot = document.createElement("canvas"); // the last full frame, for quick pans and zooms
  let paintedView = null;
  let painted = false;
  let hoverRow = -1;
  let pendingHover = -1;
  const thumbs = new Map();
  let drag = null;
  let palette = [];
  let background = [255, 255, 255];

  function drawTitle() {
    title.textContent = model.get("title");
    status.textContent = pageError || model.get("status");
  }

  function drawModes() {
    for (const [mode, button] of Object.entries(modes)) button.classList.toggle("se-on", model.get("mode") === mode);
    stage.dataset.mode = model.get("mode");
  }

  function drawCount() {
    count.textContent = `${selectedCount.toLocaleString()} of ${n.toLocaleString()} selected`;
    count.dataset.count = String(selectedCount);
  }

  function drawLegend() {
    const names = model.get("class_names") || [];
    const counts = model.get("label_counts") || [];
    legend.replaceChildren();
    legend.hidden = !names.length;
    names.forEach((name, index) => {
      const rgb = labelRgb(index);
      const item = h("button", { class: "se-map-key" + (hidden.has(index) ? " se-off" : ""), "data-class": String(index),
        "data-rgb": rgb.join(","), title: "show or hide this class" });
      const swatch = h("span", { class: "se-map-swatch" });
      swatch.style.background = `rgb(${rgb.join(",")})`;
      item.append(swatch, h("span", { class: "se-map-name", text: name }),
        h("span", { class: "se-map-num", text: (counts[index] ?? 0).toLocaleString() }));
      item.addEventListener("click", () => {
        if (hidden.has(index)) hidden.delete(index); else hidden.add(index);
        makeShown();
        drawLegend();
        schedule();
      });
      legend.append(item);
    });
  }

  function resize() {
    dpr = window.devicePixelRatio || 1;
    cssWidth = Math.max(200, stage.clientWidth || 600);
    cssHeight = Math.max(200, stage.clientHeight || 480);
    for (const c of [canvas, overlay]) {
      c.width = Math.round(cssWidth * dpr);
      c.height = Math.round(cssHeight * dpr);
      c.style.width = `${cssWidth}px`;
      c.style.height = `${cssHeight}px`;
    }
    image = canvas.getContext("2d").createImageData(canvas.width, canvas.height);
    pixels = new Uint32Array(image.data.buffer);
  }

  function fit() {
    if (!extent) return;
    const pad = 12;
    const scale = Math.min((cssWidth - 2 * pad) / extent.width, (cssHeight - 2 * pad) / extent.height);
    view = {
      sx: scale, sy: -scale,
      ox: cssWidth / 2 - scale * (extent.minX + extent.width / 2),
      oy: cssHeight / 2 + scale * (extent.minY + extent.height / 2),
    };
  }

  function toData(px, py) {
    return [(px - view.ox) / view.sx, (py - view.oy) / view.sy];
  }

  function publishView() {
    canvas.dataset.view = JSON.stringify(view);
  }

  function makeShown() {
    // by code (label + 1); codes past the names (none expected) are drawn grey, as no label
    shown = new Uint8Array(Math.max(palette.length + 1, 256)).fill(1);
    for (const index of hidden) if (index >= 0 && index < palette.length) shown[index + 1] = 0;
  }

  function paintStages(target, w, ht, fresh, direct) {
    // a redraw as stages of `sliced`. Every visible point's code goes into `layer` (one per pixel, the
    // last point drawn there; 0: background) unless the layer of this view is whole already; then the
    // layer becomes colours (faded when some rows are selected) and the selected rows go on top, in full
    // colour. A new selection in the same view redraws from the layer: no pass over every point.
    // `direct`: the points' colours straight into `target`, no layer (a few points, the view moving).
    const size = Math.max(1, Math.round((n > 200000 ? 1 : n > 20000 ? 2 : n > 2000 ? 3 : 5) * dpr));
    const half = size >> 1;
    const sx = view.sx * dpr, sy = view.sy * dpr, ox = view.ox * dpr - half, oy = view.oy * dpr - half;
    const dim = selectedCount > 0;
    const classes = palette.length;
    const full = new Uint32Array(classes + 2), faded = new Uint32Array(classes + 2);
    full[0] = faded[0] = packed(background);
    full[1] = packed(labelRgb(-1));
    faded[1] = packed(labelRgb(-1).map((c, k) => Math.round(0.2 * c + 0.8 * background[k])));
    for (let c = 0; c < classes; c++) {
      full[c + 2] = palette[c].full;
      faded[c + 2] = palette[c].faded;
    }
    const visible = shown, rowsOnTop = selectedRows, drawing = layer;
    const cells = direct ? target : layer.cells;
    const values = direct ? (dim ? faded : full) : full.map((_, k) => k); // what a point of code c - 1 writes
    const draw = (i, value, into) => {
      const px = Math.floor(xy[2 * i] * sx + ox);
      const py = Math.floor(xy[2 * i + 1] * sy + oy);
      if (px + size <= 0 || py + size <= 0 || px >= w || py >= ht) return;
      const x0 = px < 0 ? 0 : px, x1 = px + size > w ? w : px + size;
      const y1 = py + size > ht ? ht : py + size;
      for (let y = py < 0 ? 0 : py; y < y1; y++) {
        const row = y * w;
        for (let x = x0; x < x1; x++) into[row + x] = value;
      }
    };
    const every = (from, to) => {
      // typed arrays only, no allocation; single pixels inline (the case of a million points)
      for (let i = from; i < to; i++) {
        const code = codes[i];
        if (!visible[code]) continue;
        if (size === 1) {
          const px = Math.floor(xy[2 * i] * sx + ox), py = Math.floor(xy[2 * i + 1] * sy + oy);
          if (px >= 0 && px < w && py >= 0 && py < ht) cells[py * w + px] = values[code + 1];
        } else {
          draw(i, values[code + 1], cells);
        }
      }
    };
    const colour = (from, to) => {
      const table = dim ? faded : full;
      for (let p = from; p < to; p++) target[p] = table[cells[p]];
    };
    const selected = (from, to) => {
      for (let k = from; k < to; k++) {
        const i = rowsOnTop[k];
        const code = codes[i];
        if (visible[code]) draw(i, full[code + 1], target);
      }
    };
    const stages = [];
    if (direct) stages.push([1, () => cells.fill(full[0])], [n, every]);
    else if (fresh) stages.push([1, () => cells.fill(0)], [n, every], [1, () => { drawing.whole = true; }]);
    if (!direct) stages.push([w * ht, colour]);
    stages.push([dim ? rowsOnTop.length : 0, selected]);
    return stages;
  }

  function sameView(a, b) {
    return a.sx === b.sx && a.sy === b.sy && a.ox === b.ox && a.oy === b.oy;
  }

  function paintDone(work, drawnView) {
    // a full frame is on the canvas: keep it for quick pans and zooms, and say so on the canvas
    canvas.getContext("2d").putImageData(image, 0, 0);
    if (n > QUICK_ABOVE) {
      snapshot.width = canvas.width;
      snapshot.height = canvas.height;
      snapshot.getContext("2d").drawImage(canvas, 0, 0);
    }
    paintedView = drawnView;
    canvas.dataset.paintedView = JSON.stringify(drawnView); // the view of the pixels now on the canvas
    canvas.dataset.paintMs = work.toFixed(1);
    canvas.dataset.paints = String(++paints);
    delete canvas.dataset.quick;
    publishView();
    if (!painted && n) {
      painted = true;
      canvas.dataset.firstPaintMs = (performance.now() - started).toFixed(1);
      canvas.dataset.ready = `points-${n}`;
      buildGrid();
    }
  }

  function buildGrid() {
    // after the first paint, in slices: hover and selection need it, drawing does not
    const begun = performance.now();
    gridJob = sliced(gridStages(xy, codes, n, extent, (made) => { grid = made; }), (work) => {
      gridJob = null;
      canvas.dataset.gridMs = work.toFixed(1);
      canvas.dataset.gridWallMs = (performance.now() - begun).toFixed(1);
      canvas.dataset.grid = "ready";
    });
  }

  function paint() {
    if (frame) cancelAnimationFrame(frame); // called directly, it replaces the frame asked for
    frame = 0;
    if (quickFrame) cancelAnimationFrame(quickFrame);
    quickFrame = 0;
    if (paintJob) paintJob.cancel();
    paintJob = null;
    if (!pixels) return;
    const drawnView = { ...view };
    const w = canvas.width, ht = canvas.height;
    const fresh = !(layer && layer.whole && layer.w === w && layer.h === ht && layer.codes === codes &&
      layer.shown === shown && layer.dpr === dpr && sameView(layer.view, drawnView));
    // few points and no new selection (a pan or zoom frame): draw them straight, the layer waits
    const direct = fresh && n <= QUICK_ABOVE && !selectionChanged;
    selectionChanged = false;
    if (direct) {
      layer = null;
    } else if (fresh) {
      const cells = layer && layer.cells.length === w * ht ? layer.cells : new Uint32Array(w * ht);
      layer = { cells, w, h: ht, codes, shown, dpr, view: drawnView, whole: false };
    }
    const stages = paintStages(pixels, w, ht, fresh, direct);
    if (n <= QUICK_ABOVE) {
      // few points: the whole frame at once, within this animation frame
      const t0 = performance.now();
      for (const [count, run] of stages) if (count) run(0, count);
      paintDone(performance.now() - t0, drawnView);
      return;
    }
    // many points: in slices, the last frame (or its quick move) staying on screen until this one is whole
    // (a new selection in this view, no pass over every point: at once, in this frame, unless the
    // selection is so large that its own pass would hold the page)
    const begun = performance.now();
    const target = pixels;
    const job = sliced(stages, (work) => {
      paintJob = null;
      if (target !== pixels) return; // resized meanwhile: the next frame draws again
      canvas.dataset.paintWallMs = (performance.now() - begun).toFixed(1);
      canvas.dataset.paintFresh = String(fresh);
      paintDone(work, drawnView);
    }, fresh ? 0 : selectedCount > QUICK_ABOVE * 2 ? 2 * SLICE_MS : Infinity);
    paintJob = job.running ? job : null;
  }

  function schedule() {
    if (!frame) frame = requestAnimationFrame(paint);
  }

  function quick() {
    // while panning or zooming many points: move and scale the last full frame (one drawImage), and
    // draw every point again once the view has been still for a moment
    quickFrame = 0;
    if (frame || !paintedView) return;
    if (paintJob) paintJob.cancel(); // its view is out of date
    paintJob = null;
    const t0 = performance.now();
    const ctx = canvas.getContext("2d");
    const k = view.sx / paintedView.sx;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = `rgb(${background.join(",")})`;
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(snapshot, (view.ox - paintedView.ox * k) * dpr, (view.oy - paintedView.oy * k) * dpr,
      canvas.width * k, canvas.height * k);
    canvas.dataset.paintMs = (performance.now() - t0).toFixed(1);
    canvas.dataset.quick = "1";
    publishView();
  }

  function moved() {
    if (n <= QUICK_ABOVE || !paintedView) {
      schedule();
      return;
    }
    if (paintJob) paintJob.cancel();
    paintJob = null;
    if (!quickFrame && !frame) quickFrame = requestAnimationFrame(quick);
    clearTimeout(settle);
    settle = setTimeout(schedule, 150);
  }

  function makePalette() {
    background = cssRgb(root, "--se-map-bg", "#ffffff");
    const names = model.get("class_names") || [];
    palette = names.map((_, index) => {
      const rgb = labelRgb(index);
      return { full: packed(rgb), faded: packed(rgb.map((c, k) => Math.round(0.2 * c + 0.8 * background[k]))) };
    });
    makeShown();
  }

  // --- the overlay: the box or lasso being drawn, and the point under the cursor ------------------
  function drawOverlay() {
    const ctx = overlay.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssWidth, cssHeight);
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
    if (hoverRow >= 0) {
      const px = xy[2 * hoverRow] * view.sx + view.ox, py = xy[2 * hoverRow + 1] * view.sy + view.oy;
      ctx.beginPath();
      ctx.arc(px, py, 6, 0, 2 * Math.PI);
      ctx.stroke();
    }
  }

  // --- selection ----------------------------------------------------------------------------------
  function setSelection(rows) {
    // the selected rows, in row order (drawn on top of the others, which fade)
    let inRange = true;
    for (let k = 0; k < rows.length && inRange; k++) inRange = rows[k] >= 0 && rows[k] < n;
    selectedRows = inRange ? rows : rows.filter((row) => row >= 0 && row < n);
    selectedCount = selectedRows.length;
    selectionChanged = true;
    drawCount();
    schedule();
  }

  function sendSelection(rows, shape, ms) {
    canvas.dataset.selectMs = ms.toFixed(1);
    count.dataset.shape = shape.kind;  // what the page selected last (box, lasso, clear), for tests to wait on
    requests.request("select", { shape }, [rows.buffer]).then(({ response }) => sayError(response));
  }

  function selectCells(x0, y0, x1, y1, classify, test) {
    // classify(cx, cy): 0 = no row of the cell is chosen, 1 = every row is, 2 = test each row
    const chosen = new Uint8Array(n);
    if (x1 < grid.minX || x0 > grid.maxX || y1 < grid.minY || y0 > grid.maxY) return chosen;
    const cx0 = cellX(grid, x0), cx1 = cellX(grid, x1), cy0 = cellY(grid, y0), cy1 = cellY(grid, y1);
    for (let cy = cy0; cy <= cy1; cy++) {
      for (let cx = cx0; cx <= cx1; cx++) {
        const kind = classify(cx, cy);
        if (!kind) continue;
        const cell = cy * grid.side + cx;
        const cellXY = grid.xy, cellCodes = grid.codes, order = grid.order;
        for (let k = grid.start[cell], end = grid.start[cell + 1]; k < end; k++) {
          if (!shown[cellCodes[k]]) continue;
          if (kind === 1 || test(cellXY[2 * k], cellXY[2 * k + 1])) chosen[order[k]] = 1;
        }
      }
    }
    return chosen;
  }

  function needGrid() {
    // a selection made before the sliced grid is whole finishes it at once
    if (!grid && gridJob) gridJob.finish();
    return grid !== null;
  }

  function selectBox(ax, ay, bx, by) {
    if (!needGrid()) return;
    const t0 = performance.now();
    const [dx0, dy0] = toData(ax, ay);
    const [dx1, dy1] = toData(bx, by);
    const x0 = Math.min(dx0, dx1), x1 = Math.max(dx0, dx1), y0 = Math.min(dy0, dy1), y1 = Math.max(dy0, dy1);
    const cx0 = cellX(grid, x0), cx1 = cellX(grid, x1), cy0 = cellY(grid, y0), cy1 = cellY(grid, y1);
    const classify = (cx, cy) => (cx > cx0 && cx < cx1 && cy > cy0 && cy < cy1 ? 1 : 2);
    const chosen = selectCells(x0, y0, x1, y1, classify, (x, y) => x >= x0 && x <= x1 && y >= y0 && y <= y1);
    const rows = collect(chosen, n);
    setSelection(rows);
    sendSelection(rows, { kind: "box", x0, y0, x1, y1 }, performance.now() - t0);
  }

  function selectLasso(path) {
    if (!needGrid()) return;
    const t0 = performance.now();
    const polygon = path.map(([px, py]) => toData(px, py));
    const lasso = lassoTest(polygon);
    const boundary = boundaryCells(grid, polygon);
    const classify = (cx, cy) => {
      if (boundary[cy * grid.side + cx]) return 2;
      const centreX = grid.minX + (cx + 0.5) / grid.scaleX, centreY = grid.minY + (cy + 0.5) / grid.scaleY;
      return lasso.inside(centreX, centreY) ? 1 : 0;
    };
    const chosen = selectCells(lasso.x0, lasso.y0, lasso.x1, lasso.y1, classify, lasso.inside);
    const rows = collect(chosen, n);
    setSelection(rows);
    sendSelection(rows, { kind: "lasso", points: polygon }, performance.now() - t0);
  }

  function nearest(px, py, radius = 8) {
    if (!grid || !n) return -1;
    const [x, y] = toData(px, py);
    const r = radius / Math.abs(view.sx);
    let best = -1, bestD = r * r;
    forCells(grid, x - r, y - r, x + r, y + r, (i, k) => {
      if (!shown[grid.codes[k]]) return;
      const dx = grid.xy[2 * k] - x, dy = grid.xy[2 * k + 1] - y;
      const d = dx * dx + dy * dy;
      if (d <= bestD) { bestD = d; best = i; }
    });
    return best;
  }

  // --- hover: the row's thumbnail, from the kernel ---------------------------------------------
  function showTip(row, px, py) {
    const entry = thumbs.get(row);
    const names = model.get("class_names") || [];
    if (!entry) { tooltip.hidden = true; return; }
    tipText.textContent = `row ${row} · ${entry.key}` + (entry.label >= 0 && names[entry.label] ? ` · ${names[entry.label]}` : "");
    if (entry.url) {
      tipImage.src = entry.url;
      tipImage.hidden = false;
    } else {
      tipImage.hidden = true;
    }
    tooltip.dataset.row = String(row);
    tooltip.hidden = false;
    const left = px + 16 + 160 > cssWidth ? px - 176 : px + 16;
    tooltip.style.left = `${Math.max(0, left)}px`;
    tooltip.style.top = `${Math.max(0, Math.min(py + 12, cssHeight - 140))}px`;
  }

  function hover(px, py) {
    const row = nearest(px, py);
    if (row !== hoverRow) {
      hoverRow = row;
      drawOverlay();
    }
    if (row < 0) { tooltip.hidden = true; return; }
    if (thumbs.has(row)) showTip(row, px, py);
    else if (pendingHover !== row) {
      pendingHover = row;
      requests.request("hover", { row }).then(({ response, buffers }) => onThumb(response, buffers));
    }
    stage.dataset.hoverX = String(px);
    stage.dataset.hoverY = String(py);
  }

  // --- mouse --------------------------------------------------------------------------------------
  function local(event) {
    const box = overlay.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  }

  overlay.addEventListener("pointerdown", (event) => {
    if (event.button !== 0 || alive.dead) return;
    root.focus({ preventScroll: true });
    const [px, py] = local(event);
    const mode = event.shiftKey ? "box" : model.get("mode");
    try {
      overlay.setPointerCapture(event.pointerId); // keep the drag when the cursor leaves the canvas
    } catch (error) {
      // a synthetic event's pointer cannot be captured; the drag still works inside the canvas
    }
    if (mode === "box") drag = { kind: "box", x0: px, y0: py, x: px, y: py };
    else if (mode === "lasso") drag = { kind: "lasso", path: [[px, py]] };
    else drag = { kind: "pan", x: px, y: py, moved: false };
    tooltip.hidden = true;
  });

  overlay.addEventListener("pointermove", (event) => {
    const [px, py] = local(event);
    if (!drag) { hover(px, py); return; }
    if (drag.kind === "pan") {
      view.ox += px - drag.x;
      view.oy += py - drag.y;
      drag.moved = drag.moved || Math.abs(px - drag.x) + Math.abs(py - drag.y) > 0;
      drag.x = px;
      drag.y = py;
      moved();
      drawOverlay();
    } else if (drag.kind === "box") {
      drag.x = px;
      drag.y = py;
      drawOverlay();
    } else {
      const [lx, ly] = drag.path[drag.path.length - 1];
      if (Math.abs(px - lx) + Math.abs(py - ly) >= 3 && drag.path.length < 4000) drag.path.push([px, py]);
      drawOverlay();
    }
  });

  overlay.addEventListener("pointerup", (event) => {
    if (!drag) return;
    const [px, py] = local(event);
    const done = drag;
    drag = null;
    if (done.kind === "box") {
      if (Math.abs(px - done.x0) + Math.abs(py - done.y0) > 2) selectBox(done.x0, done.y0, px, py);
    } else if (done.kind === "lasso") {
      done.path.push([px, py]);
      if (done.path.length >= 3) selectLasso(done.path);
    }
    drawOverlay();
  });

  overlay.addEventListener("dblclick", (event) => {
    const [px, py] = local(event);
    const row = alive.dead ? -1 : nearest(px, py);
    if (row >= 0) requests.request("similar", { row }).then(({ response }) => sayError(response));
  });

  overlay.addEventListener("pointerleave", () => {
    if (drag) return;
    hoverRow = -1;
    tooltip.hidden = true;
    drawOverlay();
  });

  overlay.addEventListener("wheel", (event) => {
    event.preventDefault();
    const [px, py] = local(event);
    const factor = Math.exp(-event.deltaY * (event.deltaMode === 1 ? 0.05 : 0.0015));
    view.ox = px - (px - view.ox) * factor;
    view.oy = py - (py - view.oy) * factor;
    view.sx *= factor;
    view.sy *= factor;
    moved();
    drawOverlay();
  }, { passive: false });

  root.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !alive.dead) {
      setSelection(new Int32Array(0));
      sendSelection(new Int32Array(0), { kind: "clear" }, 0);
    }
  });
  reset.addEventListener("click", () => { fit(); schedule(); drawOverlay(); });
  clear.addEventListener("click", () => {
    setSelection(new Int32Array(0));
    sendSelection(new Int32Array(0), { kind: "clear" }, 0);
  });

  // --- messages from the kernel -------------------------------------------------------------------
  function onMessage(message, buffers) {
    // a reply to "ready", or the kernel's own push: the points, or a selection made in code
    if (message.type === "points") {
      const t0 = performance.now();
      const raw = buffers[0];
      xy = typedCopy(Float32Array, raw);
      const lab = buffers[1];
      const Codes = { uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array }[message.codes] || Uint8Array;
      codes = typedCopy(Codes, lab);
      n = message.count;
      extent = bounds(xy, n);
      grid = null;
      if (gridJob) gridJob.cancel();
      gridJob = null;
      painted = false;
      const sel = buffers[2];
      const rows = typedCopy(Int32Array, sel);
      canvas.dataset.pointsBytes = String(buffers.reduce((sum, b) => sum + b.byteLength, 0));
      canvas.dataset.arrivedMs = (t0 - started).toFixed(1);
      resize();
      fit();
      setSelection(rows);
      paint();
      canvas.dataset.decodeMs = (performance.now() - t0).toFixed(1);
    } else if (message.type === "selection") {
      const sel = buffers[0];
      setSelection(typedCopy(Int32Array, sel));
    }
  }

  function onThumb(message, buffers) {
    if (message.type !== "thumb") { sayError(message); pendingHover = -1; return; }
    const entry = { key: message.key, label: message.label, url: null };
    if (buffers.length && message.mime) entry.url = toDataUrl(buffers[0], message.mime);
    thumbs.set(message.row, entry);
    if (thumbs.size > 2000) thumbs.delete(thumbs.keys().next().value);
    if (pendingHover === message.row) pendingHover = -1;
    if (hoverRow === message.row) {
      showTip(message.row, Number(stage.dataset.hoverX || 0), Number(stage.dataset.hoverY || 0));
    }
  }

  function sayError(response) {
    // the kernel's errors reach the status line through the model; a request it never answered is said here
    if (response && response.timeout) {
      pageError = response.message;
      drawTitle();
    }
  }

  function onCustom(message, buffers) {
    if (!requests.receive(message, buffers)) onMessage(message, buffers);
  }

  const observer = new ResizeObserver(() => {
    const before = cssWidth;
    if (!n) return;
    resize();
    if (before === 0) fit();
    schedule();
    drawOverlay();
  });
  observer.observe(stage);

  model.on("msg:custom", onCustom);
  model.on("change:title", drawTitle);
  const onStatus = () => { pageError = ""; drawTitle(); };
  model.on("change:status", onStatus);
  model.on("change:mode", drawModes);
  const onClasses = () => { makePalette(); drawLegend(); schedule(); };
  model.on("change:class_names", onClasses);
  model.on("change:label_counts", drawLegend);
  // JupyterLab's theme switch changes the page's CSS variables in place: repaint on the new background
  const themeWatch = new MutationObserver(() => { onClasses(); });
  themeWatch.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light"] });

  drawTitle();
  drawModes();
  makePalette();
  drawLegend();
  drawCount();
  requests.request("ready").then(({ response, buffers }) => onMessage(response, buffers));

  return () => {
    observer.disconnect();
    themeWatch.disconnect();
    if (frame) cancelAnimationFrame(frame);
    if (quickFrame) cancelAnimationFrame(quickFrame);
    if (paintJob) paintJob.cancel();
    if (gridJob) gridJob.cancel();
    clearTimeout(settle);
    model.off("msg:custom", onCustom);
    alive.dispose();
    requests.close({ type: "closed" });
    model.off("change:title", drawTitle);
    model.off("change:status", onStatus);
    model.off("change:mode", drawModes);
    model.off("change:class_names", onClasses);
    model.off("change:label_counts", drawLegend);
  };
}

export default { render };
