// @ts-check
// The issues panel: a list of duplicate groups and suspected label errors; a click asks the kernel
// for that entry and shows its thumbnails side by side. User text goes in through textContent only.

import { h, toDataUrl } from "./lib/dom.js";
import { listenModel, statusLine } from "./lib/model.js";
import { requester } from "./lib/requests.js";
import { deadWatch } from "./lib/alive.js";

/** @typedef {import("./lib/model.js").AnyModel} AnyModel */
/** @typedef {{kind: string, index: number, title: string}} Entry an issue in the list */
/**
 * @typedef {{row: number, label: string, example?: boolean, buffer?: number, mime: string}} Item
 * a thumbnail of an opened entry (``buffer``: which of the message's buffers holds its image)
 */

/**
 * An element with a class and a test id.
 * @param {string} tag
 * @param {string} [cls]
 * @param {string} [testid]
 */
function el_(tag, cls, testid) {
  /** @type {Record<string, string>} */
  const attrs = {};
  if (cls) attrs.class = cls;
  if (testid) attrs["data-testid"] = testid;
  return h(tag, attrs);
}

/**
 * anywidget's render: the panel in ``el``, kept in step with ``model``.
 * @param {{model: AnyModel, el: HTMLElement}} props
 * @returns {() => void} the clean-up when the view goes
 */
function render({ model, el }) {
  const root = el_("div", "se-issues", "se-issues");
  root.tabIndex = 0;
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  const title = el_("div", "se-issues-title", "se-issues-title");
  const list = el_("div", "se-issues-list", "se-issues-list");
  const group = el_("div", "se-issues-group", "se-issues-group");
  const status = el_("div", "se-issues-status", "se-issues-status");
  root.append(title, list, group, status);
  el.appendChild(root);
  const requests = requester(model);
  // after a kernel restart the panel says so and stops looking alive (lib/alive.js, as the browser does)
  const alive = deadWatch(model, root, requests, "the kernel restarted: run the cell again to list the issues");
  title.after(alive.note);
  const statusText = statusLine(model, status); // a request the kernel did not answer in time shows there
  /** @param {number} index */
  function open(index) {
    if (alive.dead) return;
    requests.request("open", { index }).then(({ response }) => statusText.say(response));
  }

  function drawList() {
    title.textContent = model.get("title");
    list.replaceChildren();
    /** @type {Record<string, string>} */
    const headings = { duplicates: "Duplicate groups", label: "Suspected label errors" };
    /** @type {string | null} */
    let last = null;
    for (const entry of /** @type {Entry[]} */ (model.get("entries"))) {
      if (entry.kind !== last) {
        const heading = el_("div", "se-issues-heading");
        heading.textContent = headings[entry.kind] || entry.kind;
        list.appendChild(heading);
        last = entry.kind;
      }
      const item = el_("div", "se-issue", "se-issue");
      item.dataset.index = String(entry.index);
      item.dataset.kind = entry.kind;
      item.setAttribute("aria-selected", String(entry.index === model.get("active")));
      item.textContent = entry.title;
      item.addEventListener("click", () => open(entry.index));
      list.appendChild(item);
    }
  }

  /**
   * An opened entry's thumbnails, side by side.
   * @param {{items: Item[], more: number, index: number}} content
   * @param {DataView[]} buffers
   */
  function drawGroup(content, buffers) {
    group.replaceChildren();
    const size = model.get("thumb_size");
    let examples = false;
    for (const item of content.items) {
      if (item.example && !examples) {
        examples = true;
        const note = el_("span", "se-issue-examples", "se-issue-examples");
        note.textContent = `labelled ${item.label}:`;
        group.appendChild(note);
      }
      const cell = el_("div", item.example ? "se-issue-thumb se-issue-example" : "se-issue-thumb",
        item.example ? "se-issue-example" : "se-issue-thumb");
      cell.dataset.row = String(item.row);
      if (item.buffer !== undefined) {
        const img = /** @type {HTMLImageElement} */ (el_("img"));
        img.src = toDataUrl(buffers[item.buffer], item.mime);
        img.width = size;
        img.alt = `row ${item.row}`;
        cell.appendChild(img);
      }
      const caption = el_("span", "", "se-issue-caption");
      caption.textContent = `#${item.row} ${item.label}`.trim();
      cell.appendChild(caption);
      group.appendChild(cell);
    }
    if (content.more > 0) {
      const more = el_("span", "se-issue-more");
      more.textContent = `+${content.more} more`;
      group.appendChild(more);
    }
    group.dataset.ready = `entry-${content.index}`;
  }

  /** @param {any} content @param {DataView[]} buffers */
  function onMessage(content, buffers) {
    if (requests.receive(content, buffers)) return;
    if (content.type === "group") drawGroup(content, buffers);
  }
  const onActive = () => {
    for (const item of /** @type {NodeListOf<HTMLElement>} */ (list.querySelectorAll(".se-issue"))) {
      item.setAttribute("aria-selected", String(Number(item.dataset.index) === model.get("active")));
    }
  };
  drawList();
  statusText.show();
  const stopListening = listenModel(model, {
    "change:entries": drawList,
    "change:title": drawList,
    "change:active": onActive,
    "msg:custom": onMessage,
  });
  const active = model.get("active");
  if (active >= 0) open(active);
  return () => {
    stopListening();
    statusText.dispose();
    alive.dispose();
    requests.close({ type: "closed" });
  };
}

export default { render };
