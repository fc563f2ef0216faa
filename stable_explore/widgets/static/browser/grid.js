// @ts-check
// The grid: a page of cells (thumbnail or a tile that says why not, fields, label badge, pending relabel,
// row and key), their marks (selected, flagged, dropped), the cursor, and what a click on a cell asks.
import { h, toDataUrl } from "../lib/dom.js";
import { labelColour } from "../lib/colours.js";
import { cellClick, clampCursor } from "../lib/paging.js";
import { labelText, relabelText } from "../lib/browsetext.js";

/**
 * @typedef {object} Grid
 * @property {HTMLElement} grid
 * @property {(msg: import("./state.js").Message, buffers: DataView[]) => void} drawPage
 * @property {(msg: import("./state.js").Message) => void} drawGone the version was deleted: no rows to show
 * @property {() => void} drawMarks
 * @property {(index: number, scroll?: boolean) => void} setCursor
 * @property {(label: number) => HTMLElement} labelBadge
 * @property {() => void} revokeAll the page's object URLs let go
 */

/**
 * The grid of the page's cells.
 * @param {import("./state.js").View} view
 * @returns {Grid}
 */
export function createGrid(view) {
  const { model, state, command, root } = view;
  const grid = h("div", { class: "se-grid", "data-testid": "se-grid" });

  function revokeAll() {
    for (const url of state.urls) URL.revokeObjectURL(url);
    state.urls.clear();
  }

  /** @param {number} label */
  function labelBadge(label) {
    const badge = h("span", { class: "se-label", "data-testid": "se-label" });
    const said = labelText(label, view.classNames());
    badge.textContent = said.text;
    if (said.known) badge.style.background = labelColour(label);
    else badge.classList.add("se-nolabel");
    return badge;
  }

  function drawMarks() {
    const selected = new Set(model.get("selected"));
    const flagged = new Set(model.get("flagged"));
    const dropped = new Set(model.get("dropped"));
    const relabelled = model.get("pending_labels") || {};
    const names = view.classNames();
    for (const cell of state.cells) {
      const row = Number(cell.dataset.row);
      cell.classList.toggle("se-selected", selected.has(row));
      cell.classList.toggle("se-flagged", flagged.has(row));
      cell.classList.toggle("se-dropped", dropped.has(row));
      const pendingLabel = /** @type {HTMLElement} */ (cell.querySelector(".se-pending-label"));
      const target = relabelled[String(row)];
      if (target !== undefined) {
        pendingLabel.textContent = relabelText(target, names);
        pendingLabel.style.background = labelColour(target);
        pendingLabel.hidden = false;
      } else {
        pendingLabel.hidden = true;
      }
      cell.setAttribute("aria-selected", selected.has(row) ? "true" : "false");
    }
    view.drawStatus();
  }

  /**
   * @param {number} index
   * @param {boolean} [scroll]
   */
  function setCursor(index, scroll = true) {
    const cells = state.cells;
    if (!cells.length) return;
    state.cursor = clampCursor(index, cells.length);
    cells.forEach((cell, i) => cell.classList.toggle("se-cursor", i === state.cursor));
    if (scroll) cells[state.cursor].scrollIntoView({ block: "nearest" });
  }

  /**
   * One cell of the page.
   * @param {any} item the kernel's cell: row, key, label, image buffer or why none, fields, note
   * @param {DataView[]} buffers
   * @param {Promise<unknown>[]} pending the images' decoding, added to
   */
  function drawCell(item, buffers, pending) {
    const hasImages = model.get("has_images");
    const thumb = model.get("thumb_size");
    const cell = h("figure", { class: "se-cell", "data-testid": "se-thumb", "data-row": String(item.row), title: `row ${item.row} · key ${item.key}` });
    if (item.buffer !== undefined) {
      const img = /** @type {HTMLImageElement} */ (h("img", { class: "se-img", alt: "", draggable: "false" }));
      img.src = toDataUrl(buffers[item.buffer], item.mime);
      pending.push(img.decode().then(() => {
        // a small stored image (an 8x8 digit) is scaled up with its pixels kept sharp
        if (Math.max(img.naturalWidth, img.naturalHeight) * 2 <= model.get("thumb_size")) img.classList.add("se-pixelated");
      }).catch(() => undefined));
      if (item.video) {
        cell.append(view.videoTile(cell, img, item));
      } else if (item.overlays) {
        // the boxes over the thumbnail: an SVG the size of the <img>'s box, letterboxed like it (lib/boxes.js)
        const target = view.overlayTarget(item.overlays, thumb, thumb, buffers);
        state.cellOverlays.push(target);
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
        table.append(h("tr", {}, [h("th", { text: name }), h("td", { text: /** @type {string} */ (value) })]));
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
      const click = cellClick(event, state.detailRow !== null);
      command("click", { row: item.row, shift: click.shift, toggle: click.toggle });
      setCursor(state.cells.indexOf(cell), false);
      if (click.follow) view.requestDetail(item.row, 0);  // an open pane follows
      root.focus({ preventScroll: true });
    });
    cell.addEventListener("dblclick", () => view.requestDetail(item.row, 0));
    return cell;
  }

  /**
   * @param {import("./state.js").Message} msg
   * @param {DataView[]} buffers
   */
  function drawPage(msg, buffers) {
    revokeAll();
    /** @type {Promise<unknown>[]} */
    const pending = [];
    grid.classList.toggle("se-table-mode", !model.get("has_images"));
    grid.style.setProperty("--se-thumb", `${model.get("thumb_size")}px`);
    state.cellOverlays = [];
    state.cells = msg.cells.map((/** @type {any} */ item) => drawCell(item, buffers, pending));
    if (!state.cells.length) {
      grid.replaceChildren(h("div", { class: "se-empty", "data-testid": "se-empty", text: msg.empty || "no rows" }));
    } else {
      grid.replaceChildren(...state.cells);
    }
    view.drawAllOverlays();
    grid.dataset.page = String(msg.page);
    grid.dataset.ready = "";
    Promise.all(pending).then(() => {
      if (grid.dataset.page === String(msg.page)) grid.dataset.ready = `page-${msg.page}`;
    });
    if (state.cursor >= 0) setCursor(Math.min(state.cursor, state.cells.length - 1), false);  // the cursor stays where it was
    drawMarks();
    view.drawPager();
  }

  /** @param {import("./state.js").Message} msg */
  function drawGone(msg) {
    // the version was deleted (gc) after it was opened: say so where the rows were, never show stale ones
    revokeAll();
    state.detailRow = null;
    view.closeDetail();
    grid.replaceChildren(h("div", { class: "se-gone", "data-testid": "se-gone", text: String(msg.message) }));
  }

  return { grid, drawPage, drawGone, drawMarks, setCursor, labelBadge, revokeAll };
}
