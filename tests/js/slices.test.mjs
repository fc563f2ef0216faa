// Long work in slices: every stage runs in order, over every row, and done() once.
import { test } from "node:test";
import assert from "node:assert/strict";

import { SLICE_ROWS, sliced } from "../../stable_explore/widgets/static/lib/slices.js";

test("stages run in order over all their rows, in slices, then done once", async () => {
  const seen = [];
  const n = 3 * SLICE_ROWS + 5;
  const covered = new Uint8Array(n);
  await new Promise((resolve) => {
    sliced([[n, (from, to) => { seen.push(["a", from, to]); covered.fill(1, from, to); }], [1, () => seen.push(["b"])]], (work) => {
      assert.ok(work >= 0);
      resolve();
    });
  });
  assert.ok(covered.every((c) => c === 1));
  assert.deepEqual(seen.at(-1), ["b"]);
  assert.ok(seen.filter((s) => s[0] === "a").every(([, from, to]) => to - from <= SLICE_ROWS));
});

test("finish() runs what is left at once; cancel() drops it", () => {
  let rows = 0;
  let done = 0;
  const job = sliced([[10 * SLICE_ROWS, (from, to) => { rows += to - from; }]], () => { done++; });
  assert.equal(job.running, true);
  job.finish();
  assert.equal(rows, 10 * SLICE_ROWS);
  assert.equal(done, 1);
  assert.equal(job.running, false);
  let ran = 0;
  const dropped = sliced([[SLICE_ROWS, () => { ran++; }]], () => { ran += 100; });
  dropped.cancel();
  dropped.finish();
  assert.equal(ran, 0);
});
