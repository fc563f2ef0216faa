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
 * @property {boolean} [boxes] a box filter of a Boxes column (the browser's where_boxes)
 * @property {number} [class]
 * @property {string} [class_name]
 * @property {number} [min_area]
 * @property {number} [max_area]
 * @property {number} [min_aspect]
 * @property {number} [max_aspect]
 * @property {number} [min_score]
 * @property {number} [max_score]
 * @property {number} [min_count]
 * @property {number} [max_count]
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
  if (spec.boxes) return `${spec.column}: ${describeBoxes(spec)}`;
  if (spec.min !== undefined && spec.below !== undefined) parts.push(`${number(spec.min)} – <${number(spec.below)}`);
  else if (spec.below !== undefined) parts.push(`< ${number(spec.below)}`);
  else if (spec.min !== undefined && spec.max !== undefined) parts.push(`${spec.min} – ${spec.max}`);
  else if (spec.min !== undefined) parts.push(`≥ ${spec.min}`);
  else if (spec.max !== undefined) parts.push(`≤ ${spec.max}`);
  if (spec.equals !== undefined) parts.push(`= ${spec.equals}`);
  if (spec.contains !== undefined) parts.push(`contains “${spec.contains}”`);
  return `${spec.column} ${parts.join(", ")}`;
}

/**
 * A box filter in words, as the kernel says it: "a box of dog, area ≤ 100, score ≥ 0.5", "no box".
 * @param {FilterSpec} spec
 * @returns {string}
 */
export function describeBoxes(spec) {
  /** @param {number} value */
  const number = (value) => Number(value.toPrecision(4));
  const hi = spec.max_count;
  const lo = spec.min_count ?? (hi !== undefined ? 0 : 1);
  let head;
  if (hi === 0) head = "no box";
  else if (hi === undefined) head = lo === 1 ? "a box" : `${lo}+ boxes`;
  else head = lo === 0 ? `at most ${hi} boxes` : `${lo} to ${hi} boxes`;
  if (spec.class !== undefined) head += ` of ${spec.class_name ?? spec.class}`;
  const parts = [head];
  for (const name of /** @type {const} */ (["area", "aspect", "score"])) {
    const low = spec[`min_${name}`];
    const high = spec[`max_${name}`];
    if (low !== undefined && high !== undefined) parts.push(`${name} ${number(low)} to ${number(high)}`);
    else if (low !== undefined) parts.push(`${name} ≥ ${number(low)}`);
    else if (high !== undefined) parts.push(`${name} ≤ ${number(high)}`);
  }
  return parts.join(", ");
}
