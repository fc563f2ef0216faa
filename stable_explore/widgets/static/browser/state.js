// @ts-check
// The shard browser view's one mutable state, and the view every part of it works on: the model, the
// state, the requests to the kernel, and the parts' functions (each part adds its own when render wires
// them, so the parts call each other through the view and never import each other).

/**
 * @typedef {object} AnyModel what the browser needs of anywidget's model
 * @property {(name: string) => any} get
 * @property {(name: string, value: unknown) => void} set
 * @property {() => void} save_changes
 * @property {(event: string, handler: (...args: any[]) => void) => void} on
 * @property {(event: string, handler: (...args: any[]) => void) => void} off
 * @property {(content: object, callbacks?: unknown, buffers?: ArrayBuffer[]) => void} send
 * @property {any} [widget_manager]
 */

/** @typedef {import("../lib/requests.js").Reply} Reply */
/** @typedef {any} Message a message the kernel sent (a page, a detail, ...), as _pages.py writes it */
/** @typedef {{canvas: HTMLElement, classes: number[]}} MaskLayer */
/**
 * @typedef {object} OverlayTarget one image's drawing of its label columns
 * @property {SVGElement} svg
 * @property {any} overlays the kernel's {size, boxes, masks, keypoints, outcomes} of the image
 * @property {number} frameWidth
 * @property {number} frameHeight
 * @property {Map<string, MaskLayer>} masks
 * @property {Set<string> | null} only the columns this pane draws (side by side), null for all
 * @property {boolean} labelled the detail's: boxes named, and clickable
 * @property {Element[]} layers
 * @property {import("../lib/boxedit.js").Hit[]} [hits]
 */
/** @typedef {{row: number, field: string, index: number}} ChosenBox */

/** The view's mutable state, in one place. */
export function createState() {
  return {
    /** @type {Set<string>} object URLs of the page, revoked with it */
    urls: new Set(),
    /** the kernel restarted: nothing is sent, every control is disabled */
    dead: false,
    /** a request the kernel did not answer in time; the kernel's next status replaces it */
    pageError: "",
    /** @type {HTMLElement[]} the page's cells */
    cells: [],
    /** @type {OverlayTarget[]} per cell of the page: what to draw boxes on (again after a toggle) */
    cellOverlays: [],
    /** @type {OverlayTarget[]} the detail pane's, one per pane */
    detailOverlays: [],
    /** "overlay", or "side": one image per Boxes column */
    detailMode: "overlay",
    /** with an evaluation: boxes in their outcome's colour, not their class's */
    colourOutcomes: true,
    /** @type {Set<string>} the outcomes drawn, for the legend */
    outcomesSeen: new Set(),
    /** @type {ChosenBox | null} the detail's box clicked */
    chosenBox: null,
    /** the detail's "draw a box" is on: a drag over the image adds a box */
    drawing: false,
    /** @type {{msg: Message, buffers: DataView[]} | null} the detail's last message, to lay its panes out again */
    detailShown: null,
    /** @type {{msg: Message, url: string} | null} the detail's image */
    detailUrl: null,
    /** @type {Set<string>} label columns switched off in this view */
    hiddenFields: new Set(),
    /** the grid's cursor, -1 for none */
    cursor: -1,
    /** @type {number | null} the row the detail pane shows */
    detailRow: null,
    /** "fit" or "1:1" */
    zoom: "fit",
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    statusTimer: undefined,
    /** what an action said, while it shows */
    statusShown: "",
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    searchTimer: undefined,
    /** @type {string | null} the detail pane's player's blob: revoked when the pane changes, not with the page's images */
    videoUrl: null,
    /** @type {HTMLButtonElement | null} the detail's "similar rows" */
    similarButton: null,
    /** @type {HTMLElement | null} */
    similarWrap: null,
    /** @type {number | null} the row whose similar rows this view asked for while the kernel hashes images */
    similarAsked: null,
  };
}

/** @typedef {ReturnType<typeof createState>} State */

/**
 * @typedef {object} Core what render makes before the parts
 * @property {AnyModel} model
 * @property {State} state
 * @property {HTMLElement} root
 * @property {(name: string, msg?: object) => Promise<Reply>} command a request to the kernel
 * @property {(name: string, value: unknown) => void} setModel
 * @property {(msg: Message, buffers: DataView[]) => void} onPush draws what the kernel sent
 * @property {() => string[]} classNames
 * @property {() => any[]} labelFields
 */
/** @typedef {Core & import("./toolbar.js").Toolbar & import("./filters.js").Filters & import("./histograms.js").Histograms
 *   & import("./status.js").Status & import("./overlays.js").Overlays & import("./grid.js").Grid & import("./player.js").Player
 *   & import("./detail.js").Detail & import("./boxeditor.js").BoxEditor} View */
