// The matrix's shades: none for an empty cell, the full shade for the largest, growing with the count.
import { test } from "node:test";
import assert from "node:assert/strict";

import { FULL_SHADE, heatLevel, largest, needsLightText } from "../../stable_explore/widgets/static/lib/heat.js";

test("an empty cell has no shade and the largest count the full one", () => {
  assert.equal(heatLevel(0, 50), 0);
  assert.equal(heatLevel(50, 50), FULL_SHADE);
  assert.equal(heatLevel(3, 0), 0);  // an empty matrix: nothing shaded, no division by zero
});

test("the shade grows with the count, and a small count still shows", () => {
  let last = 0;
  for (let count = 1; count <= 100; count++) {
    const level = heatLevel(count, 100);
    assert.ok(level > last, `count ${count}`);
    last = level;
  }
  assert.ok(heatLevel(1, 400) >= 0.04);
});

test("dark shades take light text", () => {
  assert.equal(needsLightText(heatLevel(100, 100)), true);
  assert.equal(needsLightText(heatLevel(1, 100)), false);
});

test("largest reads every row", () => {
  assert.equal(largest([[1, 7], [9, 2]]), 9);
  assert.equal(largest([]), 0);
});
