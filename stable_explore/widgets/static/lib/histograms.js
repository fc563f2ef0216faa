// @ts-check
// The histogram panel's bars: their heights, what each bar's range reads, and the names of the Boxes
// columns' box by box histograms.

/** The measures of a Boxes column's histograms, in the order the panel shows them, and their names. */
export const BOX_MEASURES = /** @type {[string, string][]} */ ([
  ["area", "area"],
  ["aspect", "aspect w/h"],
  ["score", "score"],
  ["count", "boxes per image"],
]);

/**
 * Each bar's height in pixels: the tallest is ``px``, any bar with a count at least 2 px, an empty one 0.
 * @param {number[]} counts
 * @param {number} px
 * @returns {number[]}
 */
export function barHeights(counts, px) {
  const peak = Math.max(1, ...counts);
  return counts.map((count) => (count ? Math.max(2, Math.round((px * count) / peak)) : 0));
}

/**
 * What bar ``index`` covers, with 4 significant digits: "10 – <20" (bars are half-open), the last "20 – 30".
 * @param {number[]} edges the bars' ``counts.length + 1`` edges
 * @param {number} index
 * @returns {string}
 */
export function binText(edges, index) {
  const number = (/** @type {number} */ value) => Number(value.toPrecision(4));
  const lo = number(edges[index]);
  const hi = number(edges[index + 1]);
  return index === edges.length - 2 ? `${lo} – ${hi}` : `${lo} – <${hi}`;
}

/**
 * The name of a box measure's histogram: the area's unit is px² for pixel boxes, a fraction of the image for normalized ones.
 * @param {string} what
 * @param {boolean} normalized
 * @returns {string}
 */
export function measureName(what, normalized) {
  if (what === "area") return normalized ? "area (of the image)" : "area (px²)";
  const found = BOX_MEASURES.find(([key]) => key === what);
  return found ? found[1] : what;
}
