// The detail pane's box editor: what a click selects, what a drag draws, where a drawn box goes.
import { test } from "node:test";
import assert from "node:assert/strict";

import { dragCorners, drawColumn, hitBox, pointIn } from "../../stable_explore/widgets/static/lib/boxedit.js";

const big = { field: "objects", index: 0, corners: [0.1, 0.1, 0.9, 0.9] };
const small = { field: "objects", index: 1, corners: [0.4, 0.4, 0.5, 0.5] };
const pred = { field: "predictions", index: 0, corners: [0.6, 0.6, 0.2, 0.2] };

test("a click inside nested boxes selects the smallest", () => {
  assert.equal(hitBox([big, small], 0.45, 0.45), small);
  assert.equal(hitBox([small, big], 0.2, 0.2), big);
});

test("corners in either order contain the point; outside every box is no box", () => {
  assert.equal(hitBox([pred], 0.3, 0.3), pred);
  assert.equal(hitBox([big, small], 0.95, 0.5), null);
});

test("a click just outside a thin box's edge still hits it", () => {
  const thin = { field: "objects", index: 2, corners: [0.3, 0.3, 0.3, 0.8] };
  assert.equal(hitBox([thin], 0.305, 0.5), thin);
});

test("a point of the page is a fraction of the element's rectangle", () => {
  assert.deepEqual(pointIn(150, 60, { left: 100, top: 50, width: 200, height: 40 }), [0.25, 0.25]);
});

test("a drag gives ordered corners cut at the image's edges", () => {
  assert.deepEqual(dragCorners([0.8, 0.9], [0.2, 1.3]), [0.2, 0.9, 0.8, 1]);
  assert.deepEqual(dragCorners([-0.5, 0.1], [0.5, 0.5]), [0, 0.1, 0.5, 0.5]);
});

test("a drag too small in one direction is a click, not a box", () => {
  assert.equal(dragCorners([0.5, 0.5], [0.505, 0.9]), null);
});

test("a drawn box goes to the first ground-truth column shown", () => {
  const fields = [
    { name: "predictions", kind: "boxes", role: "predictions" },
    { name: "mask", kind: "mask" },
    { name: "objects", kind: "boxes", role: "truth" },
  ];
  assert.equal(drawColumn(fields, new Set()), "objects");
  assert.equal(drawColumn(fields, new Set(["objects"])), "predictions");
  assert.equal(drawColumn(fields, new Set(["objects", "predictions"])), null);
});
