// The map's spatial grid and lasso test, against brute force on random points and polygons.
import { test } from "node:test";
import assert from "node:assert/strict";

import { boundaryCells, bounds, collect, forCells, gridStages, lassoTest } from "../../stable_explore/widgets/static/lib/spatial.js";

function random(seed) {
  // a small deterministic generator (mulberry32): the same points every run
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function points(n, rand) {
  const xy = new Float32Array(2 * n);
  for (let i = 0; i < 2 * n; i++) xy[i] = rand() * 100 - 50;
  return xy;
}

function buildGrid(xy, n) {
  const codes = new Uint8Array(n).map((_, i) => i % 7);
  let grid = null;
  for (const [count, run] of gridStages(xy, codes, n, bounds(xy, n), (made) => { grid = made; })) run(0, count);
  return { grid, codes };
}

function evenOdd(polygon, x, y) {
  // the textbook even-odd rule with half-open edges
  let odd = false;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const [xi, yi] = polygon[i];
    const [xj, yj] = polygon[j];
    if ((yi > y) !== (yj > y) && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) odd = !odd;
  }
  return odd;
}

function star(rand, spikes) {
  const cx = rand() * 20 - 10, cy = rand() * 20 - 10;
  const polygon = [];
  for (let k = 0; k < spikes; k++) {
    const angle = (2 * Math.PI * k) / spikes;
    const radius = 5 + rand() * 40;
    polygon.push([cx + radius * Math.cos(angle), cy + radius * Math.sin(angle)]);
  }
  return polygon;
}

test("bounds of no points is a unit box, of points their extent", () => {
  assert.deepEqual(bounds(new Float32Array(0), 0), { minX: 0, minY: 0, maxX: 1, maxY: 1, width: 1, height: 1 });
  const box = bounds(new Float32Array([1, 2, -3, 5, 4, -1]), 3);
  assert.deepEqual([box.minX, box.minY, box.maxX, box.maxY, box.width, box.height], [-3, -1, 4, 5, 7, 6]);
});

test("the grid holds every row once, in the cell its point falls in, with its point and code", () => {
  const n = 5000;
  const xy = points(n, random(1));
  const { grid, codes } = buildGrid(xy, n);
  assert.equal(grid.start[grid.side * grid.side], n);
  const seen = new Uint8Array(n);
  for (let cell = 0; cell < grid.side * grid.side; cell++) {
    for (let k = grid.start[cell]; k < grid.start[cell + 1]; k++) {
      const row = grid.order[k];
      seen[row]++;
      assert.equal(grid.xy[2 * k], xy[2 * row]);
      assert.equal(grid.xy[2 * k + 1], xy[2 * row + 1]);
      assert.equal(grid.codes[k], codes[row]);
      const cx = Math.min(grid.side - 1, Math.floor((xy[2 * row] - grid.minX) * grid.scaleX));
      const cy = Math.min(grid.side - 1, Math.floor((xy[2 * row + 1] - grid.minY) * grid.scaleY));
      assert.equal(cy * grid.side + cx, cell);
    }
  }
  assert.ok(seen.every((c) => c === 1));
});

test("forCells visits a superset of the rows inside a rectangle", () => {
  const n = 3000;
  const xy = points(n, random(2));
  const { grid } = buildGrid(xy, n);
  const rand = random(3);
  for (let trial = 0; trial < 50; trial++) {
    const x0 = rand() * 100 - 50, y0 = rand() * 100 - 50;
    const x1 = x0 + rand() * 40, y1 = y0 + rand() * 40;
    const visited = new Set();
    forCells(grid, x0, y0, x1, y1, (row) => visited.add(row));
    for (let row = 0; row < n; row++) {
      const x = xy[2 * row], y = xy[2 * row + 1];
      if (x >= x0 && x <= x1 && y >= y0 && y <= y1) assert.ok(visited.has(row), `row ${row} inside was not visited`);
    }
  }
});

test("the lasso test agrees with the even-odd rule, concave polygons included", () => {
  const rand = random(4);
  for (let trial = 0; trial < 30; trial++) {
    const polygon = star(rand, 3 + Math.floor(rand() * 40));
    const lasso = lassoTest(polygon);
    for (let k = 0; k < 500; k++) {
      const x = rand() * 120 - 60, y = rand() * 120 - 60;
      assert.equal(lasso.inside(x, y), evenOdd(polygon, x, y), `(${x}, ${y}) in trial ${trial}`);
    }
  }
});

test("a cell no edge passes through is wholly inside the lasso or wholly outside it", () => {
  // what lets the map decide a whole cell by its centre
  const n = 20000;
  const xy = points(n, random(5));
  const { grid } = buildGrid(xy, n);
  const rand = random(6);
  for (let trial = 0; trial < 10; trial++) {
    const polygon = star(rand, 5 + Math.floor(rand() * 20));
    const lasso = lassoTest(polygon);
    const marks = boundaryCells(grid, polygon);
    for (let cell = 0; cell < grid.side * grid.side; cell++) {
      if (marks[cell]) continue;
      const cx = cell % grid.side, cy = Math.floor(cell / grid.side);
      const centre = lasso.inside(grid.minX + (cx + 0.5) / grid.scaleX, grid.minY + (cy + 0.5) / grid.scaleY);
      for (let k = grid.start[cell]; k < grid.start[cell + 1]; k++) {
        assert.equal(lasso.inside(grid.xy[2 * k], grid.xy[2 * k + 1]), centre, `cell ${cell}, trial ${trial}`);
      }
    }
  }
});

test("collect lists the marked rows in order", () => {
  assert.deepEqual(Array.from(collect(new Uint8Array([0, 1, 1, 0, 1]), 5)), [1, 2, 4]);
  assert.equal(collect(new Uint8Array(3), 3).length, 0);
});
