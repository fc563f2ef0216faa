// @ts-check
// The map's words: title and status, the mode buttons, the count of selected rows, and the legend
// (a click on a class shows or hides its points). User text goes in through textContent only.
import { h } from "../lib/dom.js";
import { countText, legendEntries, toggleClass } from "../lib/maptext.js";
import { makeShown, schedule } from "./canvas.js";

/** @typedef {import("./state.js").MapState} MapState */

/**
 * The title, and the status line: the kernel's status, or a request it did not answer.
 * @param {MapState} s
 */
export function drawTitle(s) {
  s.ui.title.textContent = s.model.get("title");
  s.statusText.show();
}

/**
 * Which mode button is on (and the stage's cursor, through data-mode).
 * @param {MapState} s
 */
export function drawModes(s) {
  const mode = s.model.get("mode");
  for (const [name, button] of Object.entries(s.ui.modes)) button.classList.toggle("se-on", mode === name);
  s.ui.stage.dataset.mode = mode;
}

/**
 * "n of N selected", and the number on data-count.
 * @param {MapState} s
 */
export function drawCount(s) {
  s.ui.count.textContent = countText(s.selectedRows.length, s.n);
  s.ui.count.dataset.count = String(s.selectedRows.length);
}

/**
 * One key a class: its colour, name and number of points; a click shows or hides the class.
 * @param {MapState} s
 */
export function drawLegend(s) {
  const { legend } = s.ui;
  const names = s.model.get("class_names") || [];
  legend.replaceChildren();
  legend.hidden = !names.length;
  for (const entry of legendEntries(names, s.model.get("label_counts") || [], s.hidden)) {
    const item = h("button", { class: "se-map-key" + (entry.off ? " se-off" : ""), "data-class": String(entry.index),
      "data-rgb": entry.rgb.join(","), title: "show or hide this class" });
    const swatch = h("span", { class: "se-map-swatch" });
    swatch.style.background = `rgb(${entry.rgb.join(",")})`;
    item.append(swatch, h("span", { class: "se-map-name", text: entry.name }), h("span", { class: "se-map-num", text: entry.count }));
    item.addEventListener("click", () => {
      toggleClass(s.hidden, entry.index);
      makeShown(s);
      drawLegend(s);
      schedule(s);
    });
    legend.append(item);
  }
}
