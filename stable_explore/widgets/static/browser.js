// The shard browser's view. It draws; the kernel decides (filters, selection, flags).
// User text reaches the page through textContent only, never innerHTML.

import { h, toDataUrl } from "./lib/dom.js";
import { classColours, labelColour } from "./lib/colours.js";
import { boxClasses, boxText, containRect, maskPalette, paintMask, placeBox, placeKeypoints } from "./lib/boxes.js";
import { canSideBySide, detailPanes, isPrediction, OUTCOME_COLOURS, OUTCOME_NAMES, outcomeLegend, outcomeOf, shownBoxes } from "./lib/labelsets.js";
import { describeFilter } from "./lib/filters.js";
import { dragCorners, drawColumn, hitBox, pointIn } from "./lib/boxedit.js";
import { BOX_MEASURES, barHeights, binText, measureName } from "./lib/histograms.js";
import { requester } from "./lib/requests.js";
import { canPlay, formatDuration, frameStrip, scrubber } from "./lib/video.js";
import { hashingLine, hashingRuns } from "./lib/hashing.js";

function render({ model, el }) {
  const urls = new Set();
  const root = h("div", {
    class: "se-browser",
    "data-testid": "se-browser",
    "data-lm-suppress-shortcuts": "true",
    tabindex: "0",
  });

  // --- toolbar -------------------------------------------------------------
  const title = h("div", { class: "se-title" });
  const shardSelect = h("select", { "data-testid": "se-shard", title: "shard" });
  const pageSizeSelect = h("select", { title: "rows per page" });
  for (const size of [24, 48, 96, 192]) pageSizeSelect.append(h("option", { value: String(size), text: `${size} / page` }));
  const prev = h("button", { "data-testid": "se-prev", title: "previous page (PageUp)", text: "‹ prev" });
  const next = h("button", { "data-testid": "se-next", title: "next page (PageDown)", text: "next ›" });
  const pageText = h("span", { "data-testid": "se-page", class: "se-page" });
  const jump = h("input", { type: "number", min: "1", class: "se-jump", "data-testid": "se-jump", title: "go to page (Enter)", placeholder: "go to" });
  const search = h("input", { type: "search", class: "se-search", "data-testid": "se-search" });
  const selectPage = h("button", { "data-testid": "se-select-page", title: "select every row of this page", text: "select page" });
  const flag = h("button", { "data-testid": "se-flag", title: "flag the selection (x)", text: "flag (x)" });
  const clear = h("button", { "data-testid": "se-clear", title: "clear the selection (Esc)", text: "clear" });
  // value filters, sort and histograms
  const fieldSelect = h("select", { "data-testid": "se-field", title: "filter by a field's value" });
  const fieldMin = h("input", { type: "number", step: "any", class: "se-num", "data-testid": "se-field-min", placeholder: "min", title: "at least" });
  const fieldMax = h("input", { type: "number", step: "any", class: "se-num", "data-testid": "se-field-max", placeholder: "max", title: "at most" });
  const fieldOp = h("select", { "data-testid": "se-field-op", title: "how the text matches" });
  fieldOp.append(h("option", { value: "contains", text: "contains" }), h("option", { value: "equals", text: "equals" }));
  const fieldText = h("input", { type: "text", class: "se-text", "data-testid": "se-field-text", placeholder: "text" });
  // a Boxes column: keep the images with a box of a class, an area (width x height, stored units), a score
  const boxClass = h("select", { "data-testid": "se-box-class", title: "the class of the box" });
  const boxScore = h("input", { type: "number", step: "any", min: "0", max: "1", class: "se-num", "data-testid": "se-box-score",
    placeholder: "min score", title: "a score of at least (predictions)" });
  const fieldApply = h("button", { "data-testid": "se-field-apply", title: "keep the rows that match", text: "filter" });
  const fieldChips = h("span", { class: "se-field-chips", "data-testid": "se-field-filters" });
  const sortSelect = h("select", { "data-testid": "se-sort", title: "order of the rows" });
  const sortDir = h("button", { "data-testid": "se-sort-dir", title: "ascending / descending", text: "↑" });
  const hists = h("div", { class: "se-hists", "data-testid": "se-histograms" });
  const filterbar = h("div", { class: "se-toolbar se-filterbar", "data-testid": "se-filterbar" }, [
    fieldSelect, boxClass, fieldMin, fieldMax, boxScore, fieldOp, fieldText, fieldApply,
    h("span", { class: "se-spacer" }), h("span", { class: "se-muted", text: "sort" }), sortSelect, sortDir,
  ]);
  const dropFlagged = h("button", { "data-testid": "se-drop-flagged", title: "make the flagged rows a pending drop", text: "drop flagged" });
  const relabelTo = h("select", { "data-testid": "se-relabel-class", title: "class for the selection" });
  const relabel = h("button", { "data-testid": "se-relabel", title: "relabel the selection as the chosen class", text: "relabel" });
  const message = h("input", { type: "text", class: "se-message", "data-testid": "se-message", placeholder: "message for the new version" });
  const save = h("button", { "data-testid": "se-save", title: "write the pending edits as a new version", text: "save version" });
  const discard = h("button", { "data-testid": "se-discard", title: "forget the pending edits", text: "discard" });
  const pendingText = h("span", { class: "se-pending", "data-testid": "se-pending" });
  const editbar = h("div", { class: "se-toolbar se-editbar", "data-testid": "se-editbar" }, [
    selectPage, flag, clear, h("span", { class: "se-sep" }), dropFlagged, relabelTo, relabel, message, save, discard,
  ]);
  const labelBar = h("div", { class: "se-labels", "data-testid": "se-filter-label" });
  const status = h("span", { class: "se-status-text", "data-testid": "se-status" });
  const deadNote = h("div", { class: "se-dead-note", "data-testid": "se-dead", role: "alert", hidden: "" });
  const subsetText = h("span", { class: "se-subset-title", "data-testid": "se-subset-title" });
  const subsetClear = h("button", { class: "se-x", "data-testid": "se-subset-clear", title: "show every row again", text: "show all ×" });
  const subsetChip = h("span", { class: "se-chip se-on se-subset", "data-testid": "se-subset", hidden: "" }, [subsetText, subsetClear]);
  const goBack = h("button", { class: "se-back", "data-testid": "se-back", title: "show the grid shown before “similar rows”", text: "‹ back", hidden: "" });
  const statusRow = h("div", { class: "se-status" }, [goBack, subsetChip, status, pendingText]);
  // what is drawn over the images: each label column on or off, predictions' score threshold, the legend
  const overlayToggles = h("span", { class: "se-overlay-toggles", "data-testid": "se-overlay-toggles" });
  const threshold = h("input", { type: "range", min: "0", max: "1", step: "0.05", value: "0", class: "se-threshold",
    "data-testid": "se-score-threshold", title: "hide predicted boxes scored below this (ground truth always shows)" });
  // the detail pane: every label column over one image, or ground truth and predictions side by side
  const modeOverlay = h("button", { class: "se-chip se-on", "data-testid": "se-detail-mode", "data-mode": "overlay",
    title: "draw ground truth and predictions over one image", text: "overlay" });
  const modeSide = h("button", { class: "se-chip", "data-testid": "se-detail-mode", "data-mode": "side",
    title: "one image per Boxes column, side by side", text: "side by side" });
  const modeSwitch = h("span", { class: "se-mode-switch", "data-testid": "se-detail-modes", hidden: "" }, [modeOverlay, modeSide]);
  const thresholdText = h("span", { class: "se-muted se-threshold-text", "data-testid": "se-score-threshold-text", text: "score ≥ 0.00" });
  const legend = h("span", { class: "se-legend", "data-testid": "se-legend" });
  const overlaybar = h("div", { class: "se-toolbar se-overlaybar", "data-testid": "se-overlaybar", hidden: "" }, [
    h("span", { class: "se-muted", text: "draw" }), overlayToggles, thresholdText, threshold, modeSwitch, h("span", { class: "se-sep" }), legend,
  ]);
  // an evaluation (browse(evaluation=r)): what it is, boxes coloured by outcome, and its rows a click away
  const evalText = h("span", { class: "se-muted se-eval-text", "data-testid": "se-eval-summary" });
  const byOutcome = h("button", { class: "se-chip se-on", "data-testid": "se-colour-outcome", "aria-pressed": "true",
    title: "colour boxes by their outcome (true positive, false positive, missed) instead of their class", text: "colour by outcome" });
  const evalButtons = h("span", { class: "se-eval-buttons", "data-testid": "se-eval-buttons" });
  const evalbar = h("div", { class: "se-toolbar se-evalbar", "data-testid": "se-evalbar", hidden: "" }, [
    evalText, h("span", { class: "se-sep" }), evalButtons, h("span", { class: "se-spacer" }), byOutcome,
  ]);
  const toolbar = h("div", { class: "se-toolbar", "data-testid": "se-toolbar" }, [
    shardSelect, pageSizeSelect, prev, pageText, next, jump, search,
  ]);

  // --- grid and detail -----------------------------------------------------
  const grid = h("div", { class: "se-grid", "data-testid": "se-grid" });
  const detail = h("div", { class: "se-detail", "data-testid": "se-detail", hidden: "" });
  const body = h("div", { class: "se-body" }, [grid, detail]);
  const hashing = hashingLine(() => command("similar_cancel"));  // the first "similar rows" hashing the images
  root.append(title, deadNote, toolbar, overlaybar, evalbar, filterbar, fieldChips, hists, labelBar, editbar, statusRow, hashing.el, body);
  el.append(root);

  // requests to the kernel: one command each, answered by a reply with the same id (lib/requests.js); a
  // page or detail whose reply comes after the timeout is still drawn
  const requests = requester(model, { late: ({ response, buffers }) => { pageError = ""; onPush(response, buffers); } });
  let dead = false;  // the kernel restarted: nothing is sent, every control is disabled
  let pageError = "";  // a request the kernel did not answer in time; the kernel's next status replaces it
  function command(name, msg = {}) {
    return requests.request(name, msg).then((reply) => {
      if (reply.response && reply.response.timeout) {
        pageError = reply.response.message;
        drawStatus();
      }
      return reply;
    });
  }

  function setModel(name, value) {
    if (dead) return;
    model.set(name, value);
    model.save_changes();
  }

  function markDead(text) {
    // the browser's model lived in the kernel that is gone: say so, and stop looking alive
    if (dead) return;
    dead = true;
    requests.close({ type: "dead" });
    root.classList.add("se-dead");
    deadNote.textContent = text;
    deadNote.hidden = false;
    for (const control of root.querySelectorAll("button, input, select")) control.disabled = true;
  }

  const kernel = model.widget_manager && model.widget_manager.kernel;
  function onKernelStatus(_, state) {
    if (state === "restarting" || state === "autorestarting" || state === "dead") {
      markDead("the kernel restarted: run the cell again to browse");
    }
  }
  if (kernel && kernel.statusChanged) kernel.statusChanged.connect(onKernelStatus);

  let cells = [];
  let cellOverlays = [];  // per cell of the page: {frame, overlays} to draw boxes on (again after a toggle)
  let detailOverlays = [];  // the detail pane's, one per pane: {frame, overlays, only}
  let detailMode = "overlay";  // or "side": one image per Boxes column
  let colourOutcomes = true;  // with an evaluation: boxes in their outcome's colour, not their class's
  let outcomesSeen = new Set();  // the outcomes drawn, for the legend
  let chosenBox = null;  // the detail's box clicked: {row, field, index}
  let drawing = false;  // the detail's "draw a box" is on: a drag over the image adds a box
  let detailShown = null;  // the detail's last message and buffers, to lay its panes out again
  let detailUrl = null;  // {msg, url} of the detail's image
  const hiddenFields = new Set();  // label columns switched off in this view
  let cursor = -1;
  let detailRow = null;
  let zoom = "fit";

  function revokeAll() {
    for (const url of urls) URL.revokeObjectURL(url);
    urls.clear();
  }

  function classNames() {
    return model.get("class_names") || [];
  }

  function drawTitle() {
    title.textContent = model.get("title");
  }

  function drawShards() {
    shardSelect.replaceChildren(h("option", { value: "-1", text: "all shards" }));
    for (const shard of model.get("shards")) {
      const text = shard.start === undefined
        ? `shard ${shard.index}: ${shard.rows.toLocaleString()} rows`
        : `shard ${shard.index}: rows ${shard.start.toLocaleString()}–${(shard.stop - 1).toLocaleString()} (${shard.rows.toLocaleString()})`;
      shardSelect.append(h("option", { value: String(shard.index), text }));
    }
    shardSelect.value = String(model.get("shard"));
  }

  function drawRelabelChoices() {
    const names = classNames();
    relabelTo.replaceChildren(...names.map((name, index) => h("option", { value: String(index), text: name })));
    relabelTo.disabled = relabel.disabled = !names.length;
  }

  function drawPending() {
    const text = model.get("pending");
    pendingText.textContent = text ? `pending: ${text}` : "no pending edits";
    save.disabled = discard.disabled = !text;
    drawMarks();
  }

  function drawLabels() {
    const names = classNames();
    const counts = model.get("label_counts") || [];
    const active = new Set(model.get("label_filter"));
    labelBar.replaceChildren();
    if (!names.length) return;
    const all = h("button", { class: "se-chip" + (active.size ? "" : " se-on"), "data-class": "all", text: "all labels" });
    all.addEventListener("click", () => setModel("label_filter", []));
    labelBar.append(all);
    names.forEach((name, index) => {
      const chip = h("button", { class: "se-chip" + (active.has(index) ? " se-on" : ""), "data-class": String(index) });
      chip.style.setProperty("--se-colour", labelColour(index));
      chip.style.setProperty("--se-colour-light", classColours(index).light);
      chip.append(h("span", { class: "se-dot" }), h("span", { class: "se-chip-name", text: name }),
        h("span", { class: "se-count", text: counts.length ? (counts[index] ?? 0).toLocaleString() : "…",
          title: counts.length ? "" : "counting: a bucket's label column is read after the first page" }));
      chip.addEventListener("click", (event) => {
        const chosen = new Set(model.get("label_filter"));
        if (event.ctrlKey || event.metaKey || event.shiftKey) {
          if (chosen.has(index)) chosen.delete(index); else chosen.add(index);
        } else if (chosen.size === 1 && chosen.has(index)) {
          chosen.clear();
        } else {
          chosen.clear();
          chosen.add(index);
        }
        setModel("label_filter", [...chosen].sort((a, b) => a - b));
      });
      labelBar.append(chip);
    });
  }

  function fieldKind(name) {
    const entry = (model.get("fields") || []).find((f) => f.name === name);
    return entry ? entry.kind : "";
  }

  function drawFieldInputs() {
    const kind = fieldKind(fieldSelect.value);
    fieldMin.hidden = fieldMax.hidden = kind !== "number" && kind !== "boxes";
    fieldOp.hidden = fieldText.hidden = kind !== "string";
    boxClass.hidden = boxScore.hidden = kind !== "boxes";
    fieldApply.disabled = !kind;
    const entry = (model.get("fields") || []).find((f) => f.name === fieldSelect.value);
    if (kind === "boxes" && entry) {
      const chosen = boxClass.value;
      boxClass.replaceChildren(h("option", { value: "", text: "any class" }),
        ...(entry.names || []).map((name, index) => h("option", { value: String(index), text: name })));
      if ([...boxClass.options].some((o) => o.value === chosen)) boxClass.value = chosen;
      const unit = entry.normalized ? "(fraction of the image)" : "(px²)";
      fieldMin.placeholder = "min area";
      fieldMax.placeholder = "max area";
      fieldMin.title = `a box's area (width x height) of at least ${unit}`;
      fieldMax.title = `a box's area (width x height) of at most ${unit}: "smaller than"`;
    } else if (entry && entry.min !== undefined) {
      fieldMin.title = "at least";
      fieldMax.title = "at most";
      fieldMin.placeholder = `min ${Number(entry.min.toPrecision(4))}`;
      fieldMax.placeholder = `max ${Number(entry.max.toPrecision(4))}`;
    } else {
      fieldMin.placeholder = "min";
      fieldMax.placeholder = "max";
    }
    for (const input of [fieldMin, fieldMax]) fitPlaceholder(input);
  }

  const measure = document.createElement("canvas").getContext("2d");
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

  function drawFields() {
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
    drawHistograms();
  }

  function drawFieldChips() {
    fieldChips.hidden = !(model.get("field_filters") || []).length;
    fieldChips.replaceChildren(...(model.get("field_filters") || []).map((spec) => {
      const remove = h("button", { class: "se-x", title: "remove this filter", text: "×" });
      remove.addEventListener("click", () => command(spec.boxes ? "where_boxes" : "where", { column: spec.column }));
      return h("span", { class: "se-chip se-on se-field-chip", "data-column": spec.column }, [
        h("span", { text: describeFilter(spec) }), remove,
      ]);
    }));
  }

  function boxHistogram(column, what, name, counts, edges, unit) {
    // one box measure (or the classes, edges null) of a Boxes column: a click keeps the images with a box in the bar
    const heights = barHeights(counts, 20);
    const bars = h("div", { class: "se-hist-bars" });
    counts.forEach((count, i) => {
      const range = edges ? binText(edges, i) : ((model.get("fields") || []).find((f) => f.name === column)?.names || [])[i] ?? String(i);
      const bar = h("div", { class: "se-hist-bar" });
      bar.style.height = `${heights[i]}px`;
      if (!edges) bar.style.background = classColours(i).light;
      const slot = h("div", { class: "se-hist-slot", "data-testid": "se-box-hist-slot", "data-bin": String(i), "data-count": String(count),
        title: `${column} ${name} ${range}: ${count.toLocaleString()} ${unit} (click: the images with such a box)` }, [bar]);
      slot.addEventListener("click", () => command("where_box_bin", { column, what, bin: i }));
      bars.append(slot);
    });
    const range = edges ? `${Number(edges[0].toPrecision(3))} – ${Number(edges[edges.length - 1].toPrecision(3))}` : `${counts.length} classes`;
    return h("div", { class: "se-hist se-box-hist", "data-testid": "se-box-histogram", "data-column": column, "data-what": what }, [
      h("div", { class: "se-hist-name", text: `${column} · ${name}` }), bars, h("div", { class: "se-hist-range", text: range }),
    ]);
  }

  function boxHistograms() {
    const made = model.get("box_histograms") || {};
    const out = [];
    for (const [column, measures] of Object.entries(made)) {
      const field = (model.get("fields") || []).find((f) => f.name === column) || {};
      for (const [what] of BOX_MEASURES) {
        const one = measures[what];
        if (one) out.push(boxHistogram(column, what, measureName(what, Boolean(field.normalized)), one.counts, one.edges, what === "count" ? "images" : "boxes"));
      }
      if ((measures.classes || []).length) out.push(boxHistogram(column, "classes", "classes", measures.classes, null, "boxes"));
    }
    return out;
  }

  function drawHistograms() {
    const histograms = model.get("histograms") || {};
    const fields = (model.get("fields") || []).filter((f) => f.kind === "number" && histograms[f.name]);
    const byBox = boxHistograms();
    hists.hidden = !fields.length && !byBox.length;
    hists.replaceChildren(...byBox, ...fields.map((f) => {
      const counts = histograms[f.name];
      const peak = Math.max(1, ...counts);
      const edges = f.edges || [];
      const bars = h("div", { class: "se-hist-bars" });
      counts.forEach((count, i) => {
        // bins are half-open, [edge, next edge), the last closed: a click keeps exactly the rows counted
        const last = i === counts.length - 1;
        const lo = Number((edges[i] ?? f.min).toPrecision(4));
        const hi = Number((edges[i + 1] ?? f.max).toPrecision(4));
        const range = last ? `${lo} – ${hi}` : `${lo} – <${hi}`;
        const bar = h("div", { class: "se-hist-bar" });
        bar.style.height = `${count ? Math.max(2, Math.round((20 * count) / peak)) : 0}px`;
        const slot = h("div", { class: "se-hist-slot", "data-testid": "se-hist-slot", "data-bin": String(i), "data-count": String(count),
          title: `${f.name} ${range}: ${count.toLocaleString()} rows (click to filter)` }, [bar]);
        slot.addEventListener("click", () => command("where_bin", { column: f.name, bin: i }));
        bars.append(slot);
      });
      return h("div", { class: "se-hist", "data-testid": "se-histogram", "data-column": f.name }, [
        h("div", { class: "se-hist-name", text: f.name }), bars,
        h("div", { class: "se-hist-range", text: `${Number(f.min.toPrecision(3))} – ${Number(f.max.toPrecision(3))}` }),
      ]);
    }));
  }

  function drawPager() {
    const page = model.get("page");
    const pages = model.get("num_pages");
    pageText.textContent = `page ${page + 1} of ${pages}`;
    prev.disabled = page <= 0;
    next.disabled = page >= pages - 1;
    jump.max = String(pages);
    pageSizeSelect.value = String(model.get("page_size"));
  }

  let statusTimer = null;
  let statusShown = "";
  function onStatus() {
    // what an action said stays a while (an error until the next action), then the line is the counts again
    clearTimeout(statusTimer);
    statusShown = model.get("status");
    pageError = "";
    if (statusShown && !statusShown.startsWith("error")) {
      statusTimer = setTimeout(() => { statusShown = ""; drawStatus(); }, 10000);
    }
    drawStatus();
  }

  function drawStatus() {
    const selected = model.get("selected").length;
    const flagged = model.get("flagged").length;
    const message = pageError || (statusShown === model.get("status") ? statusShown : "");
    status.textContent = `${model.get("num_rows").toLocaleString()} rows · ${selected} selected · ${flagged} flagged` +
      (message ? ` · ${message}` : "");
    status.title = model.get("status") || "";
  }

  function drawSearchHint() {
    const searched = model.get("searched") || "keys";
    search.placeholder = `search ${searched}…`;
    search.title = `rows whose ${searched} contain this text (case-insensitive)`;
  }

  function drawSubset() {
    const title = model.get("subset");
    subsetChip.hidden = !title;
    subsetText.textContent = title ? `showing ${title}` : "";
  }

  function drawMarks() {
    const selected = new Set(model.get("selected"));
    const flagged = new Set(model.get("flagged"));
    const dropped = new Set(model.get("dropped"));
    const relabelled = model.get("pending_labels") || {};
    const names = classNames();
    for (const cell of cells) {
      const row = Number(cell.dataset.row);
      cell.classList.toggle("se-selected", selected.has(row));
      cell.classList.toggle("se-flagged", flagged.has(row));
      cell.classList.toggle("se-dropped", dropped.has(row));
      const pendingLabel = cell.querySelector(".se-pending-label");
      const target = relabelled[String(row)];
      if (target !== undefined) {
        pendingLabel.textContent = `→ ${names[target] ?? target}`;
        pendingLabel.style.background = labelColour(target);
        pendingLabel.hidden = false;
      } else {
        pendingLabel.hidden = true;
      }
      cell.setAttribute("aria-selected", selected.has(row) ? "true" : "false");
    }
    drawStatus();
  }

  function setCursor(index, scroll = true) {
    if (!cells.length) return;
    cursor = Math.max(0, Math.min(cells.length - 1, index));
    cells.forEach((cell, i) => cell.classList.toggle("se-cursor", i === cursor));
    if (scroll) cells[cursor].scrollIntoView({ block: "nearest" });
  }

  function labelBadge(label) {
    const names = classNames();
    const badge = h("span", { class: "se-label", "data-testid": "se-label" });
    if (label >= 0 && label < names.length) {
      badge.textContent = names[label];
      badge.style.background = labelColour(label);
    } else {
      badge.textContent = names.length ? "—" : "";
      badge.classList.add("se-nolabel");
    }
    return badge;
  }

  function labelFields() {
    return model.get("label_fields") || [];
  }

  function drawOverlayBar() {
    const fields = labelFields();
    overlaybar.hidden = !fields.length;
    modeSwitch.hidden = !canSideBySide(fields);
    modeOverlay.classList.toggle("se-on", detailMode !== "side");
    modeSide.classList.toggle("se-on", detailMode === "side");
    modeOverlay.setAttribute("aria-pressed", detailMode !== "side" ? "true" : "false");
    modeSide.setAttribute("aria-pressed", detailMode === "side" ? "true" : "false");
    overlayToggles.replaceChildren(...fields.map((field) => {
      const on = !hiddenFields.has(field.name);
      const what = field.kind === "mask" ? "mask" : field.kind === "keypoints" ? "keypoints" : "boxes";
      const toggle = h("button", { class: "se-chip se-overlay-toggle" + (on ? " se-on" : ""), "data-testid": "se-overlay-toggle",
        "data-field": field.name, "aria-pressed": on ? "true" : "false", title: `draw the ${what} of ${field.name} (click to switch)`,
        text: field.name });
      toggle.addEventListener("click", () => {
        if (hiddenFields.has(field.name)) hiddenFields.delete(field.name); else hiddenFields.add(field.name);
        drawOverlayBar();
        if (detailMode === "side" && detailShown) drawDetail(detailShown.msg, detailShown.buffers);  // the panes change
        drawAllOverlays();
      });
      return toggle;
    }));
  }

  function scoreThreshold() {
    return Number(threshold.value) || 0;
  }

  function svgNode(tag, attrs = {}) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
    return node;
  }

  function drawOverlay(target, seen) {
    // the boxes of every label column switched on, over one image; `seen` collects [name, class] for the legend
    const { svg, overlays, frameWidth, frameHeight, masks, only, labelled } = target;
    target.hits = [];
    const size = overlays.size || [0, 0];
    const image = containRect(size[0], size[1], frameWidth, frameHeight);
    svg.setAttribute("viewBox", `0 0 ${frameWidth} ${frameHeight}`);
    const drawn = [];
    for (const field of labelFields()) {
      const names = field.names || [];
      if (only && !only.has(field.name)) {
        const mask = masks.get(field.name);
        if (mask) mask.canvas.hidden = true;
        continue;
      }
      if (field.kind === "mask") {
        const mask = masks.get(field.name);
        if (!mask) continue;
        mask.canvas.hidden = hiddenFields.has(field.name);
        if (mask.canvas.hidden) continue;
        for (const index of mask.classes) {
          if (index < names.length && !(field.background && index === 0)) seen.set(`${index}`, names[index]);
        }
        continue;
      }
      if (hiddenFields.has(field.name)) continue;
      if (field.kind === "keypoints") {
        // each instance in a colour of its own: its skeleton's lines, then its labelled points (hidden ones hollow)
        const radius = Math.max(frameWidth, frameHeight) / 64;
        ((overlays.keypoints || {})[field.name] || []).forEach((instance, n) => {
          const colour = classColours(n).light;
          const placed = placeKeypoints(instance, field.skeleton || [], image);
          for (const [x1, y1, x2, y2] of placed.lines) {
            const line = svgNode("line", { x1, y1, x2, y2, class: "se-keypoint-line", "data-testid": "se-keypoint-line",
              "data-field": field.name, "vector-effect": "non-scaling-stroke" });
            line.style.setProperty("--se-colour", colour);
            drawn.push(line);
          }
          for (const point of placed.points) {
            const dot = svgNode("circle", { cx: point.x, cy: point.y, r: radius, "data-testid": "se-keypoint", "data-field": field.name,
              class: "se-keypoint" + (point.visible ? "" : " se-keypoint-hidden"), "vector-effect": "non-scaling-stroke" });
            dot.style.setProperty("--se-colour", colour);
            const tip = svgNode("title");
            tip.textContent = `${field.name}: ${names[point.index] ?? point.index}${point.visible ? "" : " (hidden)"}`;
            dot.append(tip);
            drawn.push(dot);
          }
        });
        continue;
      }
      const shown = shownBoxes(field, (overlays.boxes || {})[field.name], scoreThreshold());
      const predicted = isPrediction(field);
      for (const { box, index } of shown) {
        const place = placeBox(box.slice(0, 4), image);
        const scored = box[5] !== null && box[5] !== undefined;
        const outcome = outcomeOf(overlays.outcomes, field.name, index);
        const byOutcome = colourOutcomes && outcome !== null;
        const colour = byOutcome ? OUTCOME_COLOURS[outcome] : classColours(box[4]).light;
        if (byOutcome) outcomesSeen.add(outcome);
        const rect = svgNode("rect", { x: place.x, y: place.y, width: place.width, height: place.height,
          class: "se-box" + (scored || predicted ? " se-box-pred" : ""), "data-testid": "se-box", "data-field": field.name,
          "data-class": box[4], "data-index": index, "vector-effect": "non-scaling-stroke" });
        if (outcome !== null) rect.dataset.outcome = outcome;
        if (labelled) {
          target.hits.push({ field: field.name, index, corners: box.slice(0, 4) });
          if (chosenBox && chosenBox.row === detailRow && chosenBox.field === field.name && chosenBox.index === index) {
            rect.classList.add("se-box-chosen");
            rect.dataset.chosen = "true";
          }
        }
        rect.style.setProperty("--se-colour", colour);
        const tip = svgNode("title");
        tip.textContent = `${field.name}: ${boxText(box, names)}` + (outcome !== null ? ` · ${OUTCOME_NAMES[outcome] ?? outcome}` : "");
        rect.append(tip);
        drawn.push(rect);
        if (labelled) {
          // the detail names each box (a prediction with its score) above its top-left corner, in image units
          const size = Math.max(frameWidth, frameHeight) / 30;
          const text = svgNode("text", { x: place.x + 1, y: Math.max(size, place.y - size * 0.25), class: "se-box-text",
            "data-testid": "se-box-label", "data-field": field.name, "font-size": size, "vector-effect": "non-scaling-stroke" });
          text.style.setProperty("--se-colour", colour);
          text.textContent = boxText(box, names);
          drawn.push(text);
        }
      }
      for (const index of boxClasses(shown.filter(({ index }) => !(colourOutcomes && outcomeOf(overlays.outcomes, field.name, index) !== null))
        .map(({ box }) => box))) {
        seen.set(`${index}`, names[index] ?? String(index));
      }
    }
    svg.replaceChildren(...drawn);
  }

  function drawAllOverlays() {
    const seen = new Map();
    outcomesSeen = new Set();
    for (const target of cellOverlays) drawOverlay(target, seen);
    for (const target of detailOverlays) drawOverlay(target, seen);
    thresholdText.textContent = `score ≥ ${scoreThreshold().toFixed(2)}`;
    legend.replaceChildren(...[...seen].sort((a, b) => Number(a[0]) - Number(b[0])).map(([index, name]) => {
      const item = h("span", { class: "se-legend-item", "data-testid": "se-legend-item", "data-class": index });
      item.style.setProperty("--se-colour", classColours(Number(index)).light);
      item.append(h("span", { class: "se-swatch" }), h("span", { text: name }));
      return item;
    }), ...outcomeLegend(outcomesSeen).map(({ outcome, name, colour }) => {
      const item = h("span", { class: "se-legend-item", "data-testid": "se-legend-outcome", "data-outcome": outcome });
      item.style.setProperty("--se-colour", colour);
      item.append(h("span", { class: "se-swatch" }), h("span", { text: name }));
      return item;
    }));
  }

  function overlayTarget(overlays, frameWidth, frameHeight, buffers, only = null) {
    const svg = svgNode("svg", { class: "se-boxes", "data-testid": "se-boxes", preserveAspectRatio: "xMidYMid meet", "aria-hidden": "true" });
    // masks: a canvas each, painted once its PNG is decoded (letterboxed by object-fit like the <img>)
    const masks = new Map();
    const fields = new Map(labelFields().map((field) => [field.name, field]));
    for (const [name, mask] of Object.entries(overlays.masks || {})) {
      const field = fields.get(name);
      if (!mask || !field || mask.buffer === undefined || !buffers[mask.buffer]) continue;
      const canvas = h("canvas", { class: "se-mask", "data-testid": "se-mask", "data-field": name,
        width: String(mask.size[0]), height: String(mask.size[1]) });
      masks.set(name, { canvas, classes: mask.classes || [] });
      paintMaskCanvas(canvas, buffers[mask.buffer], field);
    }
    return { svg, overlays, frameWidth, frameHeight, masks, only, labelled: false,
      layers: [...[...masks.values()].map((m) => m.canvas), svg] };
  }

  function paintMaskCanvas(canvas, buffer, field) {
    const palette = maskPalette((field.names || []).length, (index) => classColours(index).lightRgb,
      { background: Boolean(field.background), alpha: 120 });
    createImageBitmap(new Blob([buffer], { type: "image/png" }), { colorSpaceConversion: "none", premultiplyAlpha: "none" })
      .then((bitmap) => {
        const context = canvas.getContext("2d", { willReadFrequently: true });
        if (!context) return;
        context.drawImage(bitmap, 0, 0);
        const pixels = context.getImageData(0, 0, canvas.width, canvas.height);
        paintMask(pixels.data, palette);
        context.putImageData(pixels, 0, 0);
        canvas.dataset.painted = "true";
      })
      .catch(() => undefined);
  }

  function drawPage(msg, buffers) {
    revokeAll();
    const pending = [];
    const hasImages = model.get("has_images");
    grid.classList.toggle("se-table-mode", !hasImages);
    grid.style.setProperty("--se-thumb", `${model.get("thumb_size")}px`);
    cellOverlays = [];
    const thumb = model.get("thumb_size");
    cells = msg.cells.map((item) => {
      const cell = h("figure", { class: "se-cell", "data-testid": "se-thumb", "data-row": String(item.row), title: `row ${item.row} · key ${item.key}` });
      if (item.buffer !== undefined) {
        const img = h("img", { class: "se-img", alt: "", draggable: "false" });
        img.src = toDataUrl(buffers[item.buffer], item.mime);
        pending.push(img.decode().then(() => {
          // a small stored image (an 8x8 digit) is scaled up with its pixels kept sharp
          if (Math.max(img.naturalWidth, img.naturalHeight) * 2 <= model.get("thumb_size")) img.classList.add("se-pixelated");
        }).catch(() => undefined));
        if (item.video) {
          cell.append(videoTile(cell, img, item));
        } else if (item.overlays) {
          // the boxes over the thumbnail: an SVG the size of the <img>'s box, letterboxed like it (lib/boxes.js)
          const target = overlayTarget(item.overlays, thumb, thumb, buffers);
          cellOverlays.push(target);
          cell.append(h("div", { class: "se-frame" }, [img, ...target.layers]));
        } else {
          cell.append(img);
        }
      } else if (item.broken !== undefined) {
        // a video that cannot be decoded: a tile that says so, the reason on hover
        cell.append(h("div", { class: "se-img se-missing se-video-broken", "data-testid": "se-video-broken", title: String(item.broken),
          text: "broken video" }));
      } else if (hasImages) {
        cell.append(h("div", { class: "se-img se-missing", text: "no image" }));
      }
      if (item.fields) {
        const table = h("table", { class: "se-fields" });
        for (const [name, value] of Object.entries(item.fields)) {
          table.append(h("tr", {}, [h("th", { text: name }), h("td", { text: value })]));
        }
        cell.append(table);
      }
      const pendingLabel = h("span", { class: "se-label se-pending-label", "data-testid": "se-pending-label", hidden: "" });
      const caption = h("figcaption", {}, [
        labelBadge(item.label),
        pendingLabel,
        h("span", { class: "se-rowid", text: `#${item.row}` }),
        h("span", { class: "se-key", text: item.key }),
        ...(item.note ? [h("span", { class: "se-note", "data-testid": "se-note", text: item.note })] : []),
      ]);
      cell.append(caption);
      cell.addEventListener("click", (event) => {
        // a click selects; the detail opens on double-click or Enter, so selecting keeps the grid's width
        const shift = event.shiftKey;
        const toggle = event.ctrlKey || event.metaKey;
        command("click", { row: item.row, shift, toggle });
        setCursor(cells.indexOf(cell), false);
        if (detailRow !== null && !shift && !toggle) requestDetail(item.row, 0);  // an open pane follows
        root.focus({ preventScroll: true });
      });
      cell.addEventListener("dblclick", () => requestDetail(item.row, 0));
      return cell;
    });
    if (!cells.length) {
      grid.replaceChildren(h("div", { class: "se-empty", "data-testid": "se-empty", text: msg.empty || "no rows" }));
    } else {
      grid.replaceChildren(...cells);
    }
    drawAllOverlays();
    grid.dataset.page = String(msg.page);
    grid.dataset.ready = "";
    Promise.all(pending).then(() => {
      if (grid.dataset.page === String(msg.page)) grid.dataset.ready = `page-${msg.page}`;
    });
    if (cursor >= 0) setCursor(Math.min(cursor, cells.length - 1), false);  // the cursor stays where it was
    drawMarks();
    drawPager();
  }

  function requestDetail(row, step) {
    // at 1:1 the image comes at its stored size; otherwise bounded to 1024 px
    command("detail", { row, step, full: zoom === "1:1" }).then(({ response, buffers }) => onPush(response, buffers));
  }

  // --- videos: a tile's duration and hover scrubbing, the detail pane's player or strip (lib/video.js) ----
  const SCRUB_FRAMES = 8;
  let videoUrl = null;  // the detail pane's player's blob: revoked when the pane changes, not with the page's images
  function framesOf(row, count, size) {
    return command("video_frames", { row, count, size }).then(({ response, buffers }) => {
      if (response.type !== "video_frames") throw new Error(response.message || "no frames");
      return response.frames.map((f) => ({ src: toDataUrl(buffers[f.buffer], f.mime), index: f.index }));
    });
  }

  function videoTile(cell, img, item) {
    // the poster with its duration in a corner; the mouse over the cell scrubs through a few frames
    const badge = h("span", { class: "se-video-badge", "data-testid": "se-video-duration", text: formatDuration(item.video.duration),
      title: `${item.video.frames.toLocaleString()} frames at ${Number(item.video.fps.toFixed(3))} fps` });
    scrubber(cell, img, () => framesOf(item.row, SCRUB_FRAMES, model.get("thumb_size")));
    return h("div", { class: "se-frame se-video-frame" }, [img, badge]);
  }

  function dropVideo() {
    if (videoUrl) URL.revokeObjectURL(videoUrl);
    videoUrl = null;
  }

  function showStrip(box, msg, note) {
    box.dataset.mode = "loading-strip";
    framesOf(msg.row, 12, 256).then((frames) => {
      if (detailRow !== msg.row || !box.isConnected) return;
      box.replaceChildren(frameStrip(frames, msg.video.fps, note, h));
      box.dataset.mode = "strip";
    }).catch((error) => {
      box.replaceChildren(h("div", { class: "se-video-broken", text: `no frames: ${error.message}` }));
      box.dataset.mode = "broken";
    });
  }

  function videoBox(msg) {
    const box = h("div", { class: "se-detail-video", "data-testid": "se-detail-video" });
    const video = msg.video;
    if (video.broken !== undefined) {
      box.append(h("div", { class: "se-video-broken", "data-testid": "se-video-broken", text: `broken video: ${video.broken}` }));
      box.dataset.mode = "broken";
      return box;
    }
    const player = h("video", { class: "se-detail-player", "data-testid": "se-detail-player", controls: "", loop: "",
      playsinline: "", preload: "auto" });
    player.muted = true;
    const cannot = `this browser cannot play ${video.codec} in ${video.mime}: ${video.frames.toLocaleString()} frames, ` +
      `${video.width} x ${video.height}, ${formatDuration(video.duration)}; evenly spaced frames instead`;
    if (!canPlay(player, video.mime, video.codec)) {
      showStrip(box, msg, cannot);
      return box;
    }
    box.dataset.mode = "loading";
    command("video_media", { row: msg.row }).then(({ response, buffers }) => {
      if (detailRow !== msg.row || !box.isConnected) return;
      if (response.type !== "video_media" || !buffers.length) {
        showStrip(box, msg, `the video is not sent to the player (${response.message || "no bytes"}); frames instead`);
        return;
      }
      dropVideo();
      videoUrl = URL.createObjectURL(new Blob([buffers[0]], { type: response.mime }));
      player.addEventListener("error", () => showStrip(box, msg, cannot), { once: true });
      player.addEventListener("loadeddata", () => { box.dataset.mode = "player"; }, { once: true });
      player.src = videoUrl;
      box.replaceChildren(player);
      player.play().catch(() => undefined);  // muted: browsers let it start; a refusal leaves the controls
    });
    return box;
  }

  function drawDetail(msg, buffers) {
    detailRow = msg.row;
    dropVideo();
    detailOverlays = [];
    detailShown = { msg, buffers };
    const children = [];
    const close = h("button", { class: "se-close", title: "close (Esc)", text: "×" });
    close.addEventListener("click", closeDetail);
    const back = h("button", { title: "previous row (←)", text: "‹" });
    back.addEventListener("click", () => requestDetail(detailRow, -1));
    const forward = h("button", { title: "next row (→)", text: "›" });
    forward.addEventListener("click", () => requestDetail(detailRow, 1));
    const fit = h("button", { "data-testid": "se-zoom-fit", title: "fit the pane", text: "fit" });
    const actual = h("button", { "data-testid": "se-zoom-1", title: "one image pixel per screen pixel", text: "1:1" });
    similarButton = h("button", { "data-testid": "se-similar", text: "similar rows" });
    similarButton.addEventListener("click", () => askSimilar(msg.row));
    // a disabled button shows no tooltip in every browser: the reason sits on a wrapper too
    similarWrap = h("span", { class: "se-similar-wrap", "data-testid": "se-similar-wrap" }, [similarButton]);
    drawSimilar();
    children.push(h("div", { class: "se-detail-bar" }, [back, forward, fit, actual, similarWrap, h("span", { class: "se-spacer" }), close]));
    children.push(h("div", { class: "se-detail-title", "data-testid": "se-detail-title",
      text: `row ${msg.row} · key ${msg.key} · shard ${msg.shard}, row ${msg.shard_row} of that file` }));
    fit.disabled = actual.disabled = !buffers.length;
    if (buffers.length) {
      // one URL per detail message, kept while it shows (its panes are laid out again on a switch)
      if (!detailUrl || detailUrl.msg !== msg) {
        if (detailUrl) URL.revokeObjectURL(detailUrl.url);
        detailUrl = { msg, url: URL.createObjectURL(new Blob([buffers[0]], { type: msg.mime })) };
      }
      const url = detailUrl.url;
      // one image, or (side by side) one per Boxes column, each with the columns its pane draws
      const panes = msg.overlays && msg.overlays.size ? detailPanes(labelFields(), hiddenFields, detailMode) : [null];
      const imgs = panes.map((only, i) => h("img", { class: "se-detail-img", alt: "", "data-testid": i ? "se-detail-img-2" : "se-detail-img" }));
      const img = imgs[0];
      const stacks = panes.map((only, i) => {
        const stack = h("div", { class: "se-detail-stack", "data-testid": "se-detail-pane", "data-fields": only ? only.join(" ") : "" }, [imgs[i]]);
        if (only === null) return stack;
        // drawn in the stored image's own units over the <img> (which is the image, no bars): the SVG stretches with it
        const [width, height] = msg.overlays.size;
        const target = overlayTarget(msg.overlays, width, height, buffers, new Set(only));
        target.svg.setAttribute("preserveAspectRatio", "none");
        target.svg.classList.add("se-detail-boxes");
        target.labelled = true;
        detailOverlays.push(target);
        editOn(target, msg.row);
        stack.append(...target.layers);
        if (panes.length > 1) stack.append(h("div", { class: "se-pane-name", text: only.filter((n) => labelFields().some((f) => f.name === n && f.kind === "boxes")).join(" ") }));
        return stack;
      });
      const frame = h("div", { class: "se-detail-frame" + (panes.length > 1 ? " se-side" : "") }, stacks);
      const info = h("div", { class: "se-detail-info", "data-testid": "se-detail-info" });
      const image = msg.image || {};
      const stored = image.width !== undefined ? `${image.width} x ${image.height} ${image.format}` : (image.format || "");
      const describe = () => {
        const shown = img.naturalWidth && image.width !== undefined && (img.naturalWidth !== image.width || img.naturalHeight !== image.height)
          ? ` · sent at ${img.naturalWidth} x ${img.naturalHeight}` : "";
        info.textContent = `${stored} · ${(image.bytes ?? 0).toLocaleString()} bytes${shown} · ${zoom === "fit" ? "fit" : "1:1"}`;
      };
      const applyZoom = () => {
        for (const one of imgs) {
          one.classList.toggle("se-actual", zoom === "1:1");
          one.style.width = "";
          if (zoom === "fit") {
            // small images (an 8x8 digit) are shown enlarged by a whole factor, pixels kept sharp
            const factor = Math.floor(384 / imgs.length / Math.max(img.naturalWidth, img.naturalHeight, 1));
            if (factor >= 2) one.style.width = `${img.naturalWidth * factor}px`;
          }
        }
        detail.dataset.zoom = zoom;
        fit.classList.toggle("se-on", zoom === "fit");
        actual.classList.toggle("se-on", zoom === "1:1");
        describe();
      };
      fit.addEventListener("click", () => { zoom = "fit"; applyZoom(); });
      actual.addEventListener("click", () => {
        zoom = "1:1";
        applyZoom();
        // the image sent was made smaller than stored: ask for it at its stored size
        if (!msg.full && image.width !== undefined && img.naturalWidth && img.naturalWidth < image.width) requestDetail(msg.row, 0);
      });
      img.addEventListener("load", applyZoom);
      for (const one of imgs) one.src = url;
      describe();
      children.push(frame, info);
    }
    if (msg.row !== (chosenBox && chosenBox.row)) chosenBox = null;
    if (detailOverlays.length && labelFields().some((f) => f.kind === "boxes")) children.push(boxEditor);
    drawBoxEditor();
    if (msg.video) children.push(videoBox(msg));
    children.push(h("div", { class: "se-detail-labels" }, [labelBadge(msg.label), detailMarks]));
    drawDetailMarks(msg);
    const table = h("table", { class: "se-fields" });
    for (const [name, value] of msg.fields) table.append(h("tr", {}, [h("th", { text: name }), h("td", { text: value })]));
    children.push(table);
    detail.replaceChildren(...children);
    drawAllOverlays();
    detail.hidden = false;
    detail.dataset.row = String(msg.row);
  }

  // --- box edits in the detail pane: click a box, relabel or delete it; drag to draw one ---------------------
  const chosenText = h("span", { class: "se-muted", "data-testid": "se-box-chosen" });
  const chosenClass = h("select", { "data-testid": "se-box-class-select", title: "the box's new class" });
  const relabelBox = h("button", { "data-testid": "se-box-relabel", title: "give the box clicked this class (pending until saved)", text: "relabel box" });
  const deleteBox = h("button", { "data-testid": "se-box-delete", title: "delete the box clicked (pending until saved)", text: "delete box" });
  const drawToggle = h("button", { class: "se-chip", "data-testid": "se-box-draw", "aria-pressed": "false",
    title: "drag over the image to add a box of the chosen class", text: "draw a box" });
  const boxEditor = h("div", { class: "se-box-editor", "data-testid": "se-box-editor" }, [
    chosenText, chosenClass, relabelBox, deleteBox, h("span", { class: "se-spacer" }), drawToggle,
  ]);

  function fieldNamed(name) {
    return labelFields().find((f) => f.name === name) || null;
  }

  function drawBoxEditor() {
    // with a box clicked: its column, place and class, and the classes to give it; otherwise how to start
    const field = chosenBox ? fieldNamed(chosenBox.field) : fieldNamed(drawColumn(labelFields(), hiddenFields) || "");
    const names = (field && field.names) || [];
    const keep = chosenClass.value;
    chosenClass.replaceChildren(...names.map((name, index) => h("option", { value: String(index), text: name })));
    if ([...chosenClass.options].some((o) => o.value === keep)) chosenClass.value = keep;
    const target = drawColumn(labelFields(), hiddenFields);
    if (drawing) chosenText.textContent = target ? `drag over the image: a new ${target} box of the class chosen` : "switch a Boxes column on to draw";
    else if (chosenBox) chosenText.textContent = `${chosenBox.field} box ${chosenBox.index} selected`;
    else chosenText.textContent = "click a box to relabel or delete it";
    relabelBox.disabled = deleteBox.disabled = dead || !chosenBox;
    relabelBox.hidden = deleteBox.hidden = drawing;
    chosenClass.disabled = dead || !names.length || !(chosenBox || drawing);
    drawToggle.classList.toggle("se-on", drawing);
    drawToggle.setAttribute("aria-pressed", drawing ? "true" : "false");
    drawToggle.disabled = dead || !target;
    detail.classList.toggle("se-drawing", drawing);
  }

  function boxCommand(name, msg) {
    command(name, msg).then(({ response, buffers }) => onPush(response, buffers));
  }

  function editOn(target, row) {
    // a click on the image selects the smallest box under it; with "draw a box" on, a drag adds one
    const svg = target.svg;
    let start = null;
    let ghost = null;
    const [width, height] = target.overlays.size;
    svg.addEventListener("pointerdown", (event) => {
      if (!drawing || dead) return;
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
      const column = drawColumn(labelFields(), hiddenFields);
      if (corners && column && chosenClass.value !== "") {
        boxCommand("add_box", { row, column, corners, label: Number(chosenClass.value) });
      }
    });
    svg.addEventListener("click", (event) => {
      if (drawing || dead) return;
      const [x, y] = pointIn(event.clientX, event.clientY, svg.getBoundingClientRect());
      const hit = hitBox(target.hits || [], x, y);
      chosenBox = hit ? { row, field: hit.field, index: hit.index } : null;
      const field = hit ? fieldNamed(hit.field) : null;
      const box = hit ? ((target.overlays.boxes || {})[hit.field] || [])[hit.index] : null;
      drawBoxEditor();
      if (box && field) chosenClass.value = String(box[4]);
      drawAllOverlays();
    });
  }

  relabelBox.addEventListener("click", () => {
    if (!chosenBox) return;
    const { row, field, index } = chosenBox;
    chosenBox = null;
    boxCommand("edit_box", { row, column: field, index, label: Number(chosenClass.value) });
  });
  deleteBox.addEventListener("click", () => {
    if (!chosenBox) return;
    const { row, field, index } = chosenBox;
    chosenBox = null;
    boxCommand("edit_box", { row, column: field, index, drop: true });
  });
  drawToggle.addEventListener("click", () => {
    drawing = !drawing;
    chosenBox = null;
    drawBoxEditor();
    drawAllOverlays();
  });

  let similarButton = null;
  let similarWrap = null;
  let similarAsked = null;  // the row whose similar rows this view asked for while the kernel hashes images
  function askSimilar(row) {
    command("similar", { row }).then(({ response }) => { if (response.type === "hashing") similarAsked = row; });
  }
  function onSimilarProgress() {
    const progress = model.get("similar_progress") || {};
    hashing.draw(progress);
    drawSimilar();
    if (progress.state === "done" && similarAsked !== null && !dead) {
      const row = similarAsked;
      similarAsked = null;
      askSimilar(row);  // the hashes are kept now: this answer is at once
    } else if (progress.state !== "running") similarAsked = null;
  }
  function drawSimilar() {
    // "similar rows" compares by what the kernel chose (an embedding, or the images' hash), or says why not
    if (!similarButton) return;
    const by = model.get("similar_by");
    const why = by ? `show this row and the rows most like it, closest first, by ${by}` : `no similar rows: ${model.get("similar_reason")}`;
    similarButton.disabled = dead || !by || hashingRuns(model.get("similar_progress"));
    similarButton.title = why;
    similarWrap.title = why;
  }

  function drawEvaluation() {
    // what was evaluated, and a button per way to see its rows (with how many rows it shows)
    const evaluation = model.get("evaluation") || {};
    evalbar.hidden = !evaluation.kind;
    if (!evaluation.kind) return;
    evalText.textContent = evaluation.summary || "";
    byOutcome.hidden = evaluation.kind !== "boxes";
    byOutcome.classList.toggle("se-on", colourOutcomes);
    byOutcome.setAttribute("aria-pressed", colourOutcomes ? "true" : "false");
    const words = { fp: "rows with FP", fn: "rows with FN", mistakes: "most confident mistakes" };
    evalButtons.replaceChildren(...Object.entries(evaluation.counts || {}).map(([what, count]) => {
      const button = h("button", { "data-testid": "se-eval-rows", "data-what": what, text: `${words[what] ?? what} (${count.toLocaleString()})`,
        title: what === "mistakes" && evaluation.kind === "boxes" ? "rows with a false positive, the highest-scoring false positive first"
          : what === "mistakes" ? "rows predicted wrong, the model's most confident first" : `show the ${words[what]}` });
      button.disabled = dead || !count;
      button.addEventListener("click", () => command("evaluation_rows", { what }));
      return button;
    }));
  }

  function drawBack() {
    goBack.hidden = !model.get("can_go_back");
  }

  const detailMarks = h("span", { class: "se-detail-marks", "data-testid": "se-detail-marks" });
  function drawDetailMarks(msg) {
    // what is pending for this row, and where it stands among the rows the filters keep
    if (msg.row !== detailRow) return;
    const names = classNames();
    const parts = [];
    if (msg.pending_label !== null && msg.pending_label !== undefined) parts.push(`pending relabel → ${names[msg.pending_label] ?? msg.pending_label}`);
    if (msg.dropped) parts.push("pending drop");
    parts.push(msg.position >= 0 ? `${(msg.position + 1).toLocaleString()} of ${msg.shown.toLocaleString()} shown`
      : `not among the ${msg.shown.toLocaleString()} rows the filters keep`);
    detailMarks.textContent = parts.join(" · ");
    detail.classList.toggle("se-detail-dropped", Boolean(msg.dropped));
    detail.classList.toggle("se-detail-outside", msg.position < 0);
  }

  function closeDetail() {
    const wasOpen = detailRow !== null;
    detail.hidden = true;
    detail.replaceChildren();
    delete detail.dataset.row;
    detailRow = null;
    detailOverlays = [];
    detailShown = null;
    chosenBox = null;
    if (detailUrl) URL.revokeObjectURL(detailUrl.url);
    detailUrl = null;
    dropVideo();
    similarButton = similarWrap = null;
    if (cellOverlays.length || wasOpen) drawAllOverlays();  // the legend forgets the pane's classes
    if (wasOpen) command("detail_closed");
  }

  function goPage(page) {
    const pages = model.get("num_pages");
    const target = Math.max(0, Math.min(pages - 1, page));
    if (target !== model.get("page")) setModel("page", target);
  }

  // --- events ----------------------------------------------------------------
  prev.addEventListener("click", () => goPage(model.get("page") - 1));
  next.addEventListener("click", () => goPage(model.get("page") + 1));
  function jumpTo() {
    if (jump.value) goPage(Number(jump.value) - 1);
    jump.value = "";  // the next number typed is a new page, never appended to this one
  }
  jump.addEventListener("change", jumpTo);
  jump.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); jumpTo(); } });
  jump.addEventListener("focus", () => jump.select());
  shardSelect.addEventListener("change", () => setModel("shard", Number(shardSelect.value)));
  pageSizeSelect.addEventListener("change", () => setModel("page_size", Number(pageSizeSelect.value)));
  let searchTimer = null;
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") { clearTimeout(searchTimer); setModel("search", search.value); }
  });
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => setModel("search", search.value), 250);
  });
  selectPage.addEventListener("click", () => command("select_page"));
  fieldSelect.addEventListener("change", drawFieldInputs);
  function applyField() {
    const column = fieldSelect.value;
    if (!column) return;
    const number = (input) => (input.value === "" ? null : Number(input.value));
    if (fieldKind(column) === "boxes") {
      command("where_boxes", { column, cls: boxClass.value === "" ? null : Number(boxClass.value),
        min_area: number(fieldMin), max_area: number(fieldMax), min_score: number(boxScore) });
      boxScore.value = "";
    } else if (fieldKind(column) === "number") {
      command("where", { column, min: fieldMin.value === "" ? null : Number(fieldMin.value), max: fieldMax.value === "" ? null : Number(fieldMax.value) });
    } else {
      command("where", { column, [fieldOp.value]: fieldText.value });
    }
    fieldMin.value = fieldMax.value = fieldText.value = "";
  }
  fieldApply.addEventListener("click", applyField);
  for (const input of [fieldMin, fieldMax, fieldText, boxScore]) {
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") applyField(); });
  }
  sortSelect.addEventListener("change", () => command("sort", { column: sortSelect.value, descending: model.get("sort_desc") }));
  sortDir.addEventListener("click", () => command("sort", { column: model.get("sort_by"), descending: !model.get("sort_desc") }));
  flag.addEventListener("click", () => command("flag"));
  clear.addEventListener("click", () => command("clear"));
  dropFlagged.addEventListener("click", () => command("drop_flagged"));
  relabel.addEventListener("click", () => command("relabel", { label: Number(relabelTo.value) }));
  discard.addEventListener("click", () => command("discard"));
  subsetClear.addEventListener("click", () => command("show_all"));
  goBack.addEventListener("click", () => command("back"));
  threshold.addEventListener("input", drawAllOverlays);
  byOutcome.addEventListener("click", () => { colourOutcomes = !colourOutcomes; drawEvaluation(); drawAllOverlays(); });
  for (const button of [modeOverlay, modeSide]) {
    button.addEventListener("click", () => {
      detailMode = button.dataset.mode || "overlay";
      drawOverlayBar();
      if (detailShown) drawDetail(detailShown.msg, detailShown.buffers);
    });
  }
  save.addEventListener("click", () => { command("save", { message: message.value }); message.value = ""; });

  root.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && (event.key === "s" || event.key === "S")) {
      // Ctrl+S / Cmd+S saves the notebook: let JupyterLab's shortcut see this one key press (its handler
      // runs after this one, as the event bubbles to the document), then suppress its shortcuts again
      root.removeAttribute("data-lm-suppress-shortcuts");
      setTimeout(() => root.setAttribute("data-lm-suppress-shortcuts", "true"), 0);
      return;
    }
    if (dead || event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
    const columns = Math.max(1, Math.round(grid.clientWidth / ((cells[0]?.offsetWidth || 1) + 6)));
    let handled = true;
    switch (event.key) {
      case "ArrowRight":
      case "ArrowDown":
        if (detailRow !== null) requestDetail(detailRow, 1);
        else setCursor(cursor + (event.key === "ArrowDown" ? columns : 1));
        break;
      case "ArrowLeft":
      case "ArrowUp":
        if (detailRow !== null) requestDetail(detailRow, -1);
        else setCursor(cursor - (event.key === "ArrowUp" ? columns : 1));
        break;
      case "PageDown": goPage(model.get("page") + 1); break;
      case "PageUp": goPage(model.get("page") - 1); break;
      case "Enter":
        if (cursor >= 0 && cells[cursor]) requestDetail(Number(cells[cursor].dataset.row), 0);
        break;
      case " ":
        if (cursor >= 0 && cells[cursor]) command("click", { row: Number(cells[cursor].dataset.row), shift: false, toggle: true });
        break;
      case "x":
      case "X":
        command("flag");
        break;
      case "Escape":
        if (detailRow !== null) closeDetail(); else command("clear");
        break;
      default:
        handled = false;
    }
    if (handled) {
      event.preventDefault();
      event.stopPropagation();
    }
  });

  function onMessage(msg, buffers) {
    if (!requests.receive(msg, buffers)) onPush(msg, buffers);  // a reply to another view's request is not ours
  }

  function onPush(msg, buffers) {
    if (msg.type === "page") drawPage(msg, buffers);
    else if (msg.type === "detail") drawDetail(msg, buffers);
    else if (msg.type === "detail_closed") { detailRow = null; closeDetail(); }
    else if (msg.type === "detail_marks") drawDetailMarks(msg);
    else if (msg.type === "gone") drawGone(msg);
  }

  function drawGone(msg) {
    // the version was deleted (gc) after it was opened: say so where the rows were, never show stale ones
    revokeAll();
    detailRow = null;
    closeDetail();
    grid.replaceChildren(h("div", { class: "se-gone", "data-testid": "se-gone", text: String(msg.message) }));
  }

  const listeners = [
    ["msg:custom", onMessage],
    ["change:title", drawTitle],
    ["change:shards", drawShards],
    ["change:shard", drawShards],
    ["change:class_names", drawLabels],
    ["change:class_names", drawRelabelChoices],
    ["change:pending", drawPending],
    ["change:dropped", drawMarks],
    ["change:pending_labels", drawMarks],
    ["change:label_counts", drawLabels],
    ["change:label_filter", drawLabels],
    ["change:page", drawPager],
    ["change:num_pages", drawPager],
    ["change:page_size", drawPager],
    ["change:selected", drawMarks],
    ["change:flagged", drawMarks],
    ["change:num_rows", drawStatus],
    ["change:status", onStatus],
    ["change:searched", drawSearchHint],
    ["change:fields", drawFields],
    ["change:field_filters", drawFieldChips],
    ["change:sort_by", drawFields],
    ["change:sort_desc", drawFields],
    ["change:histograms", drawHistograms],
    ["change:box_histograms", drawHistograms],
    ["change:subset", drawSubset],
    ["change:similar_by", drawSimilar],
    ["change:similar_reason", drawSimilar],
    ["change:similar_progress", onSimilarProgress],
    ["change:can_go_back", drawBack],
    ["change:label_fields", drawOverlayBar],
    ["change:evaluation", drawEvaluation],
    ["change:evaluation", drawAllOverlays],
  ];
  for (const [event, handler] of listeners) model.on(event, handler);

  drawTitle();
  drawShards();
  drawLabels();
  drawRelabelChoices();
  drawPending();
  drawPager();
  drawStatus();
  drawFields();
  drawSubset();
  drawBack();
  drawOverlayBar();
  drawEvaluation();
  drawSearchHint();
  hashing.draw(model.get("similar_progress") || {});
  onStatus();
  requestAnimationFrame(() => { for (const input of [fieldMin, fieldMax]) fitPlaceholder(input); });
  search.value = model.get("search");
  command("refresh").then(({ response, buffers }) => onPush(response, buffers));

  return () => {
    for (const [event, handler] of listeners) model.off(event, handler);
    if (kernel && kernel.statusChanged) kernel.statusChanged.disconnect(onKernelStatus);
    clearTimeout(searchTimer);
    clearTimeout(statusTimer);
    revokeAll();
    dropVideo();
    requests.close({ type: "closed" });
  };
}

export default { render };
