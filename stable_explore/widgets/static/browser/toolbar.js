// @ts-check
// The browser's top: its title, and the toolbar of shard, page size, pager, "go to" and search.
import { h } from "../lib/dom.js";
import { button, input, select } from "../lib/elements.js";
import { clampPage, jumpTarget, pagerState } from "../lib/paging.js";
import { searchHint, shardText } from "../lib/browsetext.js";

/**
 * @typedef {object} Toolbar
 * @property {HTMLElement} title
 * @property {HTMLElement} toolbar
 * @property {HTMLInputElement} search
 * @property {() => void} drawTitle
 * @property {() => void} drawShards
 * @property {() => void} drawPager
 * @property {() => void} drawSearchHint
 * @property {(page: number) => void} goPage to page ``page`` (zero-based), kept within the pages
 */

/**
 * The title and the toolbar, their controls wired to the model.
 * @param {import("./state.js").View} view
 * @returns {Toolbar}
 */
export function createToolbar(view) {
  const { model, state } = view;
  const title = h("div", { class: "se-title" });
  const shardSelect = select({ "data-testid": "se-shard", title: "shard" });
  const pageSizeSelect = select({ title: "rows per page" });
  for (const size of [24, 48, 96, 192]) pageSizeSelect.append(h("option", { value: String(size), text: `${size} / page` }));
  const prev = button({ "data-testid": "se-prev", title: "previous page (PageUp)", text: "‹ prev" });
  const next = button({ "data-testid": "se-next", title: "next page (PageDown)", text: "next ›" });
  const pageText = h("span", { "data-testid": "se-page", class: "se-page" });
  const jump = input({ type: "number", min: "1", class: "se-jump", "data-testid": "se-jump", title: "go to page (Enter)", placeholder: "go to" });
  const search = input({ type: "search", class: "se-search", "data-testid": "se-search" });
  const toolbar = h("div", { class: "se-toolbar", "data-testid": "se-toolbar" }, [
    shardSelect, pageSizeSelect, prev, pageText, next, jump, search,
  ]);

  function drawTitle() {
    title.textContent = model.get("title");
  }

  function drawShards() {
    shardSelect.replaceChildren(h("option", { value: "-1", text: "all shards" }));
    for (const shard of model.get("shards")) shardSelect.append(h("option", { value: String(shard.index), text: shardText(shard) }));
    shardSelect.value = String(model.get("shard"));
  }

  function drawPager() {
    const page = model.get("page");
    const pages = model.get("num_pages");
    const pager = pagerState(page, pages);
    pageText.textContent = pager.text;
    prev.disabled = pager.first;
    next.disabled = pager.last;
    jump.max = String(pages);
    pageSizeSelect.value = String(model.get("page_size"));
  }

  function drawSearchHint() {
    const hint = searchHint(model.get("searched"));
    search.placeholder = hint.placeholder;
    search.title = hint.title;
  }

  /** @param {number} page */
  function goPage(page) {
    const target = clampPage(page, model.get("num_pages"));
    if (target !== model.get("page")) view.setModel("page", target);
  }

  prev.addEventListener("click", () => goPage(model.get("page") - 1));
  next.addEventListener("click", () => goPage(model.get("page") + 1));
  function jumpTo() {
    const target = jumpTarget(jump.value);
    if (target !== null) goPage(target);
    jump.value = "";  // the next number typed is a new page, never appended to this one
  }
  jump.addEventListener("change", jumpTo);
  jump.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); jumpTo(); } });
  jump.addEventListener("focus", () => jump.select());
  shardSelect.addEventListener("change", () => view.setModel("shard", Number(shardSelect.value)));
  pageSizeSelect.addEventListener("change", () => view.setModel("page_size", Number(pageSizeSelect.value)));
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") { clearTimeout(state.searchTimer); view.setModel("search", search.value); }
  });
  search.addEventListener("input", () => {
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(() => view.setModel("search", search.value), 250);
  });

  return { title, toolbar, search, drawTitle, drawShards, drawPager, drawSearchHint, goPage };
}
