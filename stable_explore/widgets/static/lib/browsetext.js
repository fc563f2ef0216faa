// @ts-check
// The shard browser's words: what the status line, the shard list, the detail pane, the histograms and
// the box editor say, computed from the kernel's values alone (the view puts them on the page).

/**
 * A shard's entry in the shard list: its rows, and the range of the dataset's rows when it is known.
 * @param {{index: number, rows: number, start?: number, stop?: number}} shard
 * @returns {string}
 */
export function shardText(shard) {
  return shard.start === undefined
    ? `shard ${shard.index}: ${shard.rows.toLocaleString()} rows`
    : `shard ${shard.index}: rows ${shard.start.toLocaleString()}–${(/** @type {number} */ (shard.stop) - 1).toLocaleString()} (${shard.rows.toLocaleString()})`;
}

/**
 * The message the status line shows: a request that timed out, else what the last action said while it
 * is still the kernel's status (it is dropped after a while), else nothing.
 * @param {string} pageError
 * @param {string} shown
 * @param {string} status the kernel's status now
 * @returns {string}
 */
export function statusMessage(pageError, shown, status) {
  return pageError || (shown === status ? shown : "");
}

/**
 * Whether an action's status leaves the line after a while (an error stays until the next action).
 * @param {string} status
 * @returns {boolean}
 */
export function statusFades(status) {
  return Boolean(status && !status.startsWith("error"));
}

/**
 * The status line: the counts, then the message if any.
 * @param {number} rows
 * @param {number} selected
 * @param {number} flagged
 * @param {string} message
 * @returns {string}
 */
export function statusSummary(rows, selected, flagged, message) {
  return `${rows.toLocaleString()} rows · ${selected} selected · ${flagged} flagged` + (message ? ` · ${message}` : "");
}

/**
 * @param {string} pending the kernel's summary of the pending edits, "" for none
 * @returns {string}
 */
export function pendingLine(pending) {
  return pending ? `pending: ${pending}` : "no pending edits";
}

/**
 * The search box's placeholder and tooltip, naming what it searches.
 * @param {string} searched
 * @returns {{placeholder: string, title: string}}
 */
export function searchHint(searched) {
  const what = searched || "keys";
  return { placeholder: `search ${what}…`, title: `rows whose ${what} contain this text (case-insensitive)` };
}

/**
 * A class's name for a label badge, or what shows for a row without a known label.
 * @param {number} label
 * @param {string[]} names
 * @returns {{text: string, known: boolean}}
 */
export function labelText(label, names) {
  if (label >= 0 && label < names.length) return { text: names[label], known: true };
  return { text: names.length ? "—" : "", known: false };
}

/**
 * What a cell's pending relabel says.
 * @param {number} target
 * @param {string[]} names
 * @returns {string}
 */
export function relabelText(target, names) {
  return `→ ${names[target] ?? target}`;
}

/**
 * The detail pane's line of what is pending for its row and where the row stands among those shown.
 * @param {{pending_label?: number | null, dropped?: boolean, position: number, shown: number}} marks
 * @param {string[]} names
 * @returns {string}
 */
export function detailMarksText(marks, names) {
  const parts = [];
  if (marks.pending_label !== null && marks.pending_label !== undefined) parts.push(`pending relabel → ${names[marks.pending_label] ?? marks.pending_label}`);
  if (marks.dropped) parts.push("pending drop");
  parts.push(marks.position >= 0 ? `${(marks.position + 1).toLocaleString()} of ${marks.shown.toLocaleString()} shown`
    : `not among the ${marks.shown.toLocaleString()} rows the filters keep`);
  return parts.join(" · ");
}

/**
 * The detail pane's title line.
 * @param {{row: number, key: string, shard: number, shard_row: number}} msg
 * @returns {string}
 */
export function detailTitle(msg) {
  return `row ${msg.row} · key ${msg.key} · shard ${msg.shard}, row ${msg.shard_row} of that file`;
}

/**
 * The detail pane's line about its image: as stored, its bytes, the size it was sent at when smaller, the zoom.
 * @param {{width?: number, height?: number, format?: string, bytes?: number}} image
 * @param {number} naturalWidth the size the browser decoded (0 before it has)
 * @param {number} naturalHeight
 * @param {string} zoom "fit" or "1:1"
 * @returns {string}
 */
export function imageInfo(image, naturalWidth, naturalHeight, zoom) {
  const stored = image.width !== undefined ? `${image.width} x ${image.height} ${image.format}` : (image.format || "");
  const shown = naturalWidth && image.width !== undefined && (naturalWidth !== image.width || naturalHeight !== image.height)
    ? ` · sent at ${naturalWidth} x ${naturalHeight}` : "";
  return `${stored} · ${(image.bytes ?? 0).toLocaleString()} bytes${shown} · ${zoom === "fit" ? "fit" : "1:1"}`;
}

