// The histogram panel: bar heights, the range a bar reads, the box measures' names.
import { test } from "node:test";
import assert from "node:assert/strict";

import { BOX_MEASURES, barHeights, binText, measureName } from "../../stable_explore/widgets/static/lib/histograms.js";

test("the tallest bar fills the height, a small count stays visible, an empty bar is flat", () => {
  assert.deepEqual(barHeights([0, 1, 100, 50], 20), [0, 2, 20, 10]);
  assert.deepEqual(barHeights([0, 0], 20), [0, 0]);
});

test("bars are half-open but the last, which is closed", () => {
  const edges = [0, 0.25, 0.5];
  assert.equal(binText(edges, 0), "0 – <0.25");
  assert.equal(binText(edges, 1), "0.25 – 0.5");
  assert.equal(binText([1 / 3, 2 / 3, 1], 0), "0.3333 – <0.6667");
});

test("the area is named in the column's units; the other measures by name", () => {
  assert.equal(measureName("area", false), "area (px²)");
  assert.equal(measureName("area", true), "area (of the image)");
  assert.equal(measureName("count", false), "boxes per image");
  assert.deepEqual(BOX_MEASURES.map(([key]) => key), ["area", "aspect", "score", "count"]);
});
