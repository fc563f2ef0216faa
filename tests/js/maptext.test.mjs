// What the embedding map writes: count, legend entries, tooltip line and place, the thumbnail cache.
import { test } from "node:test";
import assert from "node:assert/strict";

import { labelRgb } from "../../stable_explore/widgets/static/lib/colours.js";
import {
  codesType, countText, keepThumb, legendEntries, tipLine, tipPlace, toggleClass,
} from "../../stable_explore/widgets/static/lib/maptext.js";

test("the count says how many of all the rows are selected", () => {
  assert.equal(countText(3, 1797), `3 of ${(1797).toLocaleString()} selected`);
  assert.equal(countText(0, 0), "0 of 0 selected");
});

test("the legend has one entry a class: its colour, its count (0 when missing) and whether hidden", () => {
  const hidden = new Set([1]);
  const entries = legendEntries(["cat", "dog", "bird"], [5, 1234], hidden);
  assert.deepEqual(entries.map((e) => [e.index, e.name, e.off]), [[0, "cat", false], [1, "dog", true], [2, "bird", false]]);
  assert.equal(entries[1].count, (1234).toLocaleString());
  assert.equal(entries[2].count, "0");
  assert.deepEqual(entries[2].rgb, labelRgb(2));
  toggleClass(hidden, 1);
  toggleClass(hidden, 2);
  assert.deepEqual([...hidden], [2]);
});

test("the tooltip names the row, its key and its class when it has one", () => {
  const names = ["cat", "dog"];
  assert.equal(tipLine(7, { key: "img-7", label: 1, url: null }, names), "row 7 · img-7 · dog");
  assert.equal(tipLine(7, { key: "img-7", label: -1, url: null }, names), "row 7 · img-7");
  assert.equal(tipLine(7, { key: "img-7", label: 9, url: null }, names), "row 7 · img-7");
});

test("the tooltip goes right of the cursor, left of it near the right edge, and stays inside", () => {
  assert.deepEqual(tipPlace(100, 50, 600, 480), { left: 116, top: 62 });
  assert.deepEqual(tipPlace(500, 50, 600, 480), { left: 324, top: 62 });
  assert.deepEqual(tipPlace(100, 470, 600, 480), { left: 116, top: 340 });
  assert.deepEqual(tipPlace(10, 10, 150, 100), { left: 0, top: 0 });
});

test("the thumbnail cache keeps the newest entries only", () => {
  const thumbs = new Map();
  for (let row = 0; row < 5; row++) keepThumb(thumbs, row, { key: `k${row}`, label: 0, url: null }, 3);
  assert.deepEqual([...thumbs.keys()], [2, 3, 4]);
});

test("the codes' array type follows the kernel's name, bytes by default", () => {
  assert.equal(codesType("uint16"), Uint16Array);
  assert.equal(codesType("uint32"), Uint32Array);
  assert.equal(codesType("uint8"), Uint8Array);
  assert.equal(codesType(undefined), Uint8Array);
});
