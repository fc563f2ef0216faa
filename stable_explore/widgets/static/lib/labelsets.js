// @ts-check
// Ground truth and predictions in one view: which boxes a label column shows at a score threshold, which
// panes the detail draws (every column over one image, or one image per Boxes column side by side), and
// the colours of an evaluation's outcomes (true positive, false positive, false negative).

/** @typedef {[number, number, number, number, number, number | null]} SentBox x0, y0, x1, y1 (fractions), class, score */
/** @typedef {{name: string, kind: string, role?: string}} LabelField */

/** The outcomes an evaluation gives each box, in the order a legend lists them. */
export const OUTCOMES = ["tp", "fp", "fn", "ignored"];

/** Their names in a legend. */
export const OUTCOME_NAMES = /** @type {Record<string, string>} */ ({
  tp: "true positive",
  fp: "false positive",
  fn: "false negative (missed)",
  ignored: "ignored (crowd)",
});

/** Their colours: the same in the light and dark themes, apart from the class colours' hues. */
export const OUTCOME_COLOURS = /** @type {Record<string, string>} */ ({
  tp: "#2fbf4a",
  fp: "#ff2d55",
  fn: "#ff9f0a",
  ignored: "#9a9a9a",
});

/**
 * Whether a label column holds a model's predictions (its boxes dashed, the score threshold applies to it).
 * @param {LabelField} field
 * @returns {boolean}
 */
export function isPrediction(field) {
  return field.role === "predictions";
}

/**
 * The boxes a column shows at a score threshold: a predictions column keeps the boxes scored at or above it
 * (and the unscored); any other column (ground truth) keeps every box, whatever its score.
 * Each box comes with its index among the row's boxes (what an edit and an outcome refer to).
 * @param {LabelField} field
 * @param {SentBox[] | null | undefined} boxes
 * @param {number} threshold
 * @returns {{box: SentBox, index: number}[]}
 */
export function shownBoxes(field, boxes, threshold) {
  const all = (boxes || []).map((box, index) => ({ box, index }));
  if (!isPrediction(field)) return all;
  return all.filter(({ box }) => box[5] === null || box[5] === undefined || box[5] >= threshold);
}

/**
 * The panes of the detail view: ``"overlay"`` draws every shown column over one image; ``"side"`` gives each
 * shown Boxes column an image of its own (ground truth first, then predictions), masks and keypoints going
 * with the first. Side by side needs two Boxes columns shown; with fewer it is one pane as in overlay.
 * @param {LabelField[]} fields every label column, in schema order
 * @param {Set<string>} hidden the columns switched off
 * @param {string} mode "overlay" or "side"
 * @returns {string[][]} the columns each pane draws
 */
export function detailPanes(fields, hidden, mode) {
  const shown = fields.filter((field) => !hidden.has(field.name));
  const boxes = shown.filter((field) => field.kind === "boxes");
  if (mode !== "side" || boxes.length < 2) return [shown.map((field) => field.name)];
  const ordered = [...boxes.filter((f) => !isPrediction(f)), ...boxes.filter(isPrediction)];
  const others = shown.filter((field) => field.kind !== "boxes").map((field) => field.name);
  return ordered.map((field, i) => (i === 0 ? [...others, field.name] : [field.name]));
}

/**
 * Whether the detail offers the overlay / side-by-side switch: when two Boxes columns are there to compare.
 * @param {LabelField[]} fields
 * @returns {boolean}
 */
export function canSideBySide(fields) {
  return fields.filter((field) => field.kind === "boxes").length >= 2;
}

/**
 * A box's outcome in an evaluation: ``outcomes`` maps a column to its boxes' outcomes, in the row's order.
 * @param {Record<string, string[] | null> | null | undefined} outcomes
 * @param {string} column
 * @param {number} index
 * @returns {string | null} "tp", "fp", "fn", "ignored", or null when the column was not evaluated
 */
export function outcomeOf(outcomes, column, index) {
  const list = outcomes ? outcomes[column] : null;
  return list && index < list.length ? list[index] : null;
}

/**
 * The legend of the outcomes some boxes show: each once, in the order of OUTCOMES.
 * @param {Iterable<string>} seen
 * @returns {{outcome: string, name: string, colour: string}[]}
 */
export function outcomeLegend(seen) {
  const found = new Set(seen);
  return OUTCOMES.filter((o) => found.has(o)).map((outcome) => ({
    outcome, name: OUTCOME_NAMES[outcome], colour: OUTCOME_COLOURS[outcome],
  }));
}
