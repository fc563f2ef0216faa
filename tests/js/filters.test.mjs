// The words a value filter's chip shows.
import { test } from "node:test";
import assert from "node:assert/strict";

import { describeFilter } from "../../stable_explore/widgets/static/lib/filters.js";

test("each kind of filter reads as the user set it", () => {
  assert.equal(describeFilter({ column: "score", min: 0.25, max: 0.5 }), "score 0.25 – 0.5");
  assert.equal(describeFilter({ column: "score", min: 0.123456, below: 0.2345678 }), "score 0.1235 – <0.2346");
  assert.equal(describeFilter({ column: "score", below: 3 }), "score < 3");
  assert.equal(describeFilter({ column: "score", min: 1 }), "score ≥ 1");
  assert.equal(describeFilter({ column: "score", max: 1 }), "score ≤ 1");
  assert.equal(describeFilter({ column: "name", contains: "cat" }), "name contains “cat”");
  assert.equal(describeFilter({ column: "ok", equals: true }), "ok = true");
});

test("a box filter reads as the kernel says it", async () => {
  const { describeBoxes } = await import("../../stable_explore/widgets/static/lib/filters.js");
  assert.equal(describeFilter({ column: "objects", boxes: true, class: 1, class_name: "dog", max_area: 100 }),
    "objects: a box of dog, area ≤ 100");
  assert.equal(describeBoxes({ column: "objects", max_count: 0 }), "no box");
  assert.equal(describeBoxes({ column: "p", min_score: 0.5, max_score: 0.75, min_area: 4 }), "a box, area ≥ 4, score 0.5 to 0.75");
  assert.equal(describeBoxes({ column: "p", min_count: 3, class: 2 }), "3+ boxes of 2");
  assert.equal(describeBoxes({ column: "p", max_count: 2 }), "at most 2 boxes");
});
