// @ts-check
// Videos in the browser, the parts that are not drawing: which frame the mouse is over, a duration in
// words, whether this browser can play a video, and which frames a strip shows.

/**
 * Which of `count` evenly spaced frames the mouse is over, `x` pixels into a tile `width` pixels wide.
 * @param {number} x
 * @param {number} width
 * @param {number} count
 * @returns {number}
 */
export function scrubIndex(x, width, count) {
  if (count <= 0 || !(width > 0)) return 0;
  const fraction = Math.min(Math.max(x / width, 0), 0.999999);
  return Math.floor(fraction * count);
}

/**
 * A duration as a badge says it: "0.5 s" under ten seconds, else "1:05" (or "1:02:03").
 * @param {number} seconds
 * @returns {string}
 */
export function formatDuration(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return "";
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  const whole = Math.round(seconds);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = String(whole % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/**
 * The type a <video> is asked about: the container's MIME type with its codec where browsers know its name.
 * @param {string} mime
 * @param {string} codec  FFmpeg's codec name
 * @returns {string}
 */
export function playableType(mime, codec) {
  /** @type {Record<string, string>} */
  const names = { vp8: "vp8", vp9: "vp09.00.10.08", av1: "av01.0.04M.08", h264: "avc1.42E01E", hevc: "hvc1.1.6.L93.B0",
    mpeg4: "mp4v.20.9", theora: "theora" };
  const name = names[codec];
  return name ? `${mime}; codecs="${name}"` : mime;
}

/**
 * Whether a <video> says it may play this type ("maybe" or "probably"); an "" is a no.
 * @param {{ canPlayType(type: string): string }} video
 * @param {string} mime
 * @param {string} codec
 * @returns {boolean}
 */
export function canPlay(video, mime, codec) {
  return video.canPlayType(playableType(mime, codec)) !== "";
}

/**
 * The time (seconds) of frame `index` at `fps`, for a strip's captions.
 * @param {number} index
 * @param {number} fps
 * @returns {string}
 */
export function frameTime(index, fps) {
  if (!(fps > 0)) return `frame ${index}`;
  return `${(index / fps).toFixed(2)} s`;
}

/**
 * @typedef {{ src: string, index: number }} Frame  a frame's image (a data: URL) and its index in the video
 */

/** How long (ms) the mouse rests on a tile before its frames are asked for: a sweep across the grid asks nothing. */
export const SCRUB_DELAY_MS = 120;

/**
 * Hover scrubbing: while the mouse is over `area`, `img` shows the frame under it, of frames loaded
 * once (after the mouse has rested `delay` ms on the first hover) by `load`; leaving shows the poster again.
 * @param {HTMLElement} area
 * @param {HTMLImageElement} img
 * @param {() => Promise<Frame[]>} load
 * @param {number} [delay]
 * @returns {void}
 */
export function scrubber(area, img, load, delay = SCRUB_DELAY_MS) {
  const poster = img.src;
  /** @type {Frame[] | null} */
  let frames = null;
  let loading = false;
  let inside = false;
  let x = 0;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const show = () => {
    if (!frames || !frames.length || !inside) return;
    const box = img.getBoundingClientRect();
    const frame = frames[scrubIndex(x - box.left, box.width, frames.length)];
    if (img.getAttribute("src") !== frame.src) img.src = frame.src;
    img.dataset.frame = String(frame.index);
  };
  const start = () => {
    if (loading || !inside) return;
    loading = true;
    area.dataset.scrub = "loading";
    load().then((loaded) => {
      frames = loaded;
      area.dataset.scrub = String(loaded.length);
      show();
    }).catch(() => { area.dataset.scrub = "failed"; });
  };
  area.addEventListener("mouseenter", (event) => {
    inside = true;
    x = event.clientX;
    if (!loading) {
      clearTimeout(timer);
      timer = setTimeout(start, delay);
    }
    show();
  });
  area.addEventListener("mousemove", (event) => {
    x = event.clientX;
    show();
  });
  area.addEventListener("mouseleave", () => {
    inside = false;
    clearTimeout(timer);
    img.src = poster;
    delete img.dataset.frame;
  });
}

/**
 * A strip of frames, each captioned with its time (the detail pane's fallback for a codec the browser cannot play).
 * @param {Frame[]} frames
 * @param {number} fps
 * @param {string} note  why a strip shows, not the player
 * @param {(tag: string, attrs?: Record<string, string>, children?: (Node | string)[]) => HTMLElement} h
 * @returns {HTMLElement}
 */
export function frameStrip(frames, fps, note, h) {
  const cells = frames.map((frame) => {
    const img = h("img", { class: "se-strip-img", alt: "", "data-frame": String(frame.index) });
    /** @type {HTMLImageElement} */ (img).src = frame.src;
    return h("figure", { class: "se-strip-frame" }, [img, h("figcaption", { text: frameTime(frame.index, fps) })]);
  });
  return h("div", { class: "se-strip-box" }, [
    h("div", { class: "se-muted se-strip-note", "data-testid": "se-strip-note", text: note }),
    h("div", { class: "se-strip", "data-testid": "se-detail-strip" }, cells),
  ]);
}
