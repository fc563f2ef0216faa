// @ts-check
// The browser's filters: the label chips, the value filter bar (a field's range or text, a Boxes column's
// class, area and score), the chips of the filters set, and the sort.
import { h } from "../lib/dom.js";
import { button, input, select } from "../lib/elements.js";
import { classColours, labelColour } from "../lib/colours.js";
import { describeFilter } from "../lib/filters.js";
import { nextLabelFilter } from "../lib/paging.js";
import { rangeHints } from "../lib/browsetext.js";

/**
 * @typedef {object} Filters
 * @property {HTMLElement} filterbar
 * @property {HTMLElement} fieldChips
 * @property {HTMLElement} labelBar
 * @property {() => void} drawLabels
 * @property {() => void} drawFields the filter bar and sort, then the chips and histograms
 * @property {() => void} drawFieldChips
 * @property {() => void} fitPlaceholders the min and max inputs made as wide as their placeholders
 */

/**
 * The label chips and the value filter bar, wired to the kernel.
 * @param {import("./state.js").View} view
 * @returns {Filters}
 */
export function createFilters(view) {
  const { model, command } = view;
  const fieldSelect = select({ "data-testid": "se-field", title: "filter by a field's value" });
  const fieldMin = input({ type: "number", step: "any", class: "se-num", "data-testid": "se-field-min", placeholder: "min", title: "at least" });
  const fieldMax = input({ type: "number", step: "any", class: "se-num", "data-testid": "se-field-max", placeholder: "max", title: "at most" });
  const fieldOp = select({ "data-testid": "se-field-op", title: "how the text matches" });
  fieldOp.append(h("option", { value: "contains", text: "contains" }), h("option", { value: "equals", text: "equals" }));
  const fieldText = input({ type: "text", class: "se-text", "data-testid": "se-field-text", placeholder: "text" });
  // a Boxes column: keep the images with a box of a class, an area (width x height, stored units), a score
  const boxClass = select({ "data-testid": "se-box-class", title: "the class of the box" });
  const boxScore = input({ type: "number", step: "any", min: "0", max: "1", class: "se-num", "data-testid": "se-box-score",
    placeholder: "min score", title: "a score of at least (predictions)" });
  const fieldApply = button({ "data-testid": "se-field-apply", title: "keep the rows that match", text: "filter" });
  const fieldChips = h("span", { class: "se-field-chips", "data-testid": "se-field-filters" });
  const sortSelect = select({ "data-testid": "se-sort", title: "order of the rows" });
  const sortDir = button({ "data-testid": "se-sort-dir", title: "ascending / descending", text: "↑" });
  const filterbar = h("div", { class: "se-toolbar se-filterbar", "data-testid": "se-filterbar" }, [
    fieldSelect, boxClass, fieldMin, fieldMax, boxScore, fieldOp, fieldText, fieldApply,
    h("span", { class: "se-spacer" }), h("span", { class: "se-muted", text: "sort" }), sortSelect, sortDir,
  ]);
  const labelBar = h("div", { class: "se-labels", "data-testid": "se-filter-label" });

  function drawLabels() {
    const names = view.classNames();
    const counts = model.get("label_counts") || [];
    const active = new Set(model.get("label_filter"));
    labelBar.replaceChildren();
    if (!names.length) return;
    const all = h("button", { class: "se-chip" + (active.size ? "" : " se-on"), "data-class": "all", text: "all labels" });
    all.addEventListener("click", () => view.setModel("label_filter", []));
    labelBar.append(all);
    names.forEach((name, index) => {
      const chip = h("button", { class: "se-chip" + (active.has(index) ? " se-on" : ""), "data-class": String(index) });
      chip.style.setProperty("--se-colour", labelColour(index));
      chip.style.setProperty("--se-colour-light", classColours(index).light);
      chip.append(h("span", { class: "se-dot" }), h("span", { class: "se-chip-name", text: name }),
        h("span", { class: "se-count", text: counts.length ? (counts[index] ?? 0).toLocaleString() : "…",
          title: counts.length ? "" : "counting: a bucket's label column is read after the first page" }));
      chip.addEventListener("click", (event) => {
        const modifier = event.ctrlKey || event.metaKey || event.shiftKey;
        view.setModel("label_filter", nextLabelFilter(model.get("label_filter"), index, modifier));
      });
      labelBar.append(chip);
    });
  }

  /** @param {string} name */
  function fieldEntry(name) {
    return (model.get("fields") || []).find((/** @type {any} */ f) => f.name === name);
  }

  /** @param {string} name */
  function fieldKind(name) {
    const entry = fieldEntry(name);
    return entry ? entry.kind : "";
  }

  function drawFieldInputs() {
    const kind = fieldKind(fieldSelect.value);
    fieldMin.hidden = fieldMax.hidden = kind !== "number" && kind !== "boxes";
    fieldOp.hidden = fieldText.hidden = kind !== "string";
    boxClass.hidden = boxScore.hidden = kind !== "boxes";
    fieldApply.disabled = !kind;
    const entry = fieldEntry(fieldSelect.value);
    if (kind === "boxes" && entry) {
      const chosen = boxClass.value;
      boxClass.replaceChildren(h("option", { value: "", text: "any class" }),
        ...(entry.names || []).map((/** @type {string} */ name, /** @type {number} */ index) => h("option", { value: String(index), text: name })));
      if ([...boxClass.options].some((o) => o.value === chosen)) boxClass.value = chosen;
    }
    const hints = rangeHints(entry, kind);
    if (hints.minTitle !== null) fieldMin.title = hints.minTitle;
    if (hints.maxTitle !== null) fieldMax.title = hints.maxTitle;
    fieldMin.placeholder = hints.minPlaceholder;
    fieldMax.placeholder = hints.maxPlaceholder;
    fitPlaceholders();
  }

  const measure = document.createElement("canvas").getContext("2d");
  /** @param {HTMLInputElement} input */
  function fitPlaceholder(input) {
    // wide enough for its placeholder ("min 149.5"), plus padding and the number spinner
    if (!input.isConnected || !measure) return;
    const style = getComputedStyle(input);
    measure.font = `${style.fontSize} ${style.fontFamily}`;
    const text = measure.measureText(input.placeholder).width;
    const extra = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight) + parseFloat(style.borderLeftWidth) +
      parseFloat(style.borderRightWidth) + 22;
    input.style.width = `${Math.ceil(Math.max(text + extra, 60))}px`;
  }

  function fitPlaceholders() {
    for (const one of [fieldMin, fieldMax]) fitPlaceholder(one);
  }

  function drawFields() {
    /** @type {any[]} */
    const fields = model.get("fields") || [];
    filterbar.hidden = !fields.length;
    const chosen = fieldSelect.value;
    fieldSelect.replaceChildren(...fields.map((f) => h("option", { value: f.name, text: f.name })));
    if (fields.some((f) => f.name === chosen)) fieldSelect.value = chosen;
    const sortBy = model.get("sort_by");
    sortSelect.replaceChildren(h("option", { value: "", text: "row order" }),
      ...fields.filter((f) => f.kind !== "boxes").map((f) => h("option", { value: f.name, text: f.name })));
    sortSelect.value = sortBy;
    sortDir.textContent = model.get("sort_desc") ? "↓" : "↑";
    sortDir.disabled = !sortBy;
    drawFieldInputs();
    drawFieldChips();
    view.drawHistograms();
  }

  function drawFieldChips() {
    fieldChips.hidden = !(model.get("field_filters") || []).length;
    fieldChips.replaceChildren(...(model.get("field_filters") || []).map((/** @type {any} */ spec) => {
      const remove = h("button", { class: "se-x", title: "remove this filter", text: "×" });
      remove.addEventListener("click", () => command(spec.boxes ? "where_boxes" : "where", { column: spec.column }));
      return h("span", { class: "se-chip se-on se-field-chip", "data-column": spec.column }, [
        h("span", { text: describeFilter(spec) }), remove,
      ]);
    }));
  }

  function applyField() {
    const column = fieldSelect.value;
    if (!column) return;
    const number = (/** @type {HTMLInputElement} */ input) => (input.value === "" ? null : Number(input.value));
    if (fieldKind(column) === "boxes") {
      command("where_boxes", { column, cls: boxClass.value === "" ? null : Number(boxClass.value),
        min_area: number(fieldMin), max_area: number(fieldMax), min_score: number(boxScore) });
      boxScore.value = "";
    } else if (fieldKind(column) === "number") {
      command("where", { column, min: number(fieldMin), max: number(fieldMax) });
    } else {
      command("where", { column, [fieldOp.value]: fieldText.value });
    }
    fieldMin.value = fieldMax.value = fieldText.value = "";
  }

  fieldSelect.addEventListener("change", drawFieldInputs);
  fieldApply.addEventListener("click", applyField);
  for (const one of [fieldMin, fieldMax, fieldText, boxScore]) {
    one.addEventListener("keydown", (event) => { if (event.key === "Enter") applyField(); });
  }
  sortSelect.addEventListener("change", () => command("sort", { column: sortSelect.value, descending: model.get("sort_desc") }));
  sortDir.addEventListener("click", () => command("sort", { column: model.get("sort_by"), descending: !model.get("sort_desc") }));

  return { filterbar, fieldChips, labelBar, drawLabels, drawFields, drawFieldChips, fitPlaceholders };
}
