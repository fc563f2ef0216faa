// Class colours stay readable whatever the hue, and the map's match the browser's hues.
import { test } from "node:test";
import assert from "node:assert/strict";

import { classColours, contrast, hslToRgb, labelColour, labelRgb, packed, rgbText } from "../../stable_explore/widgets/static/lib/colours.js";

test("white text on every class badge is at least 4.5:1 (WCAG AA)", () => {
  for (let index = 0; index < 500; index++) {
    const { badgeRgb } = classColours(index);
    assert.ok(contrast(badgeRgb, [1, 1, 1]) >= 4.5, `class ${index}: ${contrast(badgeRgb, [1, 1, 1])}`);
  }
});

test("the dark theme's light shade stands out against near-black", () => {
  for (let index = 0; index < 500; index++) {
    const { lightRgb } = classColours(index);
    assert.ok(contrast(lightRgb, [0.07, 0.07, 0.07]) >= 4.5, `class ${index}`);
  }
});

test("neighbouring classes get different colours", () => {
  for (let index = 0; index < 100; index++) assert.notEqual(labelColour(index), labelColour(index + 1));
});

test("the map paints a class in its hue and an unlabelled point grey", () => {
  assert.deepEqual(labelRgb(-1), [128, 128, 128]);
  assert.deepEqual(labelRgb(0), hslToRgb(0, 0.62, 0.42).map((c) => Math.round(255 * c)));
  assert.equal(rgbText([1, 0, 0.5]), "rgb(255, 0, 128)");
  assert.equal(packed([1, 2, 3]), 0xff030201);  // little-endian ABGR: red in the lowest byte
});
