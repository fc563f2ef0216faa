// @ts-check
// The shard browser's view. It draws; the kernel decides (filters, selection, flags).
// User text reaches the page through textContent only, never innerHTML.
//
// `render` wires the view's parts (browser/*.js), each making its own elements and drawing functions
// over one state (browser/state.js); the parts call each other through the view, and the words and
// numbers they show come from pure modules (lib/browsetext.js, lib/paging.js) that node's tests cover.

import { h } from "./lib/dom.js";
import { requester } from "./lib/requests.js";
import { createState } from "./browser/state.js";
import { createToolbar } from "./browser/toolbar.js";
import { createFilters } from "./browser/filters.js";
import { createHistograms } from "./browser/histograms.js";
import { createStatus } from "./browser/status.js";
import { createOverlays } from "./browser/overlays.js";
import { createGrid } from "./browser/grid.js";
import { createPlayer } from "./browser/player.js";
import { createDetail } from "./browser/detail.js";
import { createBoxEditor } from "./browser/boxeditor.js";
import { keyHandler } from "./browser/keys.js";

/**
 * @param {{model: import("./browser/state.js").AnyModel, el: HTMLElement}} props
 * @returns {() => void} the view's cleanup
 */
function render({ model, el }) {
  const state = createState();
  const root = h("div", {
    class: "se-browser",
    "data-testid": "se-browser",
    "data-lm-suppress-shortcuts": "true",
    tabindex: "0",
  });

  // requests to the kernel: one command each, answered by a reply with the same id (lib/requests.js); a
  // page or detail whose reply comes after the timeout is still drawn
  const requests = requester(model, { late: ({ response, buffers }) => { state.pageError = ""; onPush(response, buffers); } });

  /** @type {import("./browser/state.js").Core} */
  const core = {
    model,
    state,
    root,
    command(name, msg = {}) {
      return requests.request(name, msg).then((reply) => {
        if (reply.response && reply.response.timeout) {
          state.pageError = /** @type {string} */ (reply.response.message);
          view.drawStatus();
        }
        return reply;
      });
    },
    setModel(name, value) {
      if (state.dead) return;
      model.set(name, value);
      model.save_changes();
    },
    onPush,
    classNames: () => model.get("class_names") || [],
    labelFields: () => model.get("label_fields") || [],
  };
  // each part adds its functions to the view; a part calls another's only once all are made
  const view = /** @type {import("./browser/state.js").View} */ (core);
  Object.assign(view, createToolbar(view));
  Object.assign(view, createFilters(view));
  Object.assign(view, createHistograms(view));
  Object.assign(view, createStatus(view, requests));
  Object.assign(view, createOverlays(view));
  Object.assign(view, createGrid(view));
  Object.assign(view, createPlayer(view));
  Object.assign(view, createDetail(view));
  Object.assign(view, createBoxEditor(view));

  const body = h("div", { class: "se-body" }, [view.grid, view.detail]);
  root.append(view.title, view.deadNote, view.toolbar, view.overlaybar, view.evalbar, view.filterbar, view.fieldChips, view.hists,
    view.labelBar, view.editbar, view.statusRow, view.hashingEl, body);
  el.append(root);

  const kernel = model.widget_manager && model.widget_manager.kernel;
  /**
   * @param {unknown} _
   * @param {string} status
   */
  function onKernelStatus(_, status) {
    if (status === "restarting" || status === "autorestarting" || status === "dead") {
      view.markDead("the kernel restarted: run the cell again to browse");
    }
  }
  if (kernel && kernel.statusChanged) kernel.statusChanged.connect(onKernelStatus);

  root.addEventListener("keydown", keyHandler(view));

  /**
   * @param {any} msg
   * @param {DataView[]} buffers
   */
  function onMessage(msg, buffers) {
    if (!requests.receive(msg, buffers)) onPush(msg, buffers);  // a reply to another view's request is not ours
  }

  /**
   * @param {any} msg
   * @param {DataView[]} buffers
   */
  function onPush(msg, buffers) {
    if (msg.type === "page") view.drawPage(msg, buffers);
    else if (msg.type === "detail") view.drawDetail(msg, buffers);
    else if (msg.type === "detail_closed") { state.detailRow = null; view.closeDetail(); }
    else if (msg.type === "detail_marks") view.drawDetailMarks(msg);
    else if (msg.type === "gone") view.drawGone(msg);
  }

  /** @type {[string, (...args: any[]) => void][]} */
  const listeners = [
    ["msg:custom", onMessage],
    ["change:title", view.drawTitle],
    ["change:shards", view.drawShards],
    ["change:shard", view.drawShards],
    ["change:class_names", view.drawLabels],
    ["change:class_names", view.drawRelabelChoices],
    ["change:pending", view.drawPending],
    ["change:dropped", view.drawMarks],
    ["change:pending_labels", view.drawMarks],
    ["change:label_counts", view.drawLabels],
    ["change:label_filter", view.drawLabels],
    ["change:page", view.drawPager],
    ["change:num_pages", view.drawPager],
    ["change:page_size", view.drawPager],
    ["change:selected", view.drawMarks],
    ["change:flagged", view.drawMarks],
    ["change:num_rows", view.drawStatus],
    ["change:status", view.onStatus],
    ["change:searched", view.drawSearchHint],
    ["change:fields", view.drawFields],
    ["change:field_filters", view.drawFieldChips],
    ["change:sort_by", view.drawFields],
    ["change:sort_desc", view.drawFields],
    ["change:histograms", view.drawHistograms],
    ["change:box_histograms", view.drawHistograms],
    ["change:subset", view.drawSubset],
    ["change:similar_by", view.drawSimilar],
    ["change:similar_reason", view.drawSimilar],
    ["change:similar_progress", view.onSimilarProgress],
    ["change:can_go_back", view.drawBack],
    ["change:label_fields", view.drawOverlayBar],
    ["change:evaluation", view.drawEvaluation],
    ["change:evaluation", view.drawAllOverlays],
  ];
  for (const [event, handler] of listeners) model.on(event, handler);

  view.drawTitle();
  view.drawShards();
  view.drawLabels();
  view.drawRelabelChoices();
  view.drawPending();
  view.drawPager();
  view.drawStatus();
  view.drawFields();
  view.drawSubset();
  view.drawBack();
  view.drawOverlayBar();
  view.drawEvaluation();
  view.drawSearchHint();
  view.drawHashing(model.get("similar_progress") || {});
  view.onStatus();
  requestAnimationFrame(view.fitPlaceholders);
  view.search.value = model.get("search");
  view.command("refresh").then(({ response, buffers }) => onPush(response, buffers));

  return () => {
    for (const [event, handler] of listeners) model.off(event, handler);
    if (kernel && kernel.statusChanged) kernel.statusChanged.disconnect(onKernelStatus);
    clearTimeout(state.searchTimer);
    clearTimeout(state.statusTimer);
    view.revokeAll();
    view.dropVideo();
    requests.close({ type: "closed" });
  };
}

export default { render };
