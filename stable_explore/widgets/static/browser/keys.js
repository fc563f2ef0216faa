// @ts-check
// The browser's keys (lib/paging.js decides what a key does): arrows move the cursor, or step the detail
// pane; PageUp / PageDown page; Enter opens the cursor's row; Space selects it; x flags; Esc closes the
// pane or clears the selection. Ctrl+S / Cmd+S is left to JupyterLab.
import { gridColumns, isSaveKey, keyAction } from "../lib/paging.js";

/**
 * The root's keydown handler.
 * @param {import("./state.js").View} view
 * @returns {(event: KeyboardEvent) => void}
 */
export function keyHandler(view) {
  const { model, state, command, root } = view;

  /** @param {number} index */
  function cellRow(index) {
    return Number(state.cells[index].dataset.row);
  }

  return (event) => {
    if (isSaveKey(event)) {
      // Ctrl+S / Cmd+S saves the notebook: let JupyterLab's shortcut see this one key press (its handler
      // runs after this one, as the event bubbles to the document), then suppress its shortcuts again
      root.removeAttribute("data-lm-suppress-shortcuts");
      setTimeout(() => root.setAttribute("data-lm-suppress-shortcuts", "true"), 0);
      return;
    }
    if (state.dead || event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
    const columns = gridColumns(view.grid.clientWidth, state.cells[0]?.offsetWidth || 0);
    const action = keyAction(event.key, state.detailRow !== null, columns);
    if (action === null) return;
    const onCell = state.cursor >= 0 && Boolean(state.cells[state.cursor]);
    switch (action.do) {
      case "detail": view.requestDetail(/** @type {number} */ (state.detailRow), action.step); break;
      case "cursor": view.setCursor(state.cursor + action.by); break;
      case "page": view.goPage(model.get("page") + action.by); break;
      case "open": if (onCell) view.requestDetail(cellRow(state.cursor), 0); break;
      case "toggle": if (onCell) command("click", { row: cellRow(state.cursor), shift: false, toggle: true }); break;
      case "flag": command("flag"); break;
      case "close": view.closeDetail(); break;
      case "clear": command("clear"); break;
    }
    event.preventDefault();
    event.stopPropagation();
  };
}
