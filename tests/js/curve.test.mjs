// A precision-recall curve's SVG path: steps from point to point, and nothing for a class without boxes.
import { test } from "node:test";
import assert from "node:assert/strict";

import { curvePath, unitTicks } from "../../stable_explore/widgets/static/lib/curve.js";

test("a curve starts at its first point and steps to each next one", () => {
  assert.equal(curvePath([0, 0.5, 1], [1, 0.5, 0], 100, 50), "M0.0 0.0H50.0V25.0H100.0V50.0");
});

test("COCO's -1 (no box of the class) draws nothing", () => {
  assert.equal(curvePath([0, 0.5, 1], [-1, -1, -1], 100, 50), "");
  assert.equal(curvePath([0, 0.5, 1], [1, -1, 0.25], 10, 10), "M0.0 0.0H10.0V7.5");
});

test("ticks run from 0 to 1 across the length", () => {
  assert.deepEqual(unitTicks(200, 2), [{ value: 0, at: 0 }, { value: 0.5, at: 100 }, { value: 1, at: 200 }]);
});
