// @ts-check
// The shard browser's paging, cursor and keys: which page a button or a typed number goes to, where the
// cursor lands, and what a key press does, computed from numbers alone (the view applies them).

/**
 * The page a move to ``page`` lands on: within 0 .. pages - 1.
 * @param {number} page
 * @param {number} pages
 * @returns {number}
 */
export function clampPage(page, pages) {
  return Math.max(0, Math.min(pages - 1, page));
}

/**
 * The pager's words and which ends are reached.
 * @param {number} page zero-based
 * @param {number} pages
 * @returns {{text: string, first: boolean, last: boolean}}
 */
export function pagerState(page, pages) {
  return { text: `page ${page + 1} of ${pages}`, first: page <= 0, last: page >= pages - 1 };
}

/**
 * The zero-based page a "go to" box asks for (it shows pages from 1), or null when it is empty.
 * @param {string} typed
 * @returns {number | null}
 */
export function jumpTarget(typed) {
  return typed ? Number(typed) - 1 : null;
}

/**
 * How many cells a row of the grid holds (arrow up and down move by that many); cells sit 6 px apart.
 * @param {number} gridWidth
 * @param {number} cellWidth 0 when there is no cell
 * @returns {number}
 */
export function gridColumns(gridWidth, cellWidth) {
  return Math.max(1, Math.round(gridWidth / ((cellWidth || 1) + 6)));
}

/**
 * The cursor's index moved to ``index``, kept on one of ``count`` cells.
 * @param {number} index
 * @param {number} count at least 1
 * @returns {number}
 */
export function clampCursor(index, count) {
  return Math.max(0, Math.min(count - 1, index));
}

/**
 * Whether a key press is Ctrl+S / Cmd+S (saving the notebook, which the browser lets through).
 * @param {{key: string, ctrlKey: boolean, metaKey: boolean, altKey: boolean}} event
 * @returns {boolean}
 */
export function isSaveKey(event) {
  return (event.ctrlKey || event.metaKey) && !event.altKey && (event.key === "s" || event.key === "S");
}

/**
 * @typedef {{do: "detail", step: number}
 *   | {do: "cursor", by: number}
 *   | {do: "page", by: number}
 *   | {do: "open"}
 *   | {do: "toggle"}
 *   | {do: "flag"}
 *   | {do: "close"}
 *   | {do: "clear"}} KeyAction
 */

/**
 * What a key does in the browser: with the detail open, arrows step through the rows it shows; otherwise
 * they move the grid's cursor (up and down by a row of ``columns`` cells). Null for a key it leaves alone.
 * @param {string} key ``KeyboardEvent.key``
 * @param {boolean} detailOpen
 * @param {number} columns
 * @returns {KeyAction | null}
 */
export function keyAction(key, detailOpen, columns) {
  switch (key) {
    case "ArrowRight":
    case "ArrowDown":
      return detailOpen ? { do: "detail", step: 1 } : { do: "cursor", by: key === "ArrowDown" ? columns : 1 };
    case "ArrowLeft":
    case "ArrowUp":
      return detailOpen ? { do: "detail", step: -1 } : { do: "cursor", by: -(key === "ArrowUp" ? columns : 1) };
    case "PageDown":
      return { do: "page", by: 1 };
    case "PageUp":
      return { do: "page", by: -1 };
    case "Enter":
      return { do: "open" };
    case " ":
      return { do: "toggle" };
    case "x":
    case "X":
      return { do: "flag" };
    case "Escape":
      return detailOpen ? { do: "close" } : { do: "clear" };
    default:
      return null;
  }
}

/**
 * What a click on a cell asks of the kernel's selection: shift extends a range from the last click,
 * Ctrl / Cmd adds or removes the one row; an open detail pane follows a plain click only.
 * @param {{shiftKey: boolean, ctrlKey: boolean, metaKey: boolean}} event
 * @param {boolean} detailOpen
 * @returns {{shift: boolean, toggle: boolean, follow: boolean}}
 */
export function cellClick(event, detailOpen) {
  const shift = event.shiftKey;
  const toggle = event.ctrlKey || event.metaKey;
  return { shift, toggle, follow: detailOpen && !shift && !toggle };
}

/**
 * The label filter after a click on class ``index``'s chip: with a modifier the class is added or
 * removed; a plain click keeps that class alone, or (when it was the only one) every class again.
 * @param {number[]} current
 * @param {number} index
 * @param {boolean} modifier Ctrl, Cmd or Shift held
 * @returns {number[]} ascending
 */
export function nextLabelFilter(current, index, modifier) {
  const chosen = new Set(current);
  if (modifier) {
    if (chosen.has(index)) chosen.delete(index); else chosen.add(index);
  } else if (chosen.size === 1 && chosen.has(index)) {
    chosen.clear();
  } else {
    chosen.clear();
    chosen.add(index);
  }
  return [...chosen].sort((a, b) => a - b);
}
