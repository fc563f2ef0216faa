// @ts-check
// A spatial grid over a map's points (in data coordinates), and the box and lasso tests that select
// through it: pure functions over typed arrays, tested under node (tests/js/).

/** @typedef {{minX: number, minY: number, maxX: number, maxY: number, width: number, height: number}} Box */
/**
 * @typedef {Box & {side: number, scaleX: number, scaleY: number, start: Int32Array, order: Int32Array,
 *   xy: Float32Array, codes: Uint8Array | Uint16Array | Uint32Array}} Grid
 */

/**
 * The bounding box of ``n`` points stored as x, y pairs (a unit box when there are none).
 * @param {ArrayLike<number>} xy
 * @param {number} n
 * @returns {Box}
 */
export function bounds(xy, n) {
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (let i = 0; i < 2 * n; i += 2) {
    const x = xy[i], y = xy[i + 1];
    if (x < minX) minX = x;
    if (x > maxX) maxX = x;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  if (!n) { minX = minY = 0; maxX = maxY = 1; }
  return { minX, minY, maxX, maxY, width: (maxX - minX) || 1, height: (maxY - minY) || 1 };
}

/**
 * The stages (for :func:`sliced`) that build a spatial grid of about 8 points a cell over ``box``; the
 * last hands the grid to ``made``.
 * @param {ArrayLike<number>} xy
 * @param {Uint8Array | Uint16Array | Uint32Array} codes
 * @param {number} n
 * @param {Box} box
 * @param {(grid: Grid) => void} made
 * @returns {Array<[number, (from: number, to: number) => void]>}
 */
export function gridStages(xy, codes, n, box, made) {
  // about 8 points a cell; a counting sort puts each cell's rows side by side in `order`, with their
  // positions and codes copied in that order (a selection reads them in sequence, not all over memory);
  // as stages of `sliced` (three passes), handing the grid to made(grid) at the end
  const side = Math.max(1, Math.min(1024, Math.ceil(Math.sqrt(n / 8))));
  const scaleX = side / box.width, scaleY = side / box.height;
  const cellOf = new Int32Array(n);
  const start = new Int32Array(side * side + 1);
  const order = new Int32Array(n);
  const cellXY = new Float32Array(2 * n);
  const Codes = /** @type {Uint8ArrayConstructor | Uint16ArrayConstructor | Uint32ArrayConstructor} */ (codes.constructor);
  const cellCodes = new Codes(n);
  let fill = new Int32Array(0);
  /** @type {(from: number, to: number) => void} */
  const count = (from, to) => {
    for (let i = from; i < to; i++) {
      let cx = ((xy[2 * i] - box.minX) * scaleX) | 0;
      let cy = ((xy[2 * i + 1] - box.minY) * scaleY) | 0;
      if (cx >= side) cx = side - 1;
      if (cy >= side) cy = side - 1;
      const cell = cy * side + cx;
      cellOf[i] = cell;
      start[cell + 1]++;
    }
  };
  const sum = () => {
    for (let c = 0; c < side * side; c++) start[c + 1] += start[c];
    fill = start.slice(0, side * side);
  };
  /** @type {(from: number, to: number) => void} */
  const place = (from, to) => {
    for (let i = from; i < to; i++) {
      const at = fill[cellOf[i]]++;
      order[at] = i;
      cellXY[2 * at] = xy[2 * i];
      cellXY[2 * at + 1] = xy[2 * i + 1];
      cellCodes[at] = codes[i];
    }
  };
  const finish = () => made({ ...box, side, scaleX, scaleY, start, order, xy: cellXY, codes: cellCodes });
  return [[n, count], [1, sum], [n, place], [1, finish]];
}

/**
 * The grid column of data x (clamped to the grid).
 * @param {Grid} grid
 * @param {number} x
 */
export function cellX(grid, x) {
  return Math.min(grid.side - 1, Math.max(0, Math.floor((x - grid.minX) * grid.scaleX)));
}

/**
 * The grid row of data y (clamped to the grid).
 * @param {Grid} grid
 * @param {number} y
 */
export function cellY(grid, y) {
  return Math.min(grid.side - 1, Math.max(0, Math.floor((y - grid.minY) * grid.scaleY)));
}

/**
 * Visit every row whose cell meets the rectangle (a superset of the rows inside it).
 * @param {Grid} grid
 * @param {number} x0
 * @param {number} y0
 * @param {number} x1
 * @param {number} y1
 * @param {(row: number, place: number) => void} visit
 */
export function forCells(grid, x0, y0, x1, y1, visit) {
  // every row whose cell meets the rectangle (a superset of the rows inside it): visit(row, place in the grid)
  if (x1 < grid.minX || x0 > grid.maxX || y1 < grid.minY || y0 > grid.maxY) return;
  const cx0 = cellX(grid, x0), cx1 = cellX(grid, x1), cy0 = cellY(grid, y0), cy1 = cellY(grid, y1);
  for (let cy = cy0; cy <= cy1; cy++) {
    for (let cx = cx0; cx <= cx1; cx++) {
      const cell = cy * grid.side + cx;
      for (let k = grid.start[cell]; k < grid.start[cell + 1]; k++) visit(grid.order[k], k);
    }
  }
}

/**
 * A point-in-polygon test for a lasso: ``inside(x, y)`` and the lasso's bounding box.
 * @param {Array<[number, number]>} polygon
 * @returns {{x0: number, y0: number, x1: number, y1: number, inside: (x: number, y: number) => boolean}}
 */
export function lassoTest(polygon) {
  // the even-odd rule with half-open edges (as rows_in_polygon in Python), its edges sorted into
  // horizontal bands held in flat typed arrays: a point tests only the few edges of its band
  const count = polygon.length;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const [x, y] of polygon) {
    x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
  }
  const bands = Math.max(1, Math.min(1024, count));
  const bandHeight = (y1 - y0) / bands || 1;
  /** @param {number} y */
  const bandOf = (y) => Math.min(bands - 1, Math.max(0, Math.floor((y - y0) / bandHeight)));
  const starts = new Int32Array(bands + 1);
  let edges = new Float64Array(0);
  for (let pass = 0; pass < 2; pass++) {
    if (pass) edges = new Float64Array(starts[bands] * 4);
    const fill = pass ? starts.slice(0, bands) : new Int32Array(0);
    for (let k = 0; k < count; k++) {
      const xi = polygon[k][0], yi = polygon[k][1];
      const xj = polygon[(k + 1) % count][0], yj = polygon[(k + 1) % count][1];
      if (yi === yj) continue;
      const b1 = bandOf(Math.max(yi, yj));
      for (let b = bandOf(Math.min(yi, yj)); b <= b1; b++) {
        if (!pass) { starts[b + 1]++; continue; }
        const at = 4 * fill[b]++;
        edges[at] = xi; edges[at + 1] = yi; edges[at + 2] = xj; edges[at + 3] = yj;
      }
    }
    if (!pass) for (let b = 0; b < bands; b++) starts[b + 1] += starts[b];
  }
  /** @type {(x: number, y: number) => boolean} */
  const inside = (x, y) => {
    if (x < x0 || x > x1 || y < y0 || y > y1) return false;
    const band = bandOf(y);
    let odd = false;
    for (let e = 4 * starts[band], end = 4 * starts[band + 1]; e < end; e += 4) {
      const xi = edges[e], yi = edges[e + 1], xj = edges[e + 2], yj = edges[e + 3];
      if ((yi > y) !== (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi) odd = !odd;
    }
    return odd;
  };
  return { x0, y0, x1, y1, inside };
}

/**
 * 1 for each cell (row-major) an edge of the polygon passes through, with a margin of one cell.
 * @param {Grid} grid
 * @param {Array<[number, number]>} polygon
 * @returns {Uint8Array}
 */
export function boundaryCells(grid, polygon) {
  // cells an edge passes through, with a margin of one cell: every other cell is wholly inside the
  // lasso or wholly outside it, so its centre decides for all its rows
  const marks = new Uint8Array(grid.side * grid.side);
  /** @type {(cy: number, cxa: number, cxb: number) => void} */
  const mark = (cy, cxa, cxb) => {
    for (let y = Math.max(0, cy - 1); y <= Math.min(grid.side - 1, cy + 1); y++) {
      for (let x = Math.max(0, cxa - 1); x <= Math.min(grid.side - 1, cxb + 1); x++) marks[y * grid.side + x] = 1;
    }
  };
  for (let k = 0; k < polygon.length; k++) {
    const [xi, yi] = polygon[k];
    const [xj, yj] = polygon[(k + 1) % polygon.length];
    const cya = cellY(grid, Math.min(yi, yj)), cyb = cellY(grid, Math.max(yi, yj));
    for (let cy = cya; cy <= cyb; cy++) {
      let xa = Math.min(xi, xj), xb = Math.max(xi, xj);
      if (yi !== yj && cya !== cyb) {
        // where the edge is while it crosses this row of cells
        const rowLo = Math.max(Math.min(yi, yj), grid.minY + cy / grid.scaleY);
        const rowHi = Math.min(Math.max(yi, yj), grid.minY + (cy + 1) / grid.scaleY);
        /** @param {number} y */
        const at = (y) => xi + ((xj - xi) * (y - yi)) / (yj - yi);
        xa = Math.min(at(rowLo), at(rowHi));
        xb = Math.max(at(rowLo), at(rowHi));
      }
      mark(cy, cellX(grid, xa), cellX(grid, xb));
    }
  }
  return marks;
}

/**
 * The rows marked in ``chosen``, in row order.
 * @param {Uint8Array} chosen
 * @param {number} n
 * @returns {Int32Array}
 */
export function collect(chosen, n) {
  // the rows marked in `chosen`, in row order
  let count = 0;
  for (let i = 0; i < n; i++) count += chosen[i];
  const rows = new Int32Array(count);
  for (let i = 0, k = 0; i < n; i++) if (chosen[i]) rows[k++] = i;
  return rows;
}
