// @ts-check
// A precision-recall curve as an SVG path: recall along x, precision up y, drawn as steps (precision holds
// from one recall point to the next, as COCO's interpolated curve does). Points below 0 (COCO's -1, "no
// box of this class") are left out.

/**
 * The SVG path ("M x y H x V y ...") of a curve inside a plot of ``width`` x ``height`` pixels.
 * @param {number[]} recall recall points, ascending, in 0..1
 * @param {number[]} precision precision at each recall point, in 0..1 (below 0: none)
 * @param {number} width
 * @param {number} height
 * @returns {string}
 */
export function curvePath(recall, precision, width, height) {
  const x = (/** @type {number} */ r) => (r * width).toFixed(1);
  const y = (/** @type {number} */ p) => ((1 - p) * height).toFixed(1);
  let path = "";
  for (let i = 0; i < Math.min(recall.length, precision.length); i++) {
    const p = precision[i];
    if (!(p >= 0)) continue;
    path += path === "" ? `M${x(recall[i])} ${y(p)}` : `H${x(recall[i])}V${y(p)}`;
  }
  return path;
}

/**
 * The ticks of an axis from 0 to 1: their values and their positions along ``length`` pixels.
 * @param {number} length
 * @param {number} [count]
 * @returns {{value: number, at: number}[]}
 */
export function unitTicks(length, count = 5) {
  const ticks = [];
  for (let i = 0; i <= count; i++) ticks.push({ value: i / count, at: (i / count) * length });
  return ticks;
}
