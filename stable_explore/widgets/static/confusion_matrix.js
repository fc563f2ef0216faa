// The confusion matrix: rows the true class, columns the predicted one, each count shaded by its size. A click
// on a cell asks the kernel to show its rows (in the linked browser); a click on a class name asks for its
// figures. Class names go in through textContent only.

import { h } from "./lib/dom.js";
import { heatLevel, largest, needsLightText } from "./lib/heat.js";
import { requester } from "./lib/requests.js";

const SHADE = [37, 99, 235]; // one blue, read through at every opacity in the light and the dark theme

function render({ model, el }) {
  const root = h("div", { class: "se-cm", "data-testid": "se-cm", "data-lm-suppress-shortcuts": "true" });
  root.tabIndex = 0;
  const title = h("div", { class: "se-cm-title", "data-testid": "se-cm-title" });
  const table = h("table", { class: "se-cm-table", "data-testid": "se-cm-table" });
  const figures = h("div", { class: "se-cm-figures", "data-testid": "se-cm-figures" });
  const status = h("div", { class: "se-cm-status", "data-testid": "se-cm-status" });
  root.append(title, table, figures, status);
  el.appendChild(root);
  const requests = requester(model);
  let pageError = ""; // a request the kernel did not answer in time; the kernel's next status replaces it

  function ask(name, msg) {
    requests.request(name, msg).then(({ response }) => {
      if (response.timeout) { pageError = response.message || ""; onStatus(); }
    });
  }

  function className(index, axis) {
    const names = model.get("names");
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
    const names = model.get("names");
    const counts = model.get("counts");
    const max = largest(counts);
    table.replaceChildren();
    const caption = h("caption", { text: "rows: true class · columns: predicted class · click a cell for its rows" });
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
          title: `${count} rows labelled ${names[i]}, predicted ${names[j]}`,
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
  }

  function onActive() {
    const active = model.get("active_cell");
    for (const cell of table.querySelectorAll("td.se-cm-cell")) {
      const on = active.length === 2 && Number(cell.dataset.true) === active[0] && Number(cell.dataset.pred) === active[1];
      cell.setAttribute("aria-selected", String(on));
    }
    if (active.length === 2) root.dataset.ready = `cell-${active[0]}-${active[1]}`;
  }

  function drawFigures() {
    const f = model.get("class_figures");
    figures.replaceChildren();
    if (f.name === undefined) return;
    figures.appendChild(h("span", { class: "se-cm-figures-name", text: String(f.name) }));
    const rows = [["precision", f.precision], ["recall", f.recall], ["f1", f.f1]];
    for (const [label, value] of rows) {
      figures.appendChild(h("span", { class: "se-cm-figure", "data-figure": String(label), text: `${label} ${Number(value).toFixed(3)}` }));
    }
    figures.appendChild(h("span", { class: "se-cm-figure", "data-figure": "support", text: `support ${f.support}` }));
    figures.appendChild(h("span", { class: "se-cm-figure", "data-figure": "predicted", text: `predicted ${f.predicted}` }));
    for (const button of table.querySelectorAll(".se-cm-class")) {
      button.setAttribute("aria-pressed", String(Number(button.dataset.index) === f.index));
    }
    figures.dataset.ready = `class-${f.index}`;
  }

  const onStatus = () => { status.textContent = pageError || model.get("status"); };
  const onKernelStatus = () => { pageError = ""; onStatus(); };
  const onMessage = (content, buffers) => { requests.receive(content, buffers); };
  drawTable();
  drawFigures();
  onStatus();
  model.on("change:counts", drawTable);
  model.on("change:names", drawTable);
  model.on("change:title", drawTable);
  model.on("change:active_cell", onActive);
  model.on("change:class_figures", drawFigures);
  model.on("change:status", onKernelStatus);
  model.on("msg:custom", onMessage);
  return () => {
    model.off("change:counts", drawTable);
    model.off("change:names", drawTable);
    model.off("change:title", drawTable);
    model.off("change:active_cell", onActive);
    model.off("change:class_figures", drawFigures);
    model.off("change:status", onKernelStatus);
    model.off("msg:custom", onMessage);
    requests.close({ type: "closed" });
  };
}

export default { render };
