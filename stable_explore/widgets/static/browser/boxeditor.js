// @ts-check
// Box edits in the detail pane: click a box to relabel or delete it; with "draw a box" on, drag over the
// image to add one (each pending until saved).
import { h, svg as svgNode } from "../lib/dom.js";
import { button, select } from "../lib/elements.js";
import { dragCorners, drawColumn, hitBox, pointIn } from "../lib/boxedit.js";
import { boxEditorText } from "../lib/browsetext.js";

/**
 * @typedef {object} BoxEditor
 * @property {HTMLElement} boxEditor the editor's bar, shown in the detail pane
 * @property {() => void} drawBoxEditor
 * @property {(target: import("./state.js").OverlayTarget, row: number) => void} editOn a pane's image made editable
 */

/**
 * The box editor.
 * @param {import("./state.js").View} view
 * @returns {BoxEditor}
 */
export function createBoxEditor(view) {
  const { state, command } = view;
  const chosenText = h("span", { class: "se-muted", "data-testid": "se-box-chosen" });
  const chosenClass = select({ "data-testid": "se-box-class-select", title: "the box's new class" });
  const relabelBox = button({ "data-testid": "se-box-relabel", title: "give the box clicked this class (pending until saved)", text: "relabel box" });
  const deleteBox = button({ "data-testid": "se-box-delete", title: "delete the box clicked (pending until saved)", text: "delete box" });
  const drawToggle = button({ class: "se-chip", "data-testid": "se-box-draw", "aria-pressed": "false",
    title: "drag over the image to add a box of the chosen class", text: "draw a box" });
  const boxEditor = h("div", { class: "se-box-editor", "data-testid": "se-box-editor" }, [
    chosenText, chosenClass, relabelBox, deleteBox, h("span", { class: "se-spacer" }), drawToggle,
  ]);

  /** @param {string} name */
  function fieldNamed(name) {
    return view.labelFields().find((f) => f.name === name) || null;
  }

  function drawBoxEditor() {
    // with a box clicked: its column, place and class, and the classes to give it; otherwise how to start
    const { chosenBox, drawing, dead } = state;
    const target = drawColumn(view.labelFields(), state.hiddenFields);
    const field = chosenBox ? fieldNamed(chosenBox.field) : fieldNamed(target || "");
    /** @type {string[]} */
    const names = (field && field.names) || [];
    const keep = chosenClass.value;
    chosenClass.replaceChildren(...names.map((name, index) => h("option", { value: String(index), text: name })));
    if ([...chosenClass.options].some((o) => o.value === keep)) chosenClass.value = keep;
    chosenText.textContent = boxEditorText(drawing, target, chosenBox);
    relabelBox.disabled = deleteBox.disabled = dead || !chosenBox;
    relabelBox.hidden = deleteBox.hidden = drawing;
    chosenClass.disabled = dead || !names.length || !(chosenBox || drawing);
    drawToggle.classList.toggle("se-on", drawing);
    drawToggle.setAttribute("aria-pressed", drawing ? "true" : "false");
    drawToggle.disabled = dead || !target;
    view.detail.classList.toggle("se-drawing", drawing);
  }

  /**
   * @param {string} name
   * @param {object} msg
   */
  function boxCommand(name, msg) {
    command(name, msg).then(({ response, buffers }) => view.onPush(response, buffers));
  }

  /**
   * A click on the image selects the smallest box under it; with "draw a box" on, a drag adds one.
   * @param {import("./state.js").OverlayTarget} target
   * @param {number} row
   */
  function editOn(target, row) {
    const svg = target.svg;
    /** @type {number[] | null} */
    let start = null;
    /** @type {SVGElement | null} */
    let ghost = null;
    const [width, height] = target.overlays.size;
    svg.addEventListener("pointerdown", (event) => {
      if (!state.drawing || state.dead) return;
      event.preventDefault();
      start = pointIn(event.clientX, event.clientY, svg.getBoundingClientRect());
      ghost = svgNode("rect", { class: "se-box se-box-ghost", "data-testid": "se-box-ghost", "vector-effect": "non-scaling-stroke" });
      svg.append(ghost);
      svg.setPointerCapture(event.pointerId);
    });
    svg.addEventListener("pointermove", (event) => {
      if (!start || !ghost) return;
      const corners = dragCorners(start, pointIn(event.clientX, event.clientY, svg.getBoundingClientRect()), 0) || [0, 0, 0, 0];
      ghost.setAttribute("x", String(corners[0] * width));
      ghost.setAttribute("y", String(corners[1] * height));
      ghost.setAttribute("width", String((corners[2] - corners[0]) * width));
      ghost.setAttribute("height", String((corners[3] - corners[1]) * height));
    });
    svg.addEventListener("pointerup", (event) => {
      if (!start) return;
      const corners = dragCorners(start, pointIn(event.clientX, event.clientY, svg.getBoundingClientRect()));
      start = null;
      if (ghost) ghost.remove();
      ghost = null;
      const column = drawColumn(view.labelFields(), state.hiddenFields);
      if (corners && column && chosenClass.value !== "") {
        boxCommand("add_box", { row, column, corners, label: Number(chosenClass.value) });
      }
    });
    svg.addEventListener("click", (event) => {
      if (state.drawing || state.dead) return;
      const [x, y] = pointIn(event.clientX, event.clientY, svg.getBoundingClientRect());
      const hit = hitBox(target.hits || [], x, y);
      state.chosenBox = hit ? { row, field: hit.field, index: hit.index } : null;
      const field = hit ? fieldNamed(hit.field) : null;
      const box = hit ? ((target.overlays.boxes || {})[hit.field] || [])[hit.index] : null;
      drawBoxEditor();
      if (box && field) chosenClass.value = String(box[4]);
      view.drawAllOverlays();
    });
  }

  /** @param {Record<string, unknown>} change */
  function editChosen(change) {
    if (!state.chosenBox) return;
    const { row, field, index } = state.chosenBox;
    state.chosenBox = null;
    boxCommand("edit_box", { row, column: field, index, ...change });
  }

  relabelBox.addEventListener("click", () => editChosen({ label: Number(chosenClass.value) }));
  deleteBox.addEventListener("click", () => editChosen({ drop: true }));
  drawToggle.addEventListener("click", () => {
    state.drawing = !state.drawing;
    state.chosenBox = null;
    drawBoxEditor();
    view.drawAllOverlays();
  });

  return { boxEditor, drawBoxEditor, editOn };
}
