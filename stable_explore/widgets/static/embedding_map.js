// @ts-check
// The embedding map's view: points arrive as one Float32Array (x, y pairs) and one array of label codes
// (Uint8Array below 255 classes: label + 1, 0 = no label); they are drawn into an ImageData (passes over
// typed arrays), found under the cursor through a spatial grid, and selected with a box or a lasso whose
// rows go back as an Int32Array. Above QUICK_ABOVE points a pan or zoom moves the last full frame, and
// the full redraw and the grid are built in slices of a few milliseconds, so no task holds the page.
// User text reaches the page through textContent only, never innerHTML.
//
// The parts: map/state.js (the elements and one object holding the view's state), map/canvas.js
// (drawing), map/legend.js (title, count, legend), map/kernel.js (selection and hover with the kernel),
// map/input.js (mouse and keys); the pure parts are lib/mapview.js (the view's transform), lib/mappaint.js
// (colours and the paint passes), lib/mapselect.js (box, lasso and nearest through the grid) and
// lib/maptext.js (legend and tooltip text), tested under node (tests/js/).

import { listenModel } from "./lib/model.js";
import { drawOverlay, fit, makePalette, resize, schedule, stopDrawing } from "./map/canvas.js";
import { listen } from "./map/input.js";
import { onMessage } from "./map/kernel.js";
import { drawCount, drawLegend, drawModes, drawTitle } from "./map/legend.js";
import { mapElements, mapState } from "./map/state.js";

/** @typedef {import("./map/state.js").Model} Model */

/**
 * anywidget's render: draw the map into ``el`` and keep it in step with ``model``.
 * @param {{model: Model, el: HTMLElement}} props
 * @returns {() => void} the clean-up when the view goes
 */
function render({ model, el }) {
  const ui = mapElements(el);
  // after a kernel restart the map says so and stops selecting (lib/alive.js, as the browser does)
  const s = mapState(model, ui, () => {
    s.drag = null;
    ui.tooltip.hidden = true;
    drawOverlay(s);
  });
  listen(s);

  /** @param {any} message @param {DataView[]} buffers */
  const onCustom = (message, buffers) => {
    if (!s.requests.receive(message, buffers)) onMessage(s, message, buffers);
  };
  const observer = new ResizeObserver(() => {
    const before = s.cssWidth;
    if (!s.n) return;
    resize(s);
    if (before === 0) fit(s);
    schedule(s);
    drawOverlay(s);
  });
  observer.observe(ui.stage);

  const onClasses = () => { makePalette(s); drawLegend(s); schedule(s); };
  const stopListening = listenModel(model, {
    "msg:custom": onCustom,
    "change:title": () => drawTitle(s),
    "change:mode": () => drawModes(s),
    "change:class_names": onClasses,
    "change:label_counts": () => drawLegend(s),
  });
  // JupyterLab's theme switch changes the page's CSS variables in place: repaint on the new background
  const themeWatch = new MutationObserver(() => { onClasses(); });
  themeWatch.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light"] });

  drawTitle(s);
  drawModes(s);
  makePalette(s);
  drawLegend(s);
  drawCount(s);
  s.requests.request("ready").then(({ response, buffers }) => onMessage(s, response, buffers));

  return () => {
    observer.disconnect();
    themeWatch.disconnect();
    stopDrawing(s);
    stopListening();
    s.statusText.dispose();
    s.alive.dispose();
    s.requests.close({ type: "closed" });
  };
}

export default { render };
