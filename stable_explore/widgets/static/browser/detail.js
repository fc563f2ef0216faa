// @ts-check
// The detail pane: one row's image (fit or 1:1; its label columns over one image or side by side), its
// video, label and pending marks, its fields, and "similar rows" (with the progress line of the images'
// hashing that a first "similar rows" may start).
import { h } from "../lib/dom.js";
import { button } from "../lib/elements.js";
import { detailPanes } from "../lib/labelsets.js";
import { hashingLine, hashingRuns } from "../lib/hashing.js";
import { detailMarksText, detailTitle, fitFactor, imageInfo, similarWhy } from "../lib/browsetext.js";

/** @typedef {import("./state.js").Message} Message */

/**
 * @typedef {object} Detail
 * @property {HTMLElement} detail
 * @property {HTMLElement} hashingEl
 * @property {(msg: Message, buffers: DataView[]) => void} drawDetail
 * @property {() => void} closeDetail
 * @property {(msg: Message) => void} drawDetailMarks
 * @property {(row: number, step: number) => void} requestDetail the row ``step`` rows from ``row`` among those shown
 * @property {() => void} drawSimilar
 * @property {() => void} onSimilarProgress
 * @property {(progress: import("../lib/hashing.js").Progress) => void} drawHashing
 */

/**
 * The detail pane.
 * @param {import("./state.js").View} view
 * @returns {Detail}
 */
