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
