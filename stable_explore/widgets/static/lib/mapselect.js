// @ts-check
// Selecting the embedding map's rows through its spatial grid (lib/spatial.js): a box or a lasso in
// data coordinates, and the row nearest the cursor; rows of hidden classes are never chosen. Pure
// functions over typed arrays, tested under node against brute force (tests/js/mapselect.test.mjs).
import { boundaryCells, cellX, cellY, collect, forCells, lassoTest } from "./spatial.js";

/** @typedef {import("./spatial.js").Grid} Grid */

/**
 * ``rows`` without those outside 0..n-1 (``rows`` itself when all are inside).
 * @param {Int32Array} rows
 * @param {number} n
 * @returns {Int32Array}
 */
export function rowsInRange(rows, n) {
  let inRange = true;
  for (let k = 0; k < rows.length && inRange; k++) inRange = rows[k] >= 0 && rows[k] < n;
  return inRange ? rows : rows.filter((row) => row >= 0 && row < n);
}

/**
 * 1 for each of the ``n`` rows chosen in the grid's cells that meet the rectangle x0..x1, y0..y1:
 * ``classify(cx, cy)`` says 0 = no row of the cell is chosen, 1 = every row is, 2 = test each row
 * with ``test(x, y)``. Rows whose code is not ``shown`` are never chosen.
 * @param {Grid} grid
 * @param {number} n
 * @param {Uint8Array} shown
 * @param {number} x0
 * @param {number} y0
 * @param {number} x1
 * @param {number} y1
 * @param {(cx: number, cy: number) => number} classify
 * @param {(x: number, y: number) => boolean} test
 * @returns {Uint8Array}
 */
export function selectCells(grid, n, shown, x0, y0, x1, y1, classify, test) {
  const chosen = new Uint8Array(n);
  if (x1 < grid.minX || x0 > grid.maxX || y1 < grid.minY || y0 > grid.maxY) return chosen;
  const cx0 = cellX(grid, x0), cx1 = cellX(grid, x1), cy0 = cellY(grid, y0), cy1 = cellY(grid, y1);
  const cellXY = grid.xy, cellCodes = grid.codes, order = grid.order;
  for (let cy = cy0; cy <= cy1; cy++) {
    for (let cx = cx0; cx <= cx1; cx++) {
      const kind = classify(cx, cy);
      if (!kind) continue;
      const cell = cy * grid.side + cx;
      for (let k = grid.start[cell], end = grid.start[cell + 1]; k < end; k++) {
        if (!shown[cellCodes[k]]) continue;
        if (kind === 1 || test(cellXY[2 * k], cellXY[2 * k + 1])) chosen[order[k]] = 1;
      }
    }
  }
  return chosen;
}

/**
 * The shown rows inside the box between data corners (ax, ay) and (bx, by), edges included, in row
 * order, and the box (its corners sorted).
 * @param {Grid} grid
 * @param {number} n
 * @param {Uint8Array} shown
 * @param {number} ax
 * @param {number} ay
 * @param {number} bx
 * @param {number} by
 * @returns {{rows: Int32Array, box: {x0: number, y0: number, x1: number, y1: number}}}
 */
export function boxRows(grid, n, shown, ax, ay, bx, by) {
  const x0 = Math.min(ax, bx), x1 = Math.max(ax, bx), y0 = Math.min(ay, by), y1 = Math.max(ay, by);
  const cx0 = cellX(grid, x0), cx1 = cellX(grid, x1), cy0 = cellY(grid, y0), cy1 = cellY(grid, y1);
  // a cell strictly inside the box's cells holds only chosen rows; the cells on its edge test each row
  /** @type {(cx: number, cy: number) => number} */
  const classify = (cx, cy) => (cx > cx0 && cx < cx1 && cy > cy0 && cy < cy1 ? 1 : 2);
  /** @type {(x: number, y: number) => boolean} */
  const test = (x, y) => x >= x0 && x <= x1 && y >= y0 && y <= y1;
  return { rows: collect(selectCells(grid, n, shown, x0, y0, x1, y1, classify, test), n), box: { x0, y0, x1, y1 } };
}

/**
 * The shown rows inside ``polygon`` (data coordinates; the even-odd rule of lib/spatial.js lassoTest),
 * in row order.
 * @param {Grid} grid
 * @param {number} n
 * @param {Uint8Array} shown
 * @param {Array<[number, number]>} polygon
 * @returns {Int32Array}
 */
export function lassoRows(grid, n, shown, polygon) {
  const lasso = lassoTest(polygon);
  const boundary = boundaryCells(grid, polygon);
  // a cell no edge comes near is wholly inside or wholly outside: its centre decides for all its rows
  /** @type {(cx: number, cy: number) => number} */
  const classify = (cx, cy) => {
    if (boundary[cy * grid.side + cx]) return 2;
    const centreX = grid.minX + (cx + 0.5) / grid.scaleX, centreY = grid.minY + (cy + 0.5) / grid.scaleY;
    return lasso.inside(centreX, centreY) ? 1 : 0;
  };
  return collect(selectCells(grid, n, shown, lasso.x0, lasso.y0, lasso.x1, lasso.y1, classify, lasso.inside), n);
}

/**
 * The shown row nearest data point (x, y) within ``radius`` (data units), or -1; of rows equally near,
 * the one the grid visits last.
 * @param {Grid} grid
 * @param {Uint8Array} shown
 * @param {number} x
 * @param {number} y
 * @param {number} radius
 * @returns {number}
 */
export function nearestRow(grid, shown, x, y, radius) {
  let best = -1, bestD = radius * radius;
  forCells(grid, x - radius, y - radius, x + radius, y + radius, (i, k) => {
    if (!shown[grid.codes[k]]) return;
    const dx = grid.xy[2 * k] - x, dy = grid.xy[2 * k + 1] - y;
    const d = dx * dx + dy * dy;
    if (d <= bestD) { bestD = d; best = i; }
  });
  return best;
}
