// @ts-check
// One view of the embedding map: its elements, and everything it holds (one object the map's modules
// share, made per view: two views of one model on a page share nothing).
import { deadWatch } from "../lib/alive.js";
import { h } from "../lib/dom.js";
import { statusLine } from "../lib/model.js";
import { requester } from "../lib/requests.js";

/** @typedef {import("../lib/spatial.js").Grid} Grid */
/** @typedef {import("../lib/spatial.js").Box} Box */
/** @typedef {import("../lib/mapview.js").View} View */
/** @typedef {import("../lib/mappaint.js").Layer} Layer */
/** @typedef {import("../lib/mappaint.js").Paint} Paint */
/** @typedef {import("../lib/mappaint.js").Codes} Codes */
/** @typedef {import("../lib/maptext.js").Thumb} Thumb */
/** @typedef {import("../lib/colours.js").Rgb} Rgb */
/** @typedef {{cancel(): void, finish(): void, readonly running: boolean}} Job */
/**
 * @typedef {{kind: "box", x0: number, y0: number, x: number, y: number}
 *   | {kind: "lasso", path: Array<[number, number]>}
 *   | {kind: "pan", x: number, y: number, moved: boolean}} Drag
 */
/** @typedef {import("../lib/model.js").AnyModel} Model */
/** @typedef {ReturnType<typeof mapElements>} Elements */
/** @typedef {ReturnType<typeof mapState>} MapState */

/**
 * The map's elements, appended to ``el``: a title, a toolbar (modes, reset, clear, count, status), the
 * stage (points canvas, overlay canvas, tooltip) and the legend.
 * @param {HTMLElement} el
 */
export function mapElements(el) {
  const root = h("div", { class: "se-map", "data-testid": "se-map", "data-lm-suppress-shortcuts": "true", tabindex: "0" });
  const title = h("div", { class: "se-map-title", "data-testid": "se-map-title" });
  /** @type {Record<string, HTMLElement>} */
  const modes = {};
  const toolbar = h("div", { class: "se-map-toolbar" });
  for (const [mode, label, tip] of [
    ["pan", "pan", "drag to pan, wheel to zoom (shift-drag: box)"],
    ["box", "box", "drag a box to select"],
    ["lasso", "lasso", "draw around points to select"],
  ]) {
    modes[mode] = h("button", { "data-testid": `se-map-mode-${mode}`, title: tip, text: label });
    toolbar.append(modes[mode]);
  }
  const reset = h("button", { "data-testid": "se-map-reset", title: "show every point", text: "reset view" });
  const clear = h("button", { "data-testid": "se-map-clear", title: "select nothing (Esc)", text: "clear" });
  const count = h("span", { class: "se-map-count", "data-testid": "se-map-count" });
  const status = h("span", { class: "se-map-status", "data-testid": "se-map-status" });
  toolbar.append(reset, clear, count, status);
  const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", { class: "se-map-canvas", "data-testid": "se-map-canvas" }));
  const overlay = /** @type {HTMLCanvasElement} */ (h("canvas", { class: "se-map-overlay", "data-testid": "se-map-overlay" }));
  const tooltip = h("div", { class: "se-map-tooltip", "data-testid": "se-map-tooltip", hidden: "" });
  const tipImage = /** @type {HTMLImageElement} */ (h("img", { alt: "" }));
  const tipText = h("div", { class: "se-map-tip-text" });
  tooltip.append(tipImage, tipText);
  const stage = h("div", { class: "se-map-stage" }, [canvas, overlay, tooltip]);
  const legend = h("div", { class: "se-map-legend", "data-testid": "se-map-legend" });
  const body = h("div", { class: "se-map-body" }, [stage, legend]);
  root.append(title, toolbar, body);
  el.append(root);
  return { root, title, modes, reset, clear, count, status, canvas, overlay, tooltip, tipImage, tipText, stage, legend };
}

/**
 * A fresh view's state: no points yet, nothing selected, nothing hidden. Its requests to the kernel
 * settle at once when the kernel goes (lib/alive.js, as in the browser): the map says so, stops
 * selecting, and ``onDead`` runs.
 * @param {Model} model
 * @param {Elements} ui
 * @param {() => void} onDead
 */
export function mapState(model, ui, onDead) {
  const requests = requester(model);
  const alive = deadWatch(model, ui.root, requests, "the kernel restarted: run the cell again to select on the map", onDead);
  ui.title.after(alive.note);
  return {
    model,
    ui,
    requests,
    alive,
    statusText: statusLine(model, ui.status), // the kernel's status, or a request it did not answer in time
    started: performance.now(),
    n: 0,
    /** @type {Float32Array} x, y pairs */
    xy: new Float32Array(0),
    /** @type {Codes} label + 1 (0: no label), the kernel's narrowest unsigned type */
    codes: new Uint8Array(0),
    /** @type {Grid | null} built in slices after the first paint (hover and selection need it; drawing does not) */
    grid: null,
    /** @type {Job | null} */
    gridJob: null,
    /** @type {Job | null} a full redraw of many points, in slices */
    paintJob: null,
    paints: 0,
    /** @type {Layer | null} the code of the point drawn last at each pixel, for one view (lib/mappaint.js) */
    layer: null,
    selectionChanged: false, // since the last paint
    /** @type {Box | null} */
    extent: null,
    /** @type {Set<number>} label codes hidden from view (legend clicks) */
    hidden: new Set(),
    /** @type {Uint8Array} by label + 1 (0: no label): 1 = drawn and selectable */
    shown: new Uint8Array(1).fill(1),
    /** @type {Int32Array} in row order */
    selectedRows: new Int32Array(0),
    /** @type {View} css px = x * sx + ox, y * sy + oy */
    view: { sx: 1, sy: -1, ox: 0, oy: 0 },
    cssWidth: 0,
    cssHeight: 0,
    dpr: 1,
    /** @type {ImageData | null} */
    image: null,
    /** @type {Uint32Array | null} */
    pixels: null,
    frame: 0,
    quickFrame: 0,
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    settle: undefined,
    snapshot: document.createElement("canvas"), // the last full frame, for quick pans and zooms
    /** @type {View | null} */
    paintedView: null,
    painted: false,
    hoverRow: -1,
    pendingHover: -1,
    /** @type {Map<number, Thumb>} */
    thumbs: new Map(),
    /** @type {Drag | null} */
    drag: null,
    /** @type {Paint[]} */
    palette: [],
    /** @type {Rgb} */
    background: [255, 255, 255],
  };
}
