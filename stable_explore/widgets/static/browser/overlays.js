// @ts-check
// What is drawn over the images: the bar of label columns to draw (each on or off), the predictions'
// score threshold, the detail's overlay / side-by-side switch and the legend; an evaluation's bar (boxes
// coloured by outcome, its rows a click away); and the drawing itself, boxes, keypoints and masks over
// each image of the page and of the detail pane.
import { h, svg as svgNode } from "../lib/dom.js";
import { button, input } from "../lib/elements.js";
import { classColours } from "../lib/colours.js";
import { boxClasses, boxText, containRect, maskPalette, paintMask, placeBox, placeKeypoints } from "../lib/boxes.js";
import { canSideBySide, isPrediction, OUTCOME_COLOURS, OUTCOME_NAMES, outcomeLegend, outcomeOf, shownBoxes } from "../lib/labelsets.js";
import { evaluationButton, overlayWhat } from "../lib/browsetext.js";

/** @typedef {import("./state.js").OverlayTarget} OverlayTarget */

/**
 * @typedef {object} Overlays
 * @property {HTMLElement} overlaybar
 * @property {HTMLElement} evalbar
 * @property {() => void} drawOverlayBar
 * @property {() => void} drawEvaluation
 * @property {() => void} drawAllOverlays every image's overlays drawn again, and the legend
 * @property {(overlays: any, frameWidth: number, frameHeight: number, buffers: DataView[], only?: Set<string> | null) => OverlayTarget} overlayTarget
 *   the layers to draw one image's overlays on (its masks painted once decoded)
 */

/**
 * The overlay and evaluation bars, and the drawing of overlays.
 * @param {import("./state.js").View} view
 * @returns {Overlays}
 */