/**
 * The whole factor a small image is enlarged by to fit the pane (its pixels kept sharp): below 2, none.
 * @param {number} panes images side by side
 * @param {number} naturalWidth
 * @param {number} naturalHeight
 * @returns {number}
 */
export function fitFactor(panes, naturalWidth, naturalHeight) {
  return Math.floor(384 / panes / Math.max(naturalWidth, naturalHeight, 1));
}

/**
 * Why the "similar rows" button does what it does, or why it cannot.
 * @param {string} by what the kernel compares by, "" for nothing
 * @param {string} reason why there is nothing to compare by
 * @returns {string}
 */
export function similarWhy(by, reason) {
  return by ? `show this row and the rows most like it, closest first, by ${by}` : `no similar rows: ${reason}`;
}

const EVALUATION_WORDS = /** @type {Record<string, string>} */ ({ fp: "rows with FP", fn: "rows with FN", mistakes: "most confident mistakes" });

/**
 * An evaluation's button for one way to see its rows: its words with the count, and its tooltip.
 * @param {string} what "fp", "fn" or "mistakes"
 * @param {number} count
 * @param {string} kind the evaluation's kind ("boxes" or a classification's)
 * @returns {{text: string, title: string}}
 */
export function evaluationButton(what, count, kind) {
  const words = EVALUATION_WORDS[what];
  return {
    text: `${words ?? what} (${count.toLocaleString()})`,
    title: what === "mistakes" && kind === "boxes" ? "rows with a false positive, the highest-scoring false positive first"
      : what === "mistakes" ? "rows predicted wrong, the model's most confident first" : `show the ${words}`,
  };
}

/**
 * A number histogram's bin: its range (bins are half-open, [edge, next edge), the last closed) and the
 * height of its bar out of 20 px.
 * @param {{min: number, max: number, edges?: number[]}} field
 * @param {number[]} counts
 * @param {number} i
 * @returns {{range: string, height: number}}
 */
export function numberBin(field, counts, i) {
  const edges = field.edges || [];
  const peak = Math.max(1, ...counts);
  const last = i === counts.length - 1;
  const lo = Number((edges[i] ?? field.min).toPrecision(4));
  const hi = Number((edges[i + 1] ?? field.max).toPrecision(4));
  const count = counts[i];
  return { range: last ? `${lo} – ${hi}` : `${lo} – <${hi}`, height: count ? Math.max(2, Math.round((20 * count) / peak)) : 0 };
}

/**
 * What a label column's switch draws.
 * @param {string} kind
 * @returns {string}
 */
export function overlayWhat(kind) {
  return kind === "mask" ? "mask" : kind === "keypoints" ? "keypoints" : "boxes";
}

/**
 * The box editor's line: how to draw, which box is chosen, or how to start.
 * @param {boolean} drawing
 * @param {string | null} target the Boxes column a drawn box goes to
 * @param {{field: string, index: number} | null} chosen
 * @returns {string}
 */
export function boxEditorText(drawing, target, chosen) {
  if (drawing) return target ? `drag over the image: a new ${target} box of the class chosen` : "switch a Boxes column on to draw";
  if (chosen) return `${chosen.field} box ${chosen.index} selected`;
  return "click a box to relabel or delete it";
}

/**
 * The min and max inputs' placeholders and tooltips for a field: a Boxes column's area, a number's range.
 * @param {{min?: number, max?: number, normalized?: boolean} | undefined} entry
 * @param {string} kind
 * @returns {{minPlaceholder: string, maxPlaceholder: string, minTitle: string | null, maxTitle: string | null}} a null title is left as it was
 */
export function rangeHints(entry, kind) {
  if (kind === "boxes" && entry) {
    const unit = entry.normalized ? "(fraction of the image)" : "(px²)";
    return { minPlaceholder: "min area", maxPlaceholder: "max area",
      minTitle: `a box's area (width x height) of at least ${unit}`, maxTitle: `a box's area (width x height) of at most ${unit}: "smaller than"` };
  }
  if (entry && entry.min !== undefined) {
    return { minPlaceholder: `min ${Number(entry.min.toPrecision(4))}`, maxPlaceholder: `max ${Number(/** @type {number} */ (entry.max).toPrecision(4))}`,
      minTitle: "at least", maxTitle: "at most" };
  }
  return { minPlaceholder: "min", maxPlaceholder: "max", minTitle: null, maxTitle: null };
}
