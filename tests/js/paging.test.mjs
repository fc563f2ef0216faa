// The shard browser's paging, cursor, keys and clicks, as numbers in and actions out.
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  cellClick, clampCursor, clampPage, gridColumns, isSaveKey, jumpTarget, keyAction, nextLabelFilter, pagerState,
} from "../../stable_explore/widgets/static/lib/paging.js";

test("a page move stays within the pages", () => {
  assert.equal(clampPage(-1, 5), 0);
  assert.equal(clampPage(5, 5), 4);
  assert.equal(clampPage(2, 5), 2);
  assert.equal(clampPage(3, 1), 0);
});

test("the pager counts from 1 and knows its ends", () => {
  assert.deepEqual(pagerState(0, 3), { text: "page 1 of 3", first: true, last: false });
  assert.deepEqual(pagerState(1, 3), { text: "page 2 of 3", first: false, last: false });
  assert.deepEqual(pagerState(2, 3), { text: "page 3 of 3", first: false, last: true });
  assert.deepEqual(pagerState(0, 1), { text: "page 1 of 1", first: true, last: true });
});

test("a typed page number is the page counted from 1; an empty box goes nowhere", () => {
  assert.equal(jumpTarget("7"), 6);
  assert.equal(jumpTarget("1"), 0);
  assert.equal(jumpTarget(""), null);
});

test("a grid row holds as many cells as fit, 6 px apart, at least one", () => {
  assert.equal(gridColumns(640, 154), 4);
  assert.equal(gridColumns(100, 154), 1);
  assert.equal(gridColumns(0, 0), 1);
  assert.equal(gridColumns(70, 0), 10);  // no cell yet: one pixel wide
});

test("the cursor stays on a cell", () => {
  assert.equal(clampCursor(-3, 10), 0);
  assert.equal(clampCursor(12, 10), 9);
  assert.equal(clampCursor(4, 10), 4);
});

test("Ctrl+S and Cmd+S are the notebook's save, with Alt they are not", () => {
  const key = (over) => ({ key: "s", ctrlKey: false, metaKey: false, altKey: false, ...over });
  assert.equal(isSaveKey(key({ ctrlKey: true })), true);
  assert.equal(isSaveKey(key({ metaKey: true, key: "S" })), true);
  assert.equal(isSaveKey(key({ ctrlKey: true, altKey: true })), false);
  assert.equal(isSaveKey(key({})), false);
  assert.equal(isSaveKey(key({ ctrlKey: true, key: "a" })), false);
});

test("arrows move the cursor by a cell or a row, or step the open detail", () => {
  assert.deepEqual(keyAction("ArrowRight", false, 4), { do: "cursor", by: 1 });
  assert.deepEqual(keyAction("ArrowLeft", false, 4), { do: "cursor", by: -1 });
  assert.deepEqual(keyAction("ArrowDown", false, 4), { do: "cursor", by: 4 });
  assert.deepEqual(keyAction("ArrowUp", false, 4), { do: "cursor", by: -4 });
  for (const key of ["ArrowRight", "ArrowDown"]) assert.deepEqual(keyAction(key, true, 4), { do: "detail", step: 1 });
  for (const key of ["ArrowLeft", "ArrowUp"]) assert.deepEqual(keyAction(key, true, 4), { do: "detail", step: -1 });
});

test("the other keys page, open, select, flag, and Esc closes the detail before it clears", () => {
  assert.deepEqual(keyAction("PageDown", false, 4), { do: "page", by: 1 });
  assert.deepEqual(keyAction("PageUp", true, 4), { do: "page", by: -1 });
  assert.deepEqual(keyAction("Enter", false, 4), { do: "open" });
  assert.deepEqual(keyAction(" ", false, 4), { do: "toggle" });
  assert.deepEqual(keyAction("x", false, 4), { do: "flag" });
  assert.deepEqual(keyAction("X", true, 4), { do: "flag" });
  assert.deepEqual(keyAction("Escape", true, 4), { do: "close" });
  assert.deepEqual(keyAction("Escape", false, 4), { do: "clear" });
  for (const key of ["a", "s", "Tab", "Home", "j"]) assert.equal(keyAction(key, false, 4), null);
});

test("a click selects; shift extends, Ctrl or Cmd toggles, and only a plain click moves an open detail", () => {
  const click = (over) => ({ shiftKey: false, ctrlKey: false, metaKey: false, ...over });
  assert.deepEqual(cellClick(click({}), true), { shift: false, toggle: false, follow: true });
  assert.deepEqual(cellClick(click({}), false), { shift: false, toggle: false, follow: false });
  assert.deepEqual(cellClick(click({ shiftKey: true }), true), { shift: true, toggle: false, follow: false });
  assert.deepEqual(cellClick(click({ ctrlKey: true }), true), { shift: false, toggle: true, follow: false });
  assert.deepEqual(cellClick(click({ metaKey: true }), false), { shift: false, toggle: true, follow: false });
});

test("a label chip keeps its class alone, and a second click shows every class again", () => {
  assert.deepEqual(nextLabelFilter([], 2, false), [2]);
  assert.deepEqual(nextLabelFilter([0, 3], 2, false), [2]);
  assert.deepEqual(nextLabelFilter([2], 2, false), []);
});

test("a label chip with a modifier adds or removes its class, in order", () => {
  assert.deepEqual(nextLabelFilter([5, 1], 3, true), [1, 3, 5]);
  assert.deepEqual(nextLabelFilter([1, 3, 5], 3, true), [1, 5]);
  assert.deepEqual(nextLabelFilter([10], 9, true), [9, 10]);  // numbers, not text: 9 before 10
});
