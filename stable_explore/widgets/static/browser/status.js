// @ts-check
// The browser's edits and status: the edit bar (selection, flags, drop, relabel, save, discard), the
// status line with its counts and the last action's message, the subset chip and "back", and the note
// that the kernel is gone.
import { h } from "../lib/dom.js";
import { button, input, select } from "../lib/elements.js";
import { pendingLine, statusFades, statusSummary, statusMessage } from "../lib/browsetext.js";

/**
 * @typedef {object} Status
 * @property {HTMLElement} deadNote
 * @property {HTMLElement} editbar
 * @property {HTMLElement} statusRow
 * @property {() => void} drawRelabelChoices
 * @property {() => void} drawPending
 * @property {() => void} onStatus the kernel's status changed
 * @property {() => void} drawStatus
 * @property {() => void} drawSubset
 * @property {() => void} drawBack
 * @property {(text: string) => void} markDead the kernel is gone: say so, and disable every control
 */

/**
 * The edit bar and the status line.
 * @param {import("./state.js").View} view
 * @param {{close: (response: import("../lib/requests.js").Response) => void}} requests
 * @returns {Status}
 */
export function createStatus(view, requests) {
  const { model, state, command, root } = view;
  const selectPage = button({ "data-testid": "se-select-page", title: "select every row of this page", text: "select page" });
  const flag = button({ "data-testid": "se-flag", title: "flag the selection (x)", text: "flag (x)" });
  const clear = button({ "data-testid": "se-clear", title: "clear the selection (Esc)", text: "clear" });
  const dropFlagged = button({ "data-testid": "se-drop-flagged", title: "make the flagged rows a pending drop", text: "drop flagged" });
  const relabelTo = select({ "data-testid": "se-relabel-class", title: "class for the selection" });
  const relabel = button({ "data-testid": "se-relabel", title: "relabel the selection as the chosen class", text: "relabel" });
  const message = input({ type: "text", class: "se-message", "data-testid": "se-message", placeholder: "message for the new version" });
  const save = button({ "data-testid": "se-save", title: "write the pending edits as a new version", text: "save version" });
  const discard = button({ "data-testid": "se-discard", title: "forget the pending edits", text: "discard" });
  const pendingText = h("span", { class: "se-pending", "data-testid": "se-pending" });
  const editbar = h("div", { class: "se-toolbar se-editbar", "data-testid": "se-editbar" }, [
    selectPage, flag, clear, h("span", { class: "se-sep" }), dropFlagged, relabelTo, relabel, message, save, discard,
  ]);
  const status = h("span", { class: "se-status-text", "data-testid": "se-status" });
  const deadNote = h("div", { class: "se-dead-note", "data-testid": "se-dead", role: "alert", hidden: "" });
  const subsetText = h("span", { class: "se-subset-title", "data-testid": "se-subset-title" });
  const subsetClear = button({ class: "se-x", "data-testid": "se-subset-clear", title: "show every row again", text: "show all ×" });
  const subsetChip = h("span", { class: "se-chip se-on se-subset", "data-testid": "se-subset", hidden: "" }, [subsetText, subsetClear]);
  const goBack = button({ class: "se-back", "data-testid": "se-back", title: "show the grid shown before “similar rows”", text: "‹ back", hidden: "" });
  const statusRow = h("div", { class: "se-status" }, [goBack, subsetChip, status, pendingText]);

  function drawRelabelChoices() {
    const names = view.classNames();
    relabelTo.replaceChildren(...names.map((name, index) => h("option", { value: String(index), text: name })));
    relabelTo.disabled = relabel.disabled = !names.length;
  }

  function drawPending() {
    const text = model.get("pending");
    pendingText.textContent = pendingLine(text);
    save.disabled = discard.disabled = !text;
    view.drawMarks();
  }

  function onStatus() {
    // what an action said stays a while (an error until the next action), then the line is the counts again
    clearTimeout(state.statusTimer);
    state.statusShown = model.get("status");
    state.pageError = "";
    if (statusFades(state.statusShown)) {
      state.statusTimer = setTimeout(() => { state.statusShown = ""; drawStatus(); }, 10000);
    }
    drawStatus();
  }

  function drawStatus() {
    const said = statusMessage(state.pageError, state.statusShown, model.get("status"));
    status.textContent = statusSummary(model.get("num_rows"), model.get("selected").length, model.get("flagged").length, said);
    status.title = model.get("status") || "";
  }

  function drawSubset() {
    const title = model.get("subset");
    subsetChip.hidden = !title;
    subsetText.textContent = title ? `showing ${title}` : "";
  }

  function drawBack() {
    goBack.hidden = !model.get("can_go_back");
  }

  /** @param {string} text */
  function markDead(text) {
    // the browser's model lived in the kernel that is gone: say so, and stop looking alive
    if (state.dead) return;
    state.dead = true;
    requests.close({ type: "dead" });
    root.classList.add("se-dead");
    deadNote.textContent = text;
    deadNote.hidden = false;
    for (const control of root.querySelectorAll("button, input, select")) {
      /** @type {HTMLButtonElement | HTMLInputElement | HTMLSelectElement} */ (control).disabled = true;
    }
  }

  selectPage.addEventListener("click", () => command("select_page"));
  flag.addEventListener("click", () => command("flag"));
  clear.addEventListener("click", () => command("clear"));
  dropFlagged.addEventListener("click", () => command("drop_flagged"));
  relabel.addEventListener("click", () => command("relabel", { label: Number(relabelTo.value) }));
  discard.addEventListener("click", () => command("discard"));
  subsetClear.addEventListener("click", () => command("show_all"));
  goBack.addEventListener("click", () => command("back"));
  save.addEventListener("click", () => { command("save", { message: message.value }); message.value = ""; });

  return { deadNote, editbar, statusRow, drawRelabelChoices, drawPending, onStatus, drawStatus, drawSubset, drawBack, markDead };
}
