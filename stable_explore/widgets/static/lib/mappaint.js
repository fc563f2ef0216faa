// @ts-check
// Drawing the embedding map's points into an ImageData's pixels (viewed as Uint32): the colour of each
// class, faded towards the background while some rows are selected, and a redraw as stages of `sliced`
// (lib/slices.js). Pure passes over typed arrays, tested under node (tests/js/mappaint.test.mjs).
import { labelRgb, packed } from "./colours.js";
import { pointSize } from "./mapview.js";

/** @typedef {import("./colours.js").Rgb} Rgb */
/** @typedef {import("./mapview.js").View} View */
/** @typedef {Uint8Array | Uint16Array | Uint32Array} Codes */
/** @typedef {{full: number, faded: number}} Paint a class's packed pixel, in full colour and faded */
/**
 * @typedef {object} Layer the code of the point drawn last at each pixel (0: background) for one view
 * @property {Uint32Array} cells
 * @property {number} w
 * @property {number} h
 * @property {Codes} codes the points' codes it was drawn from
 * @property {Uint8Array} shown the classes it was drawn with
 * @property {number} dpr
 * @property {View} view
 * @property {boolean} whole every point is in it
 */
/**
 * @typedef {object} Scene what a redraw reads
 * @property {Float32Array} xy x, y pairs
 * @property {Codes} codes label + 1 (0: no label)
 * @property {number} n
 * @property {View} view
 * @property {number} dpr
 * @property {Paint[]} palette
 * @property {Rgb} background
 * @property {Uint8Array} shown by code: 1 = drawn and selectable
 * @property {Int32Array} selectedRows
 * @property {Layer | null} layer
 */

/**
 * A colour faded most of the way to the background (what unselected points look like).
 * @param {Rgb} rgb
 * @param {Rgb} background
 * @returns {Rgb}
 */
export function fadedRgb(rgb, background) {
  return /** @type {Rgb} */ (rgb.map((c, k) => Math.round(0.2 * c + 0.8 * background[k])));
}

/**
 * The packed pixels of ``classes`` classes on ``background``.
 * @param {number} classes
 * @param {Rgb} background
 * @returns {Paint[]}
 */
export function mapPalette(classes, background) {
  return Array.from({ length: classes }, (_, index) => {
    const rgb = labelRgb(index);
    return { full: packed(rgb), faded: packed(fadedRgb(rgb, background)) };
  });
}

/**
 * By code (label + 1): 1 where points are drawn and selectable, 0 for the ``hidden`` classes; codes past
 * the classes (none expected) are drawn, grey, as no label.
 * @param {Iterable<number>} hidden class indices
 * @param {number} classes
 * @returns {Uint8Array}
 */
export function shownCodes(hidden, classes) {
  const shown = new Uint8Array(Math.max(classes + 1, 256)).fill(1);
  for (const index of hidden) if (index >= 0 && index < classes) shown[index + 1] = 0;
  return shown;
}

/**
 * The packed pixel of each code + 1 (0: the background, 1: no label, c + 2: class c), in full colour and
 * faded.
 * @param {Paint[]} palette
 * @param {Rgb} background
 * @returns {{full: Uint32Array, faded: Uint32Array}}
 */
export function colourTables(palette, background) {
  const classes = palette.length;
  const full = new Uint32Array(classes + 2), faded = new Uint32Array(classes + 2);
  full[0] = faded[0] = packed(background);
  full[1] = packed(labelRgb(-1));
  faded[1] = packed(fadedRgb(labelRgb(-1), background));
  for (let c = 0; c < classes; c++) {
    full[c + 2] = palette[c].full;
    faded[c + 2] = palette[c].faded;
  }
  return { full, faded };
}

/**
 * A redraw of ``scene`` into ``target`` (w x ht device pixels) as stages of `sliced`. Every visible
 * point's code goes into the scene's layer (one per pixel, the last point drawn there; 0: background)
 * when ``fresh`` (the layer of this view is not whole yet); then the layer becomes colours (faded when
 * some rows are selected) and the selected rows go on top, in full colour. A new selection in the same
 * view redraws from the layer: no pass over every point. ``direct``: the points' colours straight into
 * ``target``, no layer (a few points, the view moving).
 * @param {Scene} scene
 * @param {Uint32Array} target
 * @param {number} w
 * @param {number} ht
 * @param {boolean} fresh
 * @param {boolean} direct
 * @returns {Array<[number, (from: number, to: number) => void]>}
 */
export function paintStages(scene, target, w, ht, fresh, direct) {
  const { xy, codes, n, view, dpr, selectedRows: rowsOnTop, shown: visible, layer: drawing } = scene;
  const size = pointSize(n, dpr);
  const half = size >> 1;
  const sx = view.sx * dpr, sy = view.sy * dpr, ox = view.ox * dpr - half, oy = view.oy * dpr - half;
  const dim = rowsOnTop.length > 0;
  const { full, faded } = colourTables(scene.palette, scene.background);
  const cells = direct || !drawing ? target : drawing.cells;
  const values = direct ? (dim ? faded : full) : full.map((_, k) => k); // what a point of code c - 1 writes
  /** @type {(i: number, value: number, into: Uint32Array) => void} */
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
  /** @type {(from: number, to: number) => void} */
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
  /** @type {(from: number, to: number) => void} */
  const colour = (from, to) => {
    const table = dim ? faded : full;
    for (let p = from; p < to; p++) target[p] = table[cells[p]];
  };
  /** @type {(from: number, to: number) => void} */
  const selected = (from, to) => {
    for (let k = from; k < to; k++) {
      const i = rowsOnTop[k];
      const code = codes[i];
      if (visible[code]) draw(i, full[code + 1], target);
    }
  };
  /** @type {Array<[number, (from: number, to: number) => void]>} */
  const stages = [];
  if (direct) stages.push([1, () => cells.fill(full[0])], [n, every]);
  else if (fresh) stages.push([1, () => cells.fill(0)], [n, every], [1, () => { if (drawing) drawing.whole = true; }]);
  if (!direct) stages.push([w * ht, colour]);
  stages.push([dim ? rowsOnTop.length : 0, selected]);
  return stages;
}

/**
 * Run ``stages`` to the end at once (a few points, or a test).
 * @param {Array<[number, (from: number, to: number) => void]>} stages
 */
export function runStages(stages) {
  for (const [count, run] of stages) if (count) run(0, count);
}
