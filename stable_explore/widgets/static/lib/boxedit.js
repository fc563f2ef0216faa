// @ts-check
// Editing boxes in the detail pane: which box a click lands on, the rectangle a drag makes, and which
// column a drawn box goes to. Points and boxes are fractions (0..1) of the image, as the kernel sends boxes.

/** @typedef {{field: string, index: number, corners: number[]}} Hit a box drawn: its column, its index among the row's boxes shown, x0 y0 x1 y1 */

/**
 * A point of the page as fractions of an element showing the whole image (the detail's SVG stretches over the <img>).
 * @param {number} clientX
 * @param {number} clientY
 * @param {{left: number, top: number, width: number, height: number}} rect the element's bounding rectangle
 * @returns {[number, number]}
 */
export function pointIn(clientX, clientY, rect) {
  return [(clientX - rect.left) / (rect.width || 1), (clientY - rect.top) / (rect.height || 1)];
}

/**
 * The box a click at (x, y) selects: of the boxes containing the point (with ``slack`` around each edge, so a
 * thin box can be hit), the smallest, so a box inside another is reachable; null when none contains it.
 * @param {Hit[]} boxes
 * @param {number} x
 * @param {number} y
 * @param {number} [slack] in fractions of the image
 * @returns {Hit | null}
 */
export function hitBox(boxes, x, y, slack = 0.01) {
  let best = null;
  let bestArea = Infinity;
  for (const box of boxes) {
    const [a, b, c, d] = box.corners;
    const [x0, x1] = a <= c ? [a, c] : [c, a];
    const [y0, y1] = b <= d ? [b, d] : [d, b];
    if (x < x0 - slack || x > x1 + slack || y < y0 - slack || y > y1 + slack) continue;
    const area = (x1 - x0) * (y1 - y0);
    if (area < bestArea) {
      best = box;
      bestArea = area;
    }
  }
  return best;
}

/**
 * The box a drag from ``start`` to ``end`` draws: corners in order, cut at the image's edges; null when it is
 * smaller than ``least`` (a fraction of the image) in width or height, a click rather than a drag.
 * @param {number[]} start x, y
 * @param {number[]} end x, y
 * @param {number} [least]
 * @returns {number[] | null} x0, y0, x1, y1
 */
export function dragCorners(start, end, least = 0.01) {
  const clamp = (/** @type {number} */ v) => Math.min(1, Math.max(0, v));
  const [x0, x1] = [clamp(Math.min(start[0], end[0])), clamp(Math.max(start[0], end[0]))];
  const [y0, y1] = [clamp(Math.min(start[1], end[1])), clamp(Math.max(start[1], end[1]))];
  if (x1 - x0 < least || y1 - y0 < least) return null;
  return [x0, y0, x1, y1];
}

/**
 * The column a drawn box is added to: the first ground-truth Boxes column switched on, else the first Boxes
 * column switched on; null when none is.
 * @param {{name: string, kind: string, role?: string}[]} fields
 * @param {Set<string>} hidden
 * @returns {string | null}
 */
export function drawColumn(fields, hidden) {
  const boxes = fields.filter((f) => f.kind === "boxes" && !hidden.has(f.name));
  const truth = boxes.find((f) => f.role !== "predictions");
  return (truth || boxes[0] || { name: null }).name;
}
