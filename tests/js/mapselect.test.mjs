// Box, lasso and nearest-point selection through the map's grid, against brute force over every point.
import { test } from "node:test";
import assert from "node:assert/strict";

import { bounds, gridStages, lassoTest } from "../../stable_explore/widgets/static/lib/spatial.js";
import { boxRows, lassoRows, nearestRow, rowsInRange } from "../../stable_explore/widgets/static/lib/mapselect.js";
import { shownCodes } from "../../stable_explore/widgets/static/lib/mappaint.js";

function random(seed) {
  let a = seed >>> 0; // mulberry32: the same numbers every run
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function scene(n, seed) {
  const rand = random(seed);
  const xy = new Float32Array(2 * n).map(() => rand() * 100 - 50);
  const codes = new Uint8Array(n).map(() => Math.floor(rand() * 5)); // 0: no label, 1..4: classes 0..3
  let grid = null;
  for (const [count, run] of gridStages(xy, codes, n, bounds(xy, n), (made) => { grid = made; })) run(0, count);
  return { xy, codes, grid, rand };
}

const brute = (n, keep) => Int32Array.from({ length: n }, (_, i) => i).filter(keep);

test("a box selects exactly the shown rows inside it, whichever corner the drag began at", () => {
  const n = 4000;
  const { xy, codes, grid, rand } = scene(n, 3);
  const shown = shownCodes([1, 3], 4); // classes 1 and 3 hidden
  for (let trial = 0; trial < 20; trial++) {
    const ax = rand() * 120 - 60, ay = rand() * 120 - 60, bx = rand() * 120 - 60, by = rand() * 120 - 60;
    const { rows, box } = boxRows(grid, n, shown, ax, ay, bx, by);
    assert.ok(box.x0 <= box.x1 && box.y0 <= box.y1);
    const expected = brute(n, (i) => shown[codes[i]] === 1 && xy[2 * i] >= box.x0 && xy[2 * i] <= box.x1 &&
      xy[2 * i + 1] >= box.y0 && xy[2 * i + 1] <= box.y1);
    assert.deepEqual(rows, expected);
    assert.deepEqual(boxRows(grid, n, shown, bx, by, ax, ay).rows, expected);
  }
});

test("a box outside every point selects nothing", () => {
  const { grid } = scene(500, 4);
  assert.equal(boxRows(grid, 500, shownCodes([], 4), 200, 200, 300, 300).rows.length, 0);
});

test("a lasso selects exactly the shown rows its polygon holds, concave and crossing ones too", () => {
  const n = 6000;
  const { xy, codes, grid, rand } = scene(n, 5);
  const shown = shownCodes([0], 4);
  for (let trial = 0; trial < 12; trial++) {
    const corners = 3 + Math.floor(rand() * 40);
    const polygon = Array.from({ length: corners }, () => [rand() * 110 - 55, rand() * 110 - 55]);
    const inside = lassoTest(polygon).inside;
    const expected = brute(n, (i) => shown[codes[i]] === 1 && inside(xy[2 * i], xy[2 * i + 1]));
    assert.deepEqual(lassoRows(grid, n, shown, polygon), expected);
  }
});

test("the nearest shown row within the radius, or -1", () => {
  const n = 3000;
  const { xy, codes, grid, rand } = scene(n, 6);
  const shown = shownCodes([2], 4);
  for (let trial = 0; trial < 50; trial++) {
    const x = rand() * 100 - 50, y = rand() * 100 - 50, radius = rand() * 3;
    let best = -1, bestD = radius * radius;
    for (let i = 0; i < n; i++) {
      if (!shown[codes[i]]) continue;
      const d = (xy[2 * i] - x) ** 2 + (xy[2 * i + 1] - y) ** 2;
      if (d <= bestD) { bestD = d; best = i; }
    }
    assert.equal(nearestRow(grid, shown, x, y, radius), best);
  }
  assert.equal(nearestRow(grid, shown, 500, 500, 1), -1);
});

test("rows from the kernel outside the points are dropped, and rows all inside kept as they are", () => {
  const rows = Int32Array.from([0, 4, 9]);
  assert.equal(rowsInRange(rows, 10), rows);
  assert.deepEqual(rowsInRange(Int32Array.from([-1, 0, 4, 10, 9]), 10), rows);
});
