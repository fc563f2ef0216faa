// Boxes land on the displayed image (letterboxed like object-fit: contain), and the threshold keeps ground truth.
import { test } from "node:test";
import assert from "node:assert/strict";

import { boxClasses, boxText, containRect, placeBox, visibleBoxes } from "../../stable_explore/widgets/static/lib/boxes.js";

test("a wide image in a square frame gets bars above and below", () => {
  assert.deepEqual(containRect(200, 100, 128, 128), { x: 0, y: 32, width: 128, height: 64 });
});

test("a tall image in a square frame gets bars left and right", () => {
  assert.deepEqual(containRect(60, 120, 128, 128), { x: 32, y: 0, width: 64, height: 128 });
});

test("an image of the frame's aspect fills it, scaled up or down", () => {
  assert.deepEqual(containRect(32, 32, 128, 128), { x: 0, y: 0, width: 128, height: 128 });
  assert.deepEqual(containRect(1024, 512, 256, 128), { x: 0, y: 0, width: 256, height: 128 });
});

test("an image of unknown size fills the frame", () => {
  assert.deepEqual(containRect(0, 0, 100, 50), { x: 0, y: 0, width: 100, height: 50 });
});

test("a box's fractions land inside the letterboxed image", () => {
  // a 60 x 40 image (COCO box [5, 5, 20, 10] sent as corners 5/60, 5/40, 25/60, 15/40) in a 120 px square
  const image = containRect(60, 40, 120, 120);
  assert.deepEqual(image, { x: 0, y: 20, width: 120, height: 80 });
  const rect = placeBox([5 / 60, 5 / 40, 25 / 60, 15 / 40], image);
  for (const [key, value] of Object.entries({ x: 10, y: 30, width: 40, height: 20 })) {
    assert.ok(Math.abs(rect[/** @type {"x"} */ (key)] - value) < 1e-9, `${key}: ${rect[/** @type {"x"} */ (key)]}`);
  }
});

test("the whole image as a box is the image's rectangle, not the frame's", () => {
  const image = containRect(50, 100, 100, 100);
  assert.deepEqual(placeBox([0, 0, 1, 1], image), image);
});

test("corners out of order are put in order, and a box reaching outside is cut at the edge", () => {
  const image = { x: 0, y: 0, width: 100, height: 100 };
  assert.deepEqual(placeBox([0.5, 0.6, 0.1, 0.2], image), { x: 10, y: 20, width: 40, height: 40 });
  assert.deepEqual(placeBox([-0.2, 0.75, 0.5, 1.3], image), { x: 0, y: 75, width: 50, height: 25 });
});

test("the threshold hides low-score boxes and keeps every box without a score", () => {
  /** @type {import("../../stable_explore/widgets/static/lib/boxes.js").SentBox[]} */
  const boxes = [[0, 0, 1, 1, 0, null], [0, 0, 1, 1, 1, 0.9], [0, 0, 1, 1, 2, 0.2], [0, 0, 1, 1, 1, 0.5]];
  assert.equal(visibleBoxes(boxes, 0).length, 4);
  assert.deepEqual(visibleBoxes(boxes, 0.5).map((b) => b[4]), [0, 1, 1]);
  assert.deepEqual(visibleBoxes(boxes, 0.95).map((b) => b[4]), [0]);
  assert.deepEqual(visibleBoxes(null, 0.5), []);
  assert.deepEqual(boxClasses(boxes), [0, 1, 2]);
});

test("a box's text is its class name and its score", () => {
  assert.equal(boxText([0, 0, 1, 1, 1, 0.876], ["cat", "dog"]), "dog 0.88");
  assert.equal(boxText([0, 0, 1, 1, 0, null], ["cat", "dog"]), "cat");
  assert.equal(boxText([0, 0, 1, 1, 5, null], ["cat", "dog"]), "5");
});

test("a mask is painted in its classes' colours, the background and 'ignore' left transparent", async () => {
  const { maskPalette, paintMask } = await import("../../stable_explore/widgets/static/lib/boxes.js");
  const colours = [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
  const palette = maskPalette(3, (index) => colours[index], { background: true, alpha: 100 });
  // four grey pixels: class 0 (background), 1, 2 and 255 (ignore)
  const pixels = new Uint8ClampedArray([0, 0, 0, 255, 1, 1, 1, 255, 2, 2, 2, 255, 255, 255, 255, 255]);
  paintMask(pixels, palette);
  assert.deepEqual([...pixels], [0, 0, 0, 0, 0, 255, 0, 100, 0, 0, 255, 100, 0, 0, 0, 0]);
  const all = maskPalette(3, (index) => colours[index]);
  assert.deepEqual([...all.slice(0, 4)], [255, 0, 0, 110]);  // class 0 is a class like any other here
});

test("keypoints land on the letterboxed image; unlabelled points and their lines are left out", async () => {
  const { placeKeypoints } = await import("../../stable_explore/widgets/static/lib/boxes.js");
  const image = containRect(200, 100, 100, 100);  // x 0, y 25, 100 x 50
  const placed = placeKeypoints([0.5, 0.5, 2, 1, 0, 1, 0.2, 0.2, 0], [[0, 1], [1, 2], [0, 2]], image);
  assert.deepEqual(placed.points, [{ index: 0, x: 50, y: 50, visible: true }, { index: 1, x: 100, y: 25, visible: false }]);
  assert.deepEqual(placed.lines, [[50, 50, 100, 25]]);
});
