// The "similar rows" progress line's words.
import { test } from "node:test";
import assert from "node:assert/strict";

import { hashingRuns, hashingText } from "../../stable_explore/widgets/static/lib/hashing.js";

test("a running hashing says rows hashed of all, a cancelled one that nothing was kept", () => {
  assert.equal(
    hashingText({ state: "running", done: 3072, total: 100000, by: "the phash of 'image'" }),
    "similar rows: hashing images for the phash of 'image': 3,072 / 100,000 rows",
  );
  assert.equal(hashingText({ state: "cancelled", done: 1024, total: 5000 }), "similar rows: hashing cancelled at 1,024 / 5,000 rows; nothing kept");
  assert.equal(hashingText({ state: "done", done: 5000, total: 5000 }), "");
  assert.equal(hashingText({}), "");
  assert.ok(hashingRuns({ state: "running" }));
  assert.ok(!hashingRuns({ state: "done" }));
  assert.ok(!hashingRuns(null));
});