export function createOverlays(view) {
  const { model, state, command } = view;
  const overlayToggles = h("span", { class: "se-overlay-toggles", "data-testid": "se-overlay-toggles" });
  const threshold = input({ type: "range", min: "0", max: "1", step: "0.05", value: "0", class: "se-threshold",
    "data-testid": "se-score-threshold", title: "hide predicted boxes scored below this (ground truth always shows)" });
  // the detail pane: every label column over one image, or ground truth and predictions side by side
  const modeOverlay = button({ class: "se-chip se-on", "data-testid": "se-detail-mode", "data-mode": "overlay",
    title: "draw ground truth and predictions over one image", text: "overlay" });
  const modeSide = button({ class: "se-chip", "data-testid": "se-detail-mode", "data-mode": "side",
    title: "one image per Boxes column, side by side", text: "side by side" });
  const modeSwitch = h("span", { class: "se-mode-switch", "data-testid": "se-detail-modes", hidden: "" }, [modeOverlay, modeSide]);
  const thresholdText = h("span", { class: "se-muted se-threshold-text", "data-testid": "se-score-threshold-text", text: "score ≥ 0.00" });
  const legend = h("span", { class: "se-legend", "data-testid": "se-legend" });
  const overlaybar = h("div", { class: "se-toolbar se-overlaybar", "data-testid": "se-overlaybar", hidden: "" }, [
    h("span", { class: "se-muted", text: "draw" }), overlayToggles, thresholdText, threshold, modeSwitch, h("span", { class: "se-sep" }), legend,
  ]);
  // an evaluation (browse(evaluation=r)): what it is, boxes coloured by outcome, and its rows a click away
  const evalText = h("span", { class: "se-muted se-eval-text", "data-testid": "se-eval-summary" });
  const byOutcome = button({ class: "se-chip se-on", "data-testid": "se-colour-outcome", "aria-pressed": "true",
    title: "colour boxes by their outcome (true positive, false positive, missed) instead of their class", text: "colour by outcome" });
  const evalButtons = h("span", { class: "se-eval-buttons", "data-testid": "se-eval-buttons" });
  const evalbar = h("div", { class: "se-toolbar se-evalbar", "data-testid": "se-evalbar", hidden: "" }, [
    evalText, h("span", { class: "se-sep" }), evalButtons, h("span", { class: "se-spacer" }), byOutcome,
  ]);

  function redrawDetail() {
    if (state.detailShown) view.drawDetail(state.detailShown.msg, state.detailShown.buffers);
  }

  function drawOverlayBar() {
    const fields = view.labelFields();
    const side = state.detailMode === "side";
    overlaybar.hidden = !fields.length;
    modeSwitch.hidden = !canSideBySide(fields);
    modeOverlay.classList.toggle("se-on", !side);
    modeSide.classList.toggle("se-on", side);
    modeOverlay.setAttribute("aria-pressed", !side ? "true" : "false");
    modeSide.setAttribute("aria-pressed", side ? "true" : "false");
    overlayToggles.replaceChildren(...fields.map((field) => {
      const on = !state.hiddenFields.has(field.name);
      const toggle = h("button", { class: "se-chip se-overlay-toggle" + (on ? " se-on" : ""), "data-testid": "se-overlay-toggle",
        "data-field": field.name, "aria-pressed": on ? "true" : "false", title: `draw the ${overlayWhat(field.kind)} of ${field.name} (click to switch)`,
        text: field.name });
      toggle.addEventListener("click", () => {
        if (state.hiddenFields.has(field.name)) state.hiddenFields.delete(field.name); else state.hiddenFields.add(field.name);
        drawOverlayBar();
        if (state.detailMode === "side") redrawDetail();  // the panes change
        drawAllOverlays();
      });
      return toggle;
    }));
  }

  function drawEvaluation() {
    // what was evaluated, and a button per way to see its rows (with how many rows it shows)
    const evaluation = model.get("evaluation") || {};
    evalbar.hidden = !evaluation.kind;
    if (!evaluation.kind) return;
    evalText.textContent = evaluation.summary || "";
    byOutcome.hidden = evaluation.kind !== "boxes";
    byOutcome.classList.toggle("se-on", state.colourOutcomes);
    byOutcome.setAttribute("aria-pressed", state.colourOutcomes ? "true" : "false");
    evalButtons.replaceChildren(...Object.entries(evaluation.counts || {}).map(([what, count]) => {
      const words = evaluationButton(what, count, evaluation.kind);
      const one = button({ "data-testid": "se-eval-rows", "data-what": what, text: words.text, title: words.title });
      one.disabled = state.dead || !count;
      one.addEventListener("click", () => command("evaluation_rows", { what }));
      return one;
    }));
  }

  function scoreThreshold() {
    return Number(threshold.value) || 0;
  }

  /**
   * The overlays of every label column switched on, over one image; ``seen`` collects [class, name] for the legend.
   * @param {OverlayTarget} target
   * @param {Map<string, string>} seen
   */
  function drawOverlay(target, seen) {
    const { svg, overlays, frameWidth, frameHeight, masks, only, labelled } = target;
    target.hits = [];
    const size = overlays.size || [0, 0];
    const image = containRect(size[0], size[1], frameWidth, frameHeight);
    svg.setAttribute("viewBox", `0 0 ${frameWidth} ${frameHeight}`);
    /** @type {SVGElement[]} */
    const drawn = [];
    for (const field of view.labelFields()) {
      /** @type {string[]} */
      const names = field.names || [];
      if (only && !only.has(field.name)) {
        const mask = masks.get(field.name);
        if (mask) mask.canvas.hidden = true;
        continue;
      }
      if (field.kind === "mask") {
        const mask = masks.get(field.name);
        if (!mask) continue;
        mask.canvas.hidden = state.hiddenFields.has(field.name);
        if (mask.canvas.hidden) continue;
        for (const index of mask.classes) {
          if (index < names.length && !(field.background && index === 0)) seen.set(`${index}`, names[index]);
        }
        continue;
      }
      if (state.hiddenFields.has(field.name)) continue;
      if (field.kind === "keypoints") {
        drawn.push(...keypoints(field, names, (overlays.keypoints || {})[field.name] || [], image, Math.max(frameWidth, frameHeight) / 64));
        continue;
      }
      const shown = shownBoxes(field, (overlays.boxes || {})[field.name], scoreThreshold());
      const predicted = isPrediction(field);
      for (const { box, index } of shown) {
        const corners = /** @type {number[]} */ (box.slice(0, 4));
        const place = placeBox(corners, image);
        const scored = box[5] !== null && box[5] !== undefined;
        const outcome = outcomeOf(overlays.outcomes, field.name, index);
        const byOutcome = state.colourOutcomes && outcome !== null;
        const colour = byOutcome ? OUTCOME_COLOURS[/** @type {string} */ (outcome)] : classColours(box[4]).light;
        if (byOutcome) state.outcomesSeen.add(/** @type {string} */ (outcome));
        const rect = svgNode("rect", { x: place.x, y: place.y, width: place.width, height: place.height,
          class: "se-box" + (scored || predicted ? " se-box-pred" : ""), "data-testid": "se-box", "data-field": field.name,
          "data-class": box[4], "data-index": index, "vector-effect": "non-scaling-stroke" });
        if (outcome !== null) rect.dataset.outcome = outcome;
        if (labelled) {
          target.hits.push({ field: field.name, index, corners });
          const chosen = state.chosenBox;
          if (chosen && chosen.row === state.detailRow && chosen.field === field.name && chosen.index === index) {
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
      for (const index of boxClasses(shown.filter(({ index }) => !(state.colourOutcomes && outcomeOf(overlays.outcomes, field.name, index) !== null))
        .map(({ box }) => box))) {
        seen.set(`${index}`, names[index] ?? String(index));
      }
    }
    svg.replaceChildren(...drawn);
  }

  /**
   * Each instance in a colour of its own: its skeleton's lines, then its labelled points (hidden ones hollow).
   * @param {any} field
   * @param {string[]} names
   * @param {any[]} instances
   * @param {import("../lib/boxes.js").Rect} image
   * @param {number} radius
   */
  function keypoints(field, names, instances, image, radius) {
    /** @type {SVGElement[]} */
    const drawn = [];
    instances.forEach((instance, n) => {
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
    return drawn;
  }

  function drawAllOverlays() {
    /** @type {Map<string, string>} */
    const seen = new Map();
    state.outcomesSeen = new Set();
    for (const target of state.cellOverlays) drawOverlay(target, seen);
    for (const target of state.detailOverlays) drawOverlay(target, seen);
    thresholdText.textContent = `score ≥ ${scoreThreshold().toFixed(2)}`;
    legend.replaceChildren(...[...seen].sort((a, b) => Number(a[0]) - Number(b[0])).map(([index, name]) => {
      const item = h("span", { class: "se-legend-item", "data-testid": "se-legend-item", "data-class": index });
      item.style.setProperty("--se-colour", classColours(Number(index)).light);
      item.append(h("span", { class: "se-swatch" }), h("span", { text: name }));
      return item;
    }), ...outcomeLegend(state.outcomesSeen).map(({ outcome, name, colour }) => {
      const item = h("span", { class: "se-legend-item", "data-testid": "se-legend-outcome", "data-outcome": outcome });
      item.style.setProperty("--se-colour", colour);
      item.append(h("span", { class: "se-swatch" }), h("span", { text: name }));
      return item;
    }));
  }

  /**
   * @param {any} overlays
   * @param {number} frameWidth
   * @param {number} frameHeight
   * @param {DataView[]} buffers
   * @param {Set<string> | null} [only]
   * @returns {OverlayTarget}
   */
  function overlayTarget(overlays, frameWidth, frameHeight, buffers, only = null) {
    const svg = svgNode("svg", { class: "se-boxes", "data-testid": "se-boxes", preserveAspectRatio: "xMidYMid meet", "aria-hidden": "true" });
    // masks: a canvas each, painted once its PNG is decoded (letterboxed by object-fit like the <img>)
    /** @type {Map<string, import("./state.js").MaskLayer>} */
    const masks = new Map();
    const fields = new Map(view.labelFields().map((field) => [field.name, field]));
    for (const [name, mask] of Object.entries(/** @type {Record<string, any>} */ (overlays.masks || {}))) {
      const field = fields.get(name);
      if (!mask || !field || mask.buffer === undefined || !buffers[mask.buffer]) continue;
      const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", { class: "se-mask", "data-testid": "se-mask", "data-field": name,
        width: String(mask.size[0]), height: String(mask.size[1]) }));
      masks.set(name, { canvas, classes: mask.classes || [] });
      paintMaskCanvas(canvas, buffers[mask.buffer], field);
    }
    return { svg, overlays, frameWidth, frameHeight, masks, only, labelled: false,
      layers: [...[...masks.values()].map((m) => m.canvas), svg] };
  }

  /**
   * @param {HTMLCanvasElement} canvas
   * @param {DataView} buffer
   * @param {any} field
   */
  function paintMaskCanvas(canvas, buffer, field) {
    const palette = maskPalette((field.names || []).length, (index) => classColours(index).lightRgb,
      { background: Boolean(field.background), alpha: 120 });
    createImageBitmap(new Blob([/** @type {BlobPart} */ (buffer)], { type: "image/png" }), { colorSpaceConversion: "none", premultiplyAlpha: "none" })
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

  threshold.addEventListener("input", drawAllOverlays);
  byOutcome.addEventListener("click", () => { state.colourOutcomes = !state.colourOutcomes; drawEvaluation(); drawAllOverlays(); });
  for (const mode of [modeOverlay, modeSide]) {
    mode.addEventListener("click", () => {
      state.detailMode = mode.dataset.mode || "overlay";
      drawOverlayBar();
      redrawDetail();
    });
  }

  return { overlaybar, evalbar, drawOverlayBar, drawEvaluation, drawAllOverlays, overlayTarget };
}
