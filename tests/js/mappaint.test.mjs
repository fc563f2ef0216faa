// The map's paint passes into a small pixel buffer: colours by class, hidden classes left out, the
// selection in full colour over the faded rest, and a redraw from the layer equal to a direct one.
import { test } from "node:test";
import assert from "node:assert/strict";

import { labelRgb, packed } from "../../stable_explore/widgets/static/lib/colours.js";
import {
  colourTables, fadedRgb, mapPalette, paintStages, runStages, shownCodes,
} from "../../stable_explore/widgets/static/lib/mappaint.js";

const W = 40, H = 30;
const background = [250, 250, 250];

function makeScene(points, { hidden = [], selected = [] } = {}) {
  // points: [x, y, label] in pixels (view: identity, one device pixel a CSS pixel); 5 px squares
  const xy = Float32Array.from(points.flatMap(([x, y]) => [x, y]));
  const codes = Uint8Array.from(points.map(([, , label]) => label + 1));
  const palette = mapPalette(3, background);
  return {
    xy, codes, n: points.length, view: { sx: 1, sy: 1, ox: 0, oy: 0 }, dpr: 1, palette, background,
    shown: shownCodes(hidden, 3), selectedRows: Int32Array.from(selected), layer: null,
  };
}

function paintDirect(scene) {
  const target = new Uint32Array(W * H);
  runStages(paintStages(scene, target, W, H, true, true));
  return target;
}

function paintLayered(scene, layer) {
  const target = new Uint32Array(W * H);
  const fresh = !layer;
  scene.layer = layer || { cells: new Uint32Array(W * H), w: W, h: H, codes: scene.codes, shown: scene.shown, dpr: 1,
    view: scene.view, whole: false };
  runStages(paintStages(scene, target, W, H, fresh, false));
  return target;
}

const at = (pixels, x, y) => pixels[y * W + x];

test("each point is a square of its class's colour on the background; no label is grey", () => {
  const pixels = paintDirect(makeScene([[5, 5, 0], [20, 5, 2], [30, 20, -1]]));
  assert.equal(at(pixels, 5, 5), packed(labelRgb(0)));
  assert.equal(at(pixels, 3, 3), packed(labelRgb(0))); // 5 px wide, centred: 3..7
  assert.equal(at(pixels, 8, 5), packed(background));
  assert.equal(at(pixels, 20, 6), packed(labelRgb(2)));
  assert.equal(at(pixels, 30, 20), packed([128, 128, 128]));
  assert.equal(at(pixels, 0, 29), packed(background));
});

test("a hidden class is not drawn", () => {
  const pixels = paintDirect(makeScene([[5, 5, 0], [20, 5, 1]], { hidden: [1] }));
  assert.equal(at(pixels, 5, 5), packed(labelRgb(0)));
  assert.equal(at(pixels, 20, 5), packed(background));
});

test("with a selection the others fade and the selected rows are drawn on top in full colour", () => {
  // row 1 is drawn after row 0 and overlaps it; selecting row 0 brings it back on top
  const scene = makeScene([[10, 10, 0], [12, 10, 1], [30, 20, 2]], { selected: [0] });
  const pixels = paintDirect(scene);
  assert.equal(at(pixels, 12, 10), packed(labelRgb(0)));
  assert.equal(at(pixels, 14, 10), packed(fadedRgb(labelRgb(1), background)));
  assert.equal(at(pixels, 30, 20), packed(fadedRgb(labelRgb(2), background)));
});

test("the layer's redraw is the direct one, and a new selection redraws from the layer without the points", () => {
  const points = Array.from({ length: 60 }, (_, i) => [(i * 7) % W, (i * 11) % H, (i % 4) - 1]);
  const scene = makeScene(points);
  const first = paintLayered(scene, null);
  assert.deepEqual(first, paintDirect(makeScene(points)));
  assert.ok(scene.layer.whole);
  const layer = scene.layer;
  scene.selectedRows = Int32Array.from([3, 17, 40]);
  const stages = paintStages(scene, new Uint32Array(W * H), W, H, false, false);
  assert.ok(!stages.some(([count]) => count === points.length), "no pass over every point");
  const again = paintLayered(scene, layer);
  assert.deepEqual(again, paintDirect(makeScene(points, { selected: [3, 17, 40] })));
});

test("the colour tables: background at 0, no label at 1, class c at c + 2", () => {
  const palette = mapPalette(2, background);
  const { full, faded } = colourTables(palette, background);
  assert.deepEqual([...full], [packed(background), packed([128, 128, 128]), packed(labelRgb(0)), packed(labelRgb(1))]);
  assert.equal(faded[0], full[0]);
  assert.equal(faded[3], packed(fadedRgb(labelRgb(1), background)));
});

test("codes past the classes are drawn, as no label's grey is", () => {
  const shown = shownCodes([0, 7, -1], 3);
  assert.equal(shown.length, 256);
  assert.deepEqual([...shown.subarray(0, 5)], [1, 0, 1, 1, 1]);
});
