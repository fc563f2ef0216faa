// @ts-check
// The histograms pane: one per number field (a click keeps the rows of a bin), and a Boxes column's box
// measures and classes (a click keeps the images with such a box).
import { h } from "../lib/dom.js";
import { classColours } from "../lib/colours.js";
import { BOX_MEASURES, barHeights, binText, measureName } from "../lib/histograms.js";
import { numberBin } from "../lib/browsetext.js";

/**
 * @typedef {object} Histograms
 * @property {HTMLElement} hists
 * @property {() => void} drawHistograms
 */

/**
 * The histograms pane.
 * @param {import("./state.js").View} view
 * @returns {Histograms}
 */
export function createHistograms(view) {
  const { model, command } = view;
  const hists = h("div", { class: "se-hists", "data-testid": "se-histograms" });

  /** @returns {any[]} */
  function fields() {
    return model.get("fields") || [];
  }

  /**
   * One box measure (or the classes, edges null) of a Boxes column.
   * @param {string} column
   * @param {string} what
   * @param {string} name
   * @param {number[]} counts
   * @param {number[] | null} edges
   * @param {string} unit
   */
  function boxHistogram(column, what, name, counts, edges, unit) {
    const heights = barHeights(counts, 20);
    const bars = h("div", { class: "se-hist-bars" });
    counts.forEach((count, i) => {
      const range = edges ? binText(edges, i) : (fields().find((f) => f.name === column)?.names || [])[i] ?? String(i);
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
    /** @type {Record<string, any>} */
    const made = model.get("box_histograms") || {};
    const out = [];
    for (const [column, measures] of Object.entries(made)) {
      const field = fields().find((f) => f.name === column) || {};
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
    const numbers = fields().filter((f) => f.kind === "number" && histograms[f.name]);
    const byBox = boxHistograms();
    hists.hidden = !numbers.length && !byBox.length;
    hists.replaceChildren(...byBox, ...numbers.map((f) => {
      /** @type {number[]} */
      const counts = histograms[f.name];
      const bars = h("div", { class: "se-hist-bars" });
      counts.forEach((count, i) => {
        // bins are half-open, [edge, next edge), the last closed: a click keeps exactly the rows counted
        const bin = numberBin(f, counts, i);
        const bar = h("div", { class: "se-hist-bar" });
        bar.style.height = `${bin.height}px`;
        const slot = h("div", { class: "se-hist-slot", "data-testid": "se-hist-slot", "data-bin": String(i), "data-count": String(count),
          title: `${f.name} ${bin.range}: ${count.toLocaleString()} rows (click to filter)` }, [bar]);
        slot.addEventListener("click", () => command("where_bin", { column: f.name, bin: i }));
        bars.append(slot);
      });
      return h("div", { class: "se-hist", "data-testid": "se-histogram", "data-column": f.name }, [
        h("div", { class: "se-hist-name", text: f.name }), bars,
        h("div", { class: "se-hist-range", text: `${Number(f.min.toPrecision(3))} – ${Number(f.max.toPrecision(3))}` }),
      ]);
    }));
  }

  return { hists, drawHistograms };
}
