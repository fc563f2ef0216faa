// @ts-check
// The embedding map's view: data x, y to CSS pixels (px = x * sx + ox, py = y * sy + oy, sy < 0 so data y
// grows upwards), fitting, panning and zooming it, and how big a point is drawn for how many points.
// Pure functions, tested under node (tests/js/mapview.test.mjs).

/** @typedef {{sx: number, sy: number, ox: number, oy: number}} View */
/** @typedef {{minX: number, minY: number, width: number, height: number}} Extent */

/** More points than this: a pan or zoom moves the last full frame until the view is still. */
export const QUICK_ABOVE = 150000;

/**
 * The view that shows all of ``extent`` centred in a ``width`` x ``height`` CSS-pixel area, ``pad`` from
 * its edges, with one scale on both axes.
 * @param {Extent} extent
 * @param {number} width
 * @param {number} height
 * @param {number} [pad]
 * @returns {View}
 */
export function fitView(extent, width, height, pad = 12) {
  const scale = Math.min((width - 2 * pad) / extent.width, (height - 2 * pad) / extent.height);
  return {
    sx: scale, sy: -scale,
    ox: width / 2 - scale * (extent.minX + extent.width / 2),
    oy: height / 2 + scale * (extent.minY + extent.height / 2),
  };
}

/**
 * The data coordinates under CSS pixel (px, py).
 * @param {View} view
 * @param {number} px
 * @param {number} py
 * @returns {[number, number]}
 */
export function toData(view, px, py) {
  return [(px - view.ox) / view.sx, (py - view.oy) / view.sy];
}

/**
 * The CSS pixel where data point (x, y) is drawn.
 * @param {View} view
 * @param {number} x
 * @param {number} y
 * @returns {[number, number]}
 */
export function toScreen(view, x, y) {
  return [x * view.sx + view.ox, y * view.sy + view.oy];
}

/**
 * Move ``view`` (in place) by (dx, dy) CSS pixels: what was under the cursor stays under it in a drag.
 * @param {View} view
 * @param {number} dx
 * @param {number} dy
 */
export function panBy(view, dx, dy) {
  view.ox += dx;
  view.oy += dy;
}

/**
 * Scale ``view`` (in place) by ``factor`` about CSS pixel (px, py), which keeps showing the same data point.
 * @param {View} view
 * @param {number} px
 * @param {number} py
 * @param {number} factor
 */
export function zoomAt(view, px, py, factor) {
  view.ox = px - (px - view.ox) * factor;
  view.oy = py - (py - view.oy) * factor;
  view.sx *= factor;
  view.sy *= factor;
}

/**
 * The zoom factor of one wheel event: a smooth exponential of its delta, lines (deltaMode 1) counted
 * larger than pixels; wheeling down zooms out.
 * @param {number} deltaY
 * @param {number} deltaMode
 */
export function wheelFactor(deltaY, deltaMode) {
  return Math.exp(-deltaY * (deltaMode === 1 ? 0.05 : 0.0015));
}

/**
 * Whether two views are the same transform.
 * @param {View} a
 * @param {View} b
 */
export function sameView(a, b) {
  return a.sx === b.sx && a.sy === b.sy && a.ox === b.ox && a.oy === b.oy;
}

/**
 * The side in device pixels of one drawn point: the more points, the smaller (a million points are single
 * pixels, a few hundred are 5 CSS pixels wide).
 * @param {number} n
 * @param {number} dpr device pixels per CSS pixel
 */
export function pointSize(n, dpr) {
  return Math.max(1, Math.round((n > 200000 ? 1 : n > 20000 ? 2 : n > 2000 ? 3 : 5) * dpr));
}

/**
 * Where (device pixels: x, y, width, height) a frame drawn in ``painted`` goes to show ``view``, both on
 * a ``width`` x ``height`` canvas: a quick pan or zoom moves and scales the last full frame.
 * @param {View} view
 * @param {View} painted
 * @param {number} dpr
 * @param {number} width
 * @param {number} height
 * @returns {[number, number, number, number]}
 */
export function framePlacement(view, painted, dpr, width, height) {
  const k = view.sx / painted.sx;
  return [(view.ox - painted.ox * k) * dpr, (view.oy - painted.oy * k) * dpr, width * k, height * k];
}
