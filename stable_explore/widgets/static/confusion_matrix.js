// @ts-check
// The confusion matrix: rows the true class, columns the predicted one, each count shaded by its size. A click
// on a cell asks the kernel to show its rows (in the linked browser); a click on a class name asks for its
// figures. For a detector the counts are boxes, with a background row and column, and a table of per-class
// AP sits beside the matrix: a click on a class draws its precision-recall curve (SVG). Class names go in
// through textContent only.

import { curvePath, unitTicks } from "./lib/curve.js";
import { h, svg } from "./lib/dom.js";
import { heatLevel, largest, needsLightText } from "./lib/heat.js";
import { listenModel, statusLine } from "./lib/model.js";
import { requester } from "./lib/requests.js";

/** @typedef {import("./lib/model.js").AnyModel} AnyModel */
/**
 * @typedef {object} Figures a class's figures from the kernel (a detector's: AP and its curve)
 * @property {string} [name]
 * @property {number} index
 * @property {{recall: number[], precision: number[]}} [curve]
 * @property {number | null} [ap]
 * @property {number | null} [ap50]
 * @property {number | null} [ap75]
 * @property {number} [tp]
 * @property {number} [fp]
 * @property {number} [fn]
 * @property {number} [precision]
 * @property {number} [recall]
 * @property {number} [f1]
 * @property {number} [support]
 * @property {number} [predicted]
 */

const SHADE = [37, 99, 235]; // one blue, read through at every opacity in the light and the dark theme
const PLOT = { width: 220, height: 160, left: 34, bottom: 26, top: 8, right: 10 };

/**
 * anywidget's render: the matrix in ``el``, kept in step with ``model``.
 * @param {{model: AnyModel, el: HTMLElement}} props
 * @returns {() => void} the clean-up when the view goes
 */
