// The embedding map's view transform: fitting, data <-> screen, pan, zoom about the cursor, point size.
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  fitView, framePlacement, panBy, pointSize, sameView, toData, toScreen, wheelFactor, zoomAt,
} from "../../stable_explore/widgets/static/lib/mapview.js";

const close = (a, b, tolerance = 1e-9) => assert.ok(Math.abs(a - b) <= tolerance, `${a} != ${b}`);

test("a fitted view shows the whole extent inside the padding, centred, data y upwards", () => {
  const extent = { minX: -10, minY: 0, width: 20, height: 5 };
  const view = fitView(extent, 600, 400, 12);
  const [left, top] = toScreen(view, -10, 5);
  const [right, bottom] = toScreen(view, 10, 0);
  close(left, 12); // width decides the scale: (600 - 24) / 20
  close(right, 588);
  assert.ok(top < bottom, "larger data y is higher on the screen");
  close((top + bottom) / 2, 200);
  assert.equal(view.sx, -view.sy);
});

test("screen to data undoes data to screen", () => {
  const view = { sx: 3.5, sy: -2.25, ox: 17, oy: 300 };
  for (const [x, y] of [[0, 0], [1.5, -7], [-100, 42]]) {
    const [px, py] = toScreen(view, x, y);
    const [bx, by] = toData(view, px, py);
    close(bx, x);
    close(by, y);
  }
});

test("a pan moves every point by the drag, a zoom keeps the point under the cursor", () => {
  const view = { sx: 2, sy: -2, ox: 10, oy: 20 };
  const [x, y] = toData(view, 150, 90);
  panBy(view, 5, -3);
  assert.deepEqual(toScreen(view, x, y), [155, 87]);
  zoomAt(view, 155, 87, 1.7);
  const [px, py] = toScreen(view, x, y);
  close(px, 155);
  close(py, 87);
  close(view.sx, 3.4);
});

test("wheeling down zooms out, up zooms in, and a line counts for more than a pixel", () => {
  assert.ok(wheelFactor(100, 0) < 1);
  assert.ok(wheelFactor(-100, 0) > 1);
  close(wheelFactor(0, 0), 1);
  assert.ok(wheelFactor(3, 1) < wheelFactor(3, 0));
  close(wheelFactor(100, 0) * wheelFactor(-100, 0), 1);
});

test("views are the same only when all four numbers are", () => {
  const a = { sx: 1, sy: -1, ox: 0, oy: 0 };
  assert.ok(sameView(a, { ...a }));
  assert.ok(!sameView(a, { ...a, oy: 1e-9 }));
});

test("points get smaller as there are more, scaled to device pixels, never below one pixel", () => {
  const sizes = [100, 5000, 50000, 1000000].map((n) => pointSize(n, 1));
  assert.deepEqual(sizes, [5, 3, 2, 1]);
  assert.equal(pointSize(100, 2), 10);
  assert.equal(pointSize(1000000, 0.5), 1);
});

test("a quick frame puts the last full frame where its points now belong", () => {
  const painted = { sx: 2, sy: -2, ox: 30, oy: 40 };
  const view = { ...painted };
  zoomAt(view, 100, 80, 2);
  panBy(view, 7, -5);
  const dpr = 2;
  const [x, y, w, h] = framePlacement(view, painted, dpr, 800, 600);
  assert.equal(w, 1600);
  assert.equal(h, 1200);
  // a data point's device pixel in the old frame, moved and scaled, lands on its device pixel in the new view
  const [ox, oy] = toScreen(painted, 12, -3).map((c) => c * dpr);
  const [nx, ny] = toScreen(view, 12, -3).map((c) => c * dpr);
  close(x + ox * (w / 800), nx);
  close(y + oy * (h / 600), ny);
});
