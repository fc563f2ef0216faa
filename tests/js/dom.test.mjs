// Images from the kernel's buffers: a view into a larger message is encoded alone.
import { test } from "node:test";
import assert from "node:assert/strict";

import { toDataUrl, typedCopy } from "../../stable_explore/widgets/static/lib/dom.js";

test("a data URL holds exactly the view's bytes", () => {
  const message = new Uint8Array([9, 9, 0xff, 0xd8, 0xff, 9]);
  const view = new DataView(message.buffer, 2, 3);
  assert.equal(toDataUrl(view, "image/jpeg"), `data:image/jpeg;base64,${Buffer.from([0xff, 0xd8, 0xff]).toString("base64")}`);
});

test("a large image is encoded whole", () => {
  const bytes = new Uint8Array(200000).map((_, i) => i % 251);
  const url = toDataUrl(new DataView(bytes.buffer), "image/png");
  assert.deepEqual(Buffer.from(url.split(",")[1], "base64"), Buffer.from(bytes));
});

test("typedCopy copies a view's bytes into an array of its own", () => {
  const message = new Int32Array([7, 4, 9, 120]);
  const copy = typedCopy(Int32Array, new DataView(message.buffer, 4, 8));
  assert.deepEqual(Array.from(copy), [4, 9]);
  message[1] = 0;
  assert.equal(copy[0], 4);
});