export function createDetail(view) {
  const { model, state, command } = view;
  const detail = h("div", { class: "se-detail", "data-testid": "se-detail", hidden: "" });
  const detailMarks = h("span", { class: "se-detail-marks", "data-testid": "se-detail-marks" });
  const hashing = hashingLine(() => command("similar_cancel"));  // the first "similar rows" hashing the images

  /** @param {number} row */
  function askSimilar(row) {
    command("similar", { row }).then(({ response }) => { if (response.type === "hashing") state.similarAsked = row; });
  }

  function onSimilarProgress() {
    const progress = model.get("similar_progress") || {};
    hashing.draw(progress);
    drawSimilar();
    if (progress.state === "done" && state.similarAsked !== null && !state.dead) {
      const row = state.similarAsked;
      state.similarAsked = null;
      askSimilar(row);  // the hashes are kept now: this answer is at once
    } else if (progress.state !== "running") state.similarAsked = null;
  }

  function drawSimilar() {
    // "similar rows" compares by what the kernel chose (an embedding, or the images' hash), or says why not
    const { similarButton, similarWrap } = state;
    if (!similarButton || !similarWrap) return;
    const by = model.get("similar_by");
    const why = similarWhy(by, model.get("similar_reason"));
    similarButton.disabled = state.dead || !by || hashingRuns(model.get("similar_progress"));
    similarButton.title = why;
    similarWrap.title = why;
  }

  /** @param {Message} msg */
  function drawDetailMarks(msg) {
    // what is pending for this row, and where it stands among the rows the filters keep
    if (msg.row !== state.detailRow) return;
    detailMarks.textContent = detailMarksText(msg, view.classNames());
    detail.classList.toggle("se-detail-dropped", Boolean(msg.dropped));
    detail.classList.toggle("se-detail-outside", msg.position < 0);
  }

  function closeDetail() {
    const wasOpen = state.detailRow !== null;
    detail.hidden = true;
    detail.replaceChildren();
    delete detail.dataset.row;
    state.detailRow = null;
    state.detailOverlays = [];
    state.detailShown = null;
    state.chosenBox = null;
    if (state.detailUrl) URL.revokeObjectURL(state.detailUrl.url);
    state.detailUrl = null;
    view.dropVideo();
    state.similarButton = state.similarWrap = null;
    if (state.cellOverlays.length || wasOpen) view.drawAllOverlays();  // the legend forgets the pane's classes
    if (wasOpen) command("detail_closed");
  }

  /**
   * @param {number} row
   * @param {number} step
   */
  function requestDetail(row, step) {
    // at 1:1 the image comes at its stored size; otherwise bounded to 1024 px
    command("detail", { row, step, full: state.zoom === "1:1" }).then(({ response, buffers }) => view.onPush(response, buffers));
  }

  /**
   * The pane's image, or (side by side) one per Boxes column, each with the columns its pane draws; its
   * zoom buttons and the line about the image.
   * @param {Message} msg
   * @param {DataView[]} buffers
   * @param {HTMLButtonElement} fit
   * @param {HTMLButtonElement} actual
   * @returns {HTMLElement[]}
   */
  function drawImage(msg, buffers, fit, actual) {
    // one URL per detail message, kept while it shows (its panes are laid out again on a switch)
    if (!state.detailUrl || state.detailUrl.msg !== msg) {
      if (state.detailUrl) URL.revokeObjectURL(state.detailUrl.url);
      state.detailUrl = { msg, url: URL.createObjectURL(new Blob([/** @type {BlobPart} */ (buffers[0])], { type: msg.mime })) };
    }
    const url = state.detailUrl.url;
    const fields = view.labelFields();
    /** @type {(string[] | null)[]} */
    const panes = msg.overlays && msg.overlays.size ? detailPanes(fields, state.hiddenFields, state.detailMode) : [null];
    const imgs = panes.map((only, i) => /** @type {HTMLImageElement} */ (h("img", { class: "se-detail-img", alt: "", "data-testid": i ? "se-detail-img-2" : "se-detail-img" })));
    const img = imgs[0];
    const stacks = panes.map((only, i) => {
      const stack = h("div", { class: "se-detail-stack", "data-testid": "se-detail-pane", "data-fields": only ? only.join(" ") : "" }, [imgs[i]]);
      if (only === null) return stack;
      // drawn in the stored image's own units over the <img> (which is the image, no bars): the SVG stretches with it
      const [width, height] = msg.overlays.size;
      const target = view.overlayTarget(msg.overlays, width, height, buffers, new Set(only));
      target.svg.setAttribute("preserveAspectRatio", "none");
      target.svg.classList.add("se-detail-boxes");
      target.labelled = true;
      state.detailOverlays.push(target);
      view.editOn(target, msg.row);
      stack.append(...target.layers);
      if (panes.length > 1) stack.append(h("div", { class: "se-pane-name", text: only.filter((n) => view.labelFields().some((f) => f.name === n && f.kind === "boxes")).join(" ") }));
      return stack;
    });
    const frame = h("div", { class: "se-detail-frame" + (panes.length > 1 ? " se-side" : "") }, stacks);
    const info = h("div", { class: "se-detail-info", "data-testid": "se-detail-info" });
    const image = msg.image || {};
    const describe = () => {
      info.textContent = imageInfo(image, img.naturalWidth, img.naturalHeight, state.zoom);
    };
    const applyZoom = () => {
      for (const one of imgs) {
        one.classList.toggle("se-actual", state.zoom === "1:1");
        one.style.width = "";
        if (state.zoom === "fit") {
          // small images (an 8x8 digit) are shown enlarged by a whole factor, pixels kept sharp
          const factor = fitFactor(imgs.length, img.naturalWidth, img.naturalHeight);
          if (factor >= 2) one.style.width = `${img.naturalWidth * factor}px`;
        }
      }
      detail.dataset.zoom = state.zoom;
      fit.classList.toggle("se-on", state.zoom === "fit");
      actual.classList.toggle("se-on", state.zoom === "1:1");
      describe();
    };
    fit.addEventListener("click", () => { state.zoom = "fit"; applyZoom(); });
    actual.addEventListener("click", () => {
      state.zoom = "1:1";
      applyZoom();
      // the image sent was made smaller than stored: ask for it at its stored size
      if (!msg.full && image.width !== undefined && img.naturalWidth && img.naturalWidth < image.width) requestDetail(msg.row, 0);
    });
    img.addEventListener("load", applyZoom);
    for (const one of imgs) one.src = url;
    describe();
    return [frame, info];
  }

  /**
   * @param {Message} msg
   * @param {DataView[]} buffers
   */
  function drawDetail(msg, buffers) {
    state.detailRow = msg.row;
    view.dropVideo();
    state.detailOverlays = [];
    state.detailShown = { msg, buffers };
    const children = [];
    const close = button({ class: "se-close", title: "close (Esc)", text: "×" });
    close.addEventListener("click", closeDetail);
    const back = button({ title: "previous row (←)", text: "‹" });
    back.addEventListener("click", () => requestDetail(/** @type {number} */ (state.detailRow), -1));
    const forward = button({ title: "next row (→)", text: "›" });
    forward.addEventListener("click", () => requestDetail(/** @type {number} */ (state.detailRow), 1));
    const fit = button({ "data-testid": "se-zoom-fit", title: "fit the pane", text: "fit" });
    const actual = button({ "data-testid": "se-zoom-1", title: "one image pixel per screen pixel", text: "1:1" });
    const similarButton = button({ "data-testid": "se-similar", text: "similar rows" });
    similarButton.addEventListener("click", () => askSimilar(msg.row));
    // a disabled button shows no tooltip in every browser: the reason sits on a wrapper too
    state.similarButton = similarButton;
    state.similarWrap = h("span", { class: "se-similar-wrap", "data-testid": "se-similar-wrap" }, [similarButton]);
    drawSimilar();
    children.push(h("div", { class: "se-detail-bar" }, [back, forward, fit, actual, state.similarWrap, h("span", { class: "se-spacer" }), close]));
    children.push(h("div", { class: "se-detail-title", "data-testid": "se-detail-title", text: detailTitle(msg) }));
    fit.disabled = actual.disabled = !buffers.length;
    if (buffers.length) children.push(...drawImage(msg, buffers, fit, actual));
    if (msg.row !== (state.chosenBox && state.chosenBox.row)) state.chosenBox = null;
    if (state.detailOverlays.length && view.labelFields().some((f) => f.kind === "boxes")) children.push(view.boxEditor);
    view.drawBoxEditor();
    if (msg.video) children.push(view.videoBox(msg));
    children.push(h("div", { class: "se-detail-labels" }, [view.labelBadge(msg.label), detailMarks]));
    drawDetailMarks(msg);
    const table = h("table", { class: "se-fields" });
    for (const [name, value] of msg.fields) table.append(h("tr", {}, [h("th", { text: name }), h("td", { text: value })]));
    children.push(table);
    detail.replaceChildren(...children);
    view.drawAllOverlays();
    detail.hidden = false;
    detail.dataset.row = String(msg.row);
  }

  return { detail, hashingEl: hashing.el, drawDetail, closeDetail, drawDetailMarks, requestDetail, drawSimilar, onSimilarProgress,
    drawHashing: hashing.draw };
}
