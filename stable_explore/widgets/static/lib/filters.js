// @ts-check
// How the browser says a value filter in a chip.

/**
 * @typedef {object} FilterSpec one of the kernel's ``field_filters``
 * @property {string} column
 * @property {number} [min]
 * @property {number} [max]
 * @property {number} [below] a histogram bar's upper edge (excluded)
 * @property {string | number | boolean} [equals]
 * @property {string} [contains]
 */

/**
 * The chip text of a filter: "score 0.25 – <0.5", "name contains “cat”".
 * @param {FilterSpec} spec
 * @returns {string}
 */
export function describeFilter(spec) {
  const parts = [];
  /** @param {number} value */
  const number = (value) => Number(value.toPrecision(4));
  if (spec.min !== undefined && spec.below !== undefined) parts.push(`${number(spec.min)} – <${number(spec.below)}`);
  else if (spec.below !== undefined) parts.push(`< ${number(spec.below)}`);
  else if (spec.min !== undefined && spec.max !== undefined) parts.push(`${spec.min} – ${spec.max}`);
  else if (spec.min !== undefined) parts.push(`≥ ${spec.min}`);
  else if (spec.max !== undefined) parts.push(`≤ ${spec.max}`);
  if (spec.equals !== undefined) parts.push(`= ${spec.equals}`);
  if (spec.contains !== undefined) parts.push(`contains “${spec.contains}”`);
  return `${spec.column} ${parts.join(", ")}`;
}
