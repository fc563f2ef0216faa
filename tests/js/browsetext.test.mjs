// The shard browser's words: status line, shards, detail pane, histogram bins, box editor, hints.
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  boxEditorText, detailMarksText, detailTitle, evaluationButton, fitFactor, imageInfo, labelText, numberBin, overlayWhat,
  pendingLine, rangeHints, relabelText, searchHint, shardText, similarWhy, statusFades, statusSummary, statusMessage,
} from "../../stable_explore/widgets/static/lib/browsetext.js";

const n = (value) => value.toLocaleString();  // the page writes counts in the browser's own digits

test("a shard reads its rows, and its range of the dataset's rows when known", () => {
  assert.equal(shardText({ index: 0, rows: 1500 }), `shard 0: ${n(1500)} rows`);
  assert.equal(shardText({ index: 2, rows: 500, start: 1000, stop: 1500 }), `shard 2: rows ${n(1000)}–${n(1499)} (500)`);
});

test("the status line shows the counts, then a timed-out request before the last action's message", () => {
  assert.equal(statusSummary(1234, 2, 0, ""), `${n(1234)} rows · 2 selected · 0 flagged`);
  assert.equal(statusSummary(10, 0, 3, "saved v2"), "10 rows · 0 selected · 3 flagged · saved v2");
  assert.equal(statusMessage("error: timeout", "saved", "saved"), "error: timeout");
  assert.equal(statusMessage("", "saved", "saved"), "saved");
  assert.equal(statusMessage("", "", "saved"), "");  // faded: the counts alone
  assert.equal(statusMessage("", "saved", "flagged 2"), "");  // a status not yet taken is not shown stale
});

test("an action's message fades, an error stays until the next action", () => {
  assert.equal(statusFades("saved v2"), true);
  assert.equal(statusFades("error: no such column"), false);
  assert.equal(statusFades(""), false);
});

test("the pending line and the search hint", () => {
  assert.equal(pendingLine(""), "no pending edits");
  assert.equal(pendingLine("2 drops"), "pending: 2 drops");
  assert.deepEqual(searchHint("keys, names"), { placeholder: "search keys, names…", title: "rows whose keys, names contain this text (case-insensitive)" });
  assert.deepEqual(searchHint(""), { placeholder: "search keys…", title: "rows whose keys contain this text (case-insensitive)" });
});

test("a label badge names a known class, a dash for none, nothing without classes", () => {
  assert.deepEqual(labelText(1, ["cat", "dog"]), { text: "dog", known: true });
  assert.deepEqual(labelText(-1, ["cat", "dog"]), { text: "—", known: false });
  assert.deepEqual(labelText(7, ["cat", "dog"]), { text: "—", known: false });
  assert.deepEqual(labelText(0, []), { text: "", known: false });
  assert.equal(relabelText(1, ["cat", "dog"]), "→ dog");
  assert.equal(relabelText(4, ["cat"]), "→ 4");
});

test("the detail's marks say what is pending and where the row stands", () => {
  assert.equal(detailMarksText({ pending_label: 0, dropped: true, position: 4, shown: 20 }, ["cat"]),
    "pending relabel → cat · pending drop · 5 of 20 shown");
  assert.equal(detailMarksText({ pending_label: null, position: -1, shown: 20 }, []), "not among the 20 rows the filters keep");
  assert.equal(detailMarksText({ pending_label: 3, position: 0, shown: 1 }, []), "pending relabel → 3 · 1 of 1 shown");
});

test("the detail's title and image line", () => {
  assert.equal(detailTitle({ row: 12, key: "a/b", shard: 1, shard_row: 2 }), "row 12 · key a/b · shard 1, row 2 of that file");
  const image = { width: 2000, height: 1000, format: "JPEG", bytes: 345 };
  assert.equal(imageInfo(image, 0, 0, "fit"), "2000 x 1000 JPEG · 345 bytes · fit");
  assert.equal(imageInfo(image, 1024, 512, "fit"), "2000 x 1000 JPEG · 345 bytes · sent at 1024 x 512 · fit");
  assert.equal(imageInfo(image, 2000, 1000, "1:1"), "2000 x 1000 JPEG · 345 bytes · 1:1");
  assert.equal(imageInfo({ format: "PNG" }, 8, 8, "fit"), "PNG · 0 bytes · fit");
});

