// @ts-check
// The shade of a count in a matrix: none for 0, the full shade for the largest count, and a square root in
// between so the few rows of an off-diagonal cell still show beside a diagonal of hundreds.

/** The strongest shade's opacity: the theme's background still shows through a little. */
export const FULL_SHADE = 0.85;

/**
 * The opacity (0..FULL_SHADE) of the shade behind ``count`` when the largest count is ``max``.
 * @param {number} count
 * @param {number} max
 * @returns {number}
 */
export function heatLevel(count, max) {
  if (!(max > 0) || !(count > 0)) return 0;
  return FULL_SHADE * Math.sqrt(Math.min(count, max) / max);
}

/**
 * Whether text on a shade of this opacity needs to be light (the shade is dark in either theme).
 * @param {number} level
 * @returns {boolean}
 */
export function needsLightText(level) {
  return level >= 0.5;
}

/**
 * The largest count of a matrix (0 when it is empty).
 * @param {number[][]} counts
 * @returns {number}
 */
export function largest(counts) {
  let max = 0;
  for (const row of counts) for (const value of row) if (value > max) max = value;
  return max;
}
