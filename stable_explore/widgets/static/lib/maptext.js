// @ts-check
// What the embedding map writes: the count of selected rows, the legend's entries and the hover tooltip's
// text and place. Pure functions, tested under node (tests/js/maptext.test.mjs); the page puts the text
// in through textContent only.
import { labelRgb } from "./colours.js";

/** @typedef {{key: string, label: number, url: string | null}} Thumb a row's hover card, from the kernel */

/**
 * "1,234 of 5,678 selected" (numbers in the page's locale).
 * @param {number} selected
 * @param {number} n
 */
export function countText(selected, n) {
  return `${selected.toLocaleString()} of ${n.toLocaleString()} selected`;
}

/**
 * The legend's entries: each class's name, its number of points as text, its colour and whether it is
 * hidden.
 * @param {string[]} names
 * @param {number[]} counts
 * @param {Set<number>} hidden
 * @returns {Array<{index: number, name: string, count: string, rgb: import("./colours.js").Rgb, off: boolean}>}
 */
export function legendEntries(names, counts, hidden) {
  return names.map((name, index) => ({
    index, name, count: (counts[index] ?? 0).toLocaleString(), rgb: labelRgb(index), off: hidden.has(index),
  }));
}

/**
 * Show class ``index`` if hidden, hide it if shown (in place).
 * @param {Set<number>} hidden
 * @param {number} index
 */
export function toggleClass(hidden, index) {
  if (hidden.has(index)) hidden.delete(index); else hidden.add(index);
}

/**
 * The tooltip's line: "row 12 · key · class".
 * @param {number} row
 * @param {Thumb} entry
 * @param {string[]} names
 */
export function tipLine(row, entry, names) {
  return `row ${row} · ${entry.key}` + (entry.label >= 0 && names[entry.label] ? ` · ${names[entry.label]}` : "");
}

/**
 * Where (CSS px in the stage) the tooltip of the point at (px, py) goes: right of the cursor, or left of
 * it near the right edge, and never past the bottom.
 * @param {number} px
 * @param {number} py
 * @param {number} width
 * @param {number} height
 * @returns {{left: number, top: number}}
 */
export function tipPlace(px, py, width, height) {
  const left = px + 16 + 160 > width ? px - 176 : px + 16;
  return { left: Math.max(0, left), top: Math.max(0, Math.min(py + 12, height - 140)) };
}

/**
 * Keep ``entry`` for ``row`` in ``thumbs``, dropping the oldest past ``most`` entries.
 * @param {Map<number, Thumb>} thumbs
 * @param {number} row
 * @param {Thumb} entry
 * @param {number} [most]
 */
export function keepThumb(thumbs, row, entry, most = 2000) {
  thumbs.set(row, entry);
  if (thumbs.size > most) thumbs.delete(/** @type {number} */ (thumbs.keys().next().value));
}

/**
 * The typed array of the points' codes the kernel named ("uint8", "uint16", "uint32"; else Uint8Array).
 * @param {string | undefined} name
 */
export function codesType(name) {
  if (name === "uint16") return Uint16Array;
  if (name === "uint32") return Uint32Array;
  return Uint8Array;
}
