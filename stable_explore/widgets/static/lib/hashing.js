// @ts-check
// The progress line of a long "similar rows": the kernel hashes every image once (a dataset without an
// embedding) on a thread of its own and reports {state, row, done, total, by} in the model's
// `similar_progress`; this line shows it, with a Cancel button while it runs.
import { h } from "./dom.js";

/** @typedef {{state?: string, row?: number, done?: number, total?: number, by?: string}} Progress */

/**
 * What the progress line says, or "" when there is nothing to say.
 * @param {Progress} progress
 * @returns {string}
 */
export function hashingText(progress) {
  const done = (progress.done || 0).toLocaleString("en-US");
  const total = (progress.total || 0).toLocaleString("en-US");
  if (progress.state === "running") return `similar rows: hashing images for ${progress.by || "the images"}: ${done} / ${total} rows`;
  if (progress.state === "cancelled") return `similar rows: hashing cancelled at ${done} / ${total} rows; nothing kept`;
  return "";
}

/**
 * Whether the hashing runs (the "similar rows" button waits meanwhile).
 * @param {Progress | null | undefined} progress
 */
export function hashingRuns(progress) {
  return Boolean(progress && progress.state === "running");
}

/**
 * The line: its text and a Cancel button; ``draw(progress)`` shows it (hidden when there is nothing to say).
 * @param {() => void} onCancel
 */
export function hashingLine(onCancel) {
  const text = h("span", { class: "se-hashing-text", "data-testid": "se-hashing-text", role: "status" });
  const cancel = h("button", { "data-testid": "se-hashing-cancel", title: "stop hashing; nothing is kept", text: "cancel" });
  const el = h("div", { class: "se-hashing", "data-testid": "se-hashing", hidden: "" }, [text, cancel]);
  cancel.addEventListener("click", () => {
    /** @type {HTMLButtonElement} */ (cancel).disabled = true;
    onCancel();
  });
  /** @param {Progress} progress */
  function draw(progress) {
    const said = hashingText(progress || {});
    el.hidden = !said;
    text.textContent = said;
    cancel.hidden = !hashingRuns(progress);
    if (!hashingRuns(progress)) /** @type {HTMLButtonElement} */ (cancel).disabled = false;
  }
  return { el, draw };
}
