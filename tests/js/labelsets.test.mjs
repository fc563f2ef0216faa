// Ground truth and predictions: the threshold applies to predictions only, the detail's panes, outcome colours.
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  canSideBySide, detailPanes, isPrediction, outcomeLegend, outcomeOf, OUTCOME_COLOURS, shownBoxes,
} from "../../stable_explore/widgets/static/lib/labelsets.js";

const truth = { name: "objects", kind: "boxes", role: "truth" };
const preds = { name: "predictions", kind: "boxes", role: "predictions" };
const mask = { name: "mask", kind: "mask" };

/** @type {[number, number, number, number, number, number | null][]} */
const scored = [[0, 0, 1, 1, 0, 0.9], [0, 0, 1, 1, 1, 0.2], [0, 0, 1, 1, 2, null]];

test("the threshold hides a prediction scored below it and keeps each box's index", () => {
  assert.deepEqual(shownBoxes(preds, scored, 0.5).map((b) => b.index), [0, 2]);
  assert.deepEqual(shownBoxes(preds, scored, 0).map((b) => b.index), [0, 1, 2]);
});

test("the threshold never hides ground truth, even boxes that carry a score", () => {
  assert.deepEqual(shownBoxes(truth, scored, 0.95).map((b) => b.index), [0, 1, 2]);
  assert.deepEqual(shownBoxes(truth, null, 0.5), []);
});

test("a column is a prediction by its role only", () => {
  assert.equal(isPrediction(preds), true);
  assert.equal(isPrediction(truth), false);
  assert.equal(isPrediction({ name: "predictions", kind: "boxes" }), false);
});

test("overlay draws every shown column over one image", () => {
  assert.deepEqual(detailPanes([mask, preds, truth], new Set(), "overlay"), [["mask", "predictions", "objects"]]);
  assert.deepEqual(detailPanes([mask, preds, truth], new Set(["mask"]), "overlay"), [["predictions", "objects"]]);
});

test("side by side puts ground truth first, with the masks, then predictions", () => {
  assert.deepEqual(detailPanes([mask, preds, truth], new Set(), "side"), [["mask", "objects"], ["predictions"]]);
});

test("side by side with one Boxes column shown is one pane", () => {
  assert.deepEqual(detailPanes([preds, truth], new Set(["predictions"]), "side"), [["objects"]]);
  assert.equal(canSideBySide([truth, mask]), false);
  assert.equal(canSideBySide([truth, preds]), true);
});

test("a box's outcome is looked up by column and index", () => {
  const outcomes = { predictions: ["tp", "fp"], objects: ["tp", "fn"] };
  assert.equal(outcomeOf(outcomes, "predictions", 1), "fp");
  assert.equal(outcomeOf(outcomes, "objects", 1), "fn");
  assert.equal(outcomeOf(outcomes, "mask", 0), null);
  assert.equal(outcomeOf(null, "objects", 0), null);
  assert.equal(outcomeOf(outcomes, "objects", 5), null);
});

test("the outcome legend lists what is seen, once each, in a fixed order, each in its colour", () => {
  const legend = outcomeLegend(["fn", "tp", "fn"]);
  assert.deepEqual(legend.map((l) => l.outcome), ["tp", "fn"]);
  assert.equal(legend[1].colour, OUTCOME_COLOURS.fn);
  assert.notEqual(OUTCOME_COLOURS.tp, OUTCOME_COLOURS.fp);
});
