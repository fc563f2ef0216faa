// @ts-check
// The map's mouse and keys: a drag pans (the "pan" mode), draws a box ("box", or shift) or a lasso
// ("lasso"); the wheel zooms about the cursor; hovering rings the nearest point; a double click asks
// for similar rows; Esc and "clear" select nothing; "reset view" shows every point.
import { panBy, wheelFactor, zoomAt } from "../lib/mapview.js";
import { drawOverlay, fit, moved, schedule } from "./canvas.js";
import { clearSelection, hover, selectBox, selectLasso, similar } from "./kernel.js";

/** @typedef {import("./state.js").MapState} MapState */

/**
 * Listen to the map's elements (they go with the view: nothing to remove).
 * @param {MapState} s
 */
export function listen(s) {
  const { root, overlay, tooltip, modes, reset, clear } = s.ui;
  const model = s.model;
  /** @param {MouseEvent} event @returns {[number, number]} */
  const local = (event) => {
    const box = overlay.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  };

  for (const [mode, button] of Object.entries(modes)) {
    button.addEventListener("click", () => { model.set("mode", mode); model.save_changes(); });
  }

  overlay.addEventListener("pointerdown", (event) => {
    if (event.button !== 0 || s.alive.dead) return;
    root.focus({ preventScroll: true });
    const [px, py] = local(event);
    const mode = event.shiftKey ? "box" : model.get("mode");
    try {
      overlay.setPointerCapture(event.pointerId); // keep the drag when the cursor leaves the canvas
    } catch (error) {
      // a synthetic event's pointer cannot be captured; the drag still works inside the canvas
    }
    if (mode === "box") s.drag = { kind: "box", x0: px, y0: py, x: px, y: py };
    else if (mode === "lasso") s.drag = { kind: "lasso", path: [[px, py]] };
    else s.drag = { kind: "pan", x: px, y: py, moved: false };
    tooltip.hidden = true;
  });

  overlay.addEventListener("pointermove", (event) => {
    const [px, py] = local(event);
    const drag = s.drag;
    if (!drag) { hover(s, px, py); return; }
    if (drag.kind === "pan") {
      panBy(s.view, px - drag.x, py - drag.y);
      drag.moved = drag.moved || Math.abs(px - drag.x) + Math.abs(py - drag.y) > 0;
      drag.x = px;
      drag.y = py;
      moved(s);
      drawOverlay(s);
    } else if (drag.kind === "box") {
      drag.x = px;
      drag.y = py;
      drawOverlay(s);
    } else {
      const [lx, ly] = drag.path[drag.path.length - 1];
      if (Math.abs(px - lx) + Math.abs(py - ly) >= 3 && drag.path.length < 4000) drag.path.push([px, py]);
      drawOverlay(s);
    }
  });

  overlay.addEventListener("pointerup", (event) => {
    const done = s.drag;
    if (!done) return;
    const [px, py] = local(event);
    s.drag = null;
    if (done.kind === "box") {
      if (Math.abs(px - done.x0) + Math.abs(py - done.y0) > 2) selectBox(s, done.x0, done.y0, px, py);
    } else if (done.kind === "lasso") {
      done.path.push([px, py]);
      if (done.path.length >= 3) selectLasso(s, done.path);
    }
    drawOverlay(s);
  });

  overlay.addEventListener("dblclick", (event) => similar(s, ...local(event)));

  overlay.addEventListener("pointerleave", () => {
    if (s.drag) return;
    s.hoverRow = -1;
    tooltip.hidden = true;
    drawOverlay(s);
  });

  overlay.addEventListener("wheel", (event) => {
    event.preventDefault();
    const [px, py] = local(event);
    zoomAt(s.view, px, py, wheelFactor(event.deltaY, event.deltaMode));
    moved(s);
    drawOverlay(s);
  }, { passive: false });

  root.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !s.alive.dead) clearSelection(s);
  });
  reset.addEventListener("click", () => { fit(s); schedule(s); drawOverlay(s); });
  clear.addEventListener("click", () => clearSelection(s));
}