test("a small image is enlarged by a whole factor to fit, shared between side-by-side panes", () => {
  assert.equal(fitFactor(1, 8, 8), 48);
  assert.equal(fitFactor(2, 8, 8), 24);
  assert.equal(fitFactor(1, 300, 200), 1);  // below 2: shown as it is
  assert.equal(fitFactor(1, 0, 0), 384);  // not decoded yet
});

test("similar rows say what they compare by, or why there are none", () => {
  assert.equal(similarWhy("embedding", ""), "show this row and the rows most like it, closest first, by embedding");
  assert.equal(similarWhy("", "no images"), "no similar rows: no images");
});

test("an evaluation's buttons name their rows and count", () => {
  assert.deepEqual(evaluationButton("fp", 3, "boxes"), { text: "rows with FP (3)", title: "show the rows with FP" });
  assert.equal(evaluationButton("mistakes", 2, "boxes").title, "rows with a false positive, the highest-scoring false positive first");
  assert.equal(evaluationButton("mistakes", 2, "classes").title, "rows predicted wrong, the model's most confident first");
  assert.equal(evaluationButton("mistakes", 2, "classes").text, "most confident mistakes (2)");
  assert.equal(evaluationButton("other", 1, "boxes").text, "other (1)");
});

test("a number histogram's bins are half-open but the last, bars scaled to the tallest", () => {
  const field = { min: 0, max: 1, edges: [0, 0.25, 0.5, 0.75, 1] };
  const counts = [10, 0, 1, 5];
  assert.deepEqual(numberBin(field, counts, 0), { range: "0 – <0.25", height: 20 });
  assert.deepEqual(numberBin(field, counts, 1), { range: "0.25 – <0.5", height: 0 });
  assert.deepEqual(numberBin(field, counts, 2), { range: "0.5 – <0.75", height: 2 });  // at least 2 px when counted
  assert.deepEqual(numberBin(field, counts, 3), { range: "0.75 – 1", height: 10 });
  assert.deepEqual(numberBin({ min: 1.23456, max: 9 }, [1], 0), { range: "1.235 – 9", height: 20 });  // no edges: min and max
});

test("the overlay switches and the box editor say what they do", () => {
  assert.equal(overlayWhat("mask"), "mask");
  assert.equal(overlayWhat("keypoints"), "keypoints");
  assert.equal(overlayWhat("boxes"), "boxes");
  assert.equal(boxEditorText(true, "gt", null), "drag over the image: a new gt box of the class chosen");
  assert.equal(boxEditorText(true, null, null), "switch a Boxes column on to draw");
  assert.equal(boxEditorText(false, "gt", { field: "pred", index: 3 }), "pred box 3 selected");
  assert.equal(boxEditorText(false, "gt", null), "click a box to relabel or delete it");
});

test("the range inputs hint a Boxes column's area, a number's range, or nothing known", () => {
  assert.deepEqual(rangeHints({ normalized: true }, "boxes"), { minPlaceholder: "min area", maxPlaceholder: "max area",
    minTitle: "a box's area (width x height) of at least (fraction of the image)",
    maxTitle: "a box's area (width x height) of at most (fraction of the image): \"smaller than\"" });
  assert.match(rangeHints({}, "boxes").minTitle, /\(px²\)$/);
  assert.deepEqual(rangeHints({ min: 0.123456, max: 149.54321 }, "number"),
    { minPlaceholder: "min 0.1235", maxPlaceholder: "max 149.5", minTitle: "at least", maxTitle: "at most" });
  assert.deepEqual(rangeHints(undefined, ""), { minPlaceholder: "min", maxPlaceholder: "max", minTitle: null, maxTitle: null });
});