function render({ model, el }) {
  const root = h("div", { class: "se-cm", "data-testid": "se-cm", "data-lm-suppress-shortcuts": "true" });
  root.tabIndex = 0;
  const title = h("div", { class: "se-cm-title", "data-testid": "se-cm-title" });
  const table = h("table", { class: "se-cm-table", "data-testid": "se-cm-table" });
  const apTable = h("table", { class: "se-cm-ap", "data-testid": "se-cm-ap" });
  const side = h("div", { class: "se-cm-side" }, [table, apTable]);
  const figures = h("div", { class: "se-cm-figures", "data-testid": "se-cm-figures" });
  const curve = h("div", { class: "se-cm-curve", "data-testid": "se-cm-curve" });
  const status = h("div", { class: "se-cm-status", "data-testid": "se-cm-status" });
  root.append(title, side, figures, curve, status);
  el.appendChild(root);
  const requests = requester(model);
  const statusText = statusLine(model, status); // a request the kernel did not answer in time shows there

  /** @param {string} name @param {object} msg */
  function ask(name, msg) {
    requests.request(name, msg).then(({ response }) => statusText.say(response));
  }

  const detection = () => model.get("kind") === "detection";
  /** @param {number} index */
  const isBackground = (index) => detection() && index === model.get("names").length - 1;

  /** @param {number} index @param {string} axis */
  function className(index, axis) {
    const names = model.get("names");
    if (isBackground(index)) {
      return h("span", { class: "se-cm-background", "data-testid": "se-cm-background", text: names[index] });
    }
    const button = h("button", {
      class: "se-cm-class", "data-testid": "se-cm-class", "data-index": String(index), "data-axis": axis,
      title: `${names[index]}: precision, recall and f1`,
    });
    button.textContent = names[index];
    button.addEventListener("click", () => ask("class", { index }));
    return button;
  }

  function drawTable() {
    title.textContent = model.get("title");
    const names = /** @type {string[]} */ (model.get("names"));
    const counts = /** @type {number[][]} */ (model.get("counts"));
    const max = largest(counts);
    table.replaceChildren();
    const text = detection()
      ? "boxes at IoU 0.5 · rows: true class · columns: predicted class · background: a box on nothing, or a box missed · click a cell for its images"
      : "rows: true class · columns: predicted class · click a cell for its rows";
    const caption = h("caption", { text });
    const unit = detection() ? "boxes" : "rows";
    const head = h("tr", {}, [h("th", { class: "se-cm-corner", text: "true \\ predicted" })]);
    names.forEach((_, j) => head.appendChild(h("th", { scope: "col" }, [className(j, "pred")])));
    table.append(caption, head);
    counts.forEach((row, i) => {
      const line = h("tr", {}, [h("th", { scope: "row" }, [className(i, "true")])]);
      row.forEach((count, j) => {
        const level = heatLevel(count, max);
        const cell = h("td", {
          class: i === j ? "se-cm-cell se-cm-diagonal" : "se-cm-cell", "data-testid": "se-cm-cell",
          "data-true": String(i), "data-pred": String(j), "data-count": String(count),
          title: `${count} ${unit} labelled ${names[i]}, predicted ${names[j]}`,
        });
        cell.textContent = String(count);
        if (level > 0) cell.style.background = `rgba(${SHADE.join(", ")}, ${level.toFixed(3)})`;
        if (needsLightText(level)) cell.classList.add("se-cm-strong");
        cell.tabIndex = 0; // Tab reaches every cell; Enter or Space shows its rows, as a click does
        cell.addEventListener("click", () => ask("cell", { true: i, pred: j }));
        cell.addEventListener("keydown", (event) => {
          if (event.key !== "Enter" && event.key !== " ") return;
          event.preventDefault();
          ask("cell", { true: i, pred: j });
        });
        line.appendChild(cell);
      });
      table.appendChild(line);
    });
    onActive();
    drawApTable();
  }

  function drawApTable() {
    apTable.replaceChildren();
    apTable.hidden = !detection();
    if (!detection()) return;
    /** @param {number | null | undefined} value */
    const cell = (value) => h("td", { text: value === null || value === undefined ? "–" : Number(value).toFixed(3) });
    apTable.append(
      h("caption", { text: "AP per class · click a class for its precision-recall curve" }),
      h("tr", {}, [h("th", { text: "class" }), h("th", { text: "AP" }), h("th", { text: "AP50" })]),
    );
    /** @type {Array<{name: string, ap: number | null, ap50: number | null}>} */ (model.get("ap_table")).forEach((entry, index) => {
      const button = h("button", {
        class: "se-cm-class", "data-testid": "se-cm-ap-class", "data-index": String(index),
        title: `${entry.name}: AP, boxes and precision-recall curve`,
      });
      button.textContent = entry.name;
      button.addEventListener("click", () => ask("class", { index }));
      apTable.appendChild(h("tr", { "data-testid": "se-cm-ap-row", "data-index": String(index) }, [
        h("th", { scope: "row" }, [button]), cell(entry.ap), cell(entry.ap50),
      ]));
    });
  }

  function onActive() {
    const active = model.get("active_cell");
    for (const cell of /** @type {NodeListOf<HTMLElement>} */ (table.querySelectorAll("td.se-cm-cell"))) {
      const on = active.length === 2 && Number(cell.dataset.true) === active[0] && Number(cell.dataset.pred) === active[1];
      cell.setAttribute("aria-selected", String(on));
    }
    if (active.length === 2) root.dataset.ready = `cell-${active[0]}-${active[1]}`;
  }

  /** @param {Figures & {name: string, curve: {recall: number[], precision: number[]}}} f */
  function drawCurve(f) {
    const plot = svg("svg", {
      width: PLOT.left + PLOT.width + PLOT.right, height: PLOT.top + PLOT.height + PLOT.bottom,
      role: "img", "data-testid": "se-cm-curve-svg", "aria-label": `precision-recall curve of ${f.name} at IoU 0.5`,
    });
    const area = svg("g", { transform: `translate(${PLOT.left}, ${PLOT.top})` });
    area.appendChild(svg("rect", { class: "se-cm-plot", x: 0, y: 0, width: PLOT.width, height: PLOT.height }));
    for (const tick of unitTicks(PLOT.width)) {
      const label = svg("text", { class: "se-cm-tick", x: tick.at, y: PLOT.height + 12, "text-anchor": "middle" });
      label.textContent = tick.value.toFixed(1);
      area.appendChild(label);
    }
    for (const tick of unitTicks(PLOT.height)) {
      const label = svg("text", { class: "se-cm-tick", x: -4, y: PLOT.height - tick.at + 3, "text-anchor": "end" });
      label.textContent = tick.value.toFixed(1);
      area.appendChild(label);
    }
    const xLabel = svg("text", { class: "se-cm-tick", x: PLOT.width / 2, y: PLOT.height + 24, "text-anchor": "middle" });
    xLabel.textContent = "recall";
    const yLabel = svg("text", { class: "se-cm-tick", x: 4, y: 10 });
    yLabel.textContent = "precision";
    const d = curvePath(f.curve.recall, f.curve.precision, PLOT.width, PLOT.height);
    const path = svg("path", { class: "se-cm-curve-line", d, "data-testid": "se-cm-curve-path" });
    area.append(xLabel, yLabel, path);
    plot.appendChild(area);
    curve.appendChild(plot);
    curve.dataset.ready = `curve-${f.index}`;
  }

  function drawFigures() {
    const f = /** @type {Figures} */ (model.get("class_figures"));
    figures.replaceChildren();
    curve.replaceChildren();
    if (f.name === undefined) return;
    figures.appendChild(h("span", { class: "se-cm-figures-name", text: String(f.name) }));
    if (f.curve !== undefined) {
      /** @param {number | null | undefined} v */
      const shown = (v) => (v === null ? "–" : Number(v).toFixed(3));
      for (const [label, value] of /** @type {Array<[string, number | null | undefined]>} */ ([["AP", f.ap], ["AP50", f.ap50], ["AP75", f.ap75]])) {
        figures.appendChild(h("span", { class: "se-cm-figure", "data-figure": label, text: `${label} ${shown(value)}` }));
      }
      for (const label of /** @type {Array<"tp" | "fp" | "fn">} */ (["tp", "fp", "fn"])) {
        figures.appendChild(h("span", { class: "se-cm-figure", "data-figure": label, text: `${label} ${f[label]}` }));
      }
      drawCurve({ ...f, name: f.name, curve: f.curve });
      for (const button of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll(".se-cm-class"))) {
        button.setAttribute("aria-pressed", String(Number(button.dataset.index) === f.index));
      }
      figures.dataset.ready = `class-${f.index}`;
      return;
    }
    const rows = [["precision", f.precision], ["recall", f.recall], ["f1", f.f1]];
    for (const [label, value] of rows) {
      figures.appendChild(h("span", { class: "se-cm-figure", "data-figure": String(label), text: `${label} ${Number(value).toFixed(3)}` }));
    }
    figures.appendChild(h("span", { class: "se-cm-figure", "data-figure": "support", text: `support ${f.support}` }));
    figures.appendChild(h("span", { class: "se-cm-figure", "data-figure": "predicted", text: `predicted ${f.predicted}` }));
    for (const button of /** @type {NodeListOf<HTMLElement>} */ (table.querySelectorAll(".se-cm-class"))) {
      button.setAttribute("aria-pressed", String(Number(button.dataset.index) === f.index));
    }
    figures.dataset.ready = `class-${f.index}`;
  }

  /** @param {any} content @param {DataView[]} buffers */
  const onMessage = (content, buffers) => { requests.receive(content, buffers); };
  drawTable();
  drawFigures();
  statusText.show();
  const stopListening = listenModel(model, {
    "change:counts": drawTable,
    "change:names": drawTable,
    "change:title": drawTable,
    "change:active_cell": onActive,
    "change:class_figures": drawFigures,
    "change:ap_table": drawApTable,
    "msg:custom": onMessage,
  });
  return () => {
    stopListening();
    statusText.dispose();
    requests.close({ type: "closed" });
  };
}

export default { render };
