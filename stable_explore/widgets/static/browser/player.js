// @ts-check
// Videos: a tile's duration and hover scrubbing, and the detail pane's player, or its strip of frames
// when the browser cannot play the video (lib/video.js).
import { h, toDataUrl } from "../lib/dom.js";
import { canPlay, formatDuration, frameStrip, scrubber } from "../lib/video.js";

const SCRUB_FRAMES = 8;

/**
 * @typedef {object} Player
 * @property {(cell: HTMLElement, img: HTMLImageElement, item: any) => HTMLElement} videoTile a cell's poster with its duration
 * @property {(msg: import("./state.js").Message) => HTMLElement} videoBox the detail pane's player or strip
 * @property {() => void} dropVideo the detail's player's media let go
 */

/**
 * The videos of the grid and of the detail pane.
 * @param {import("./state.js").View} view
 * @returns {Player}
 */
export function createPlayer(view) {
  const { model, state, command } = view;

  /**
   * @param {number} row
   * @param {number} count
   * @param {number} size
   * @returns {Promise<import("../lib/video.js").Frame[]>}
   */
  function framesOf(row, count, size) {
    return command("video_frames", { row, count, size }).then(({ response, buffers }) => {
      if (response.type !== "video_frames") throw new Error(response.message || "no frames");
      return /** @type {any[]} */ (response.frames).map((f) => ({ src: toDataUrl(buffers[f.buffer], f.mime), index: f.index }));
    });
  }

  /**
   * The poster with its duration in a corner; the mouse over the cell scrubs through a few frames.
   * @param {HTMLElement} cell
   * @param {HTMLImageElement} img
   * @param {any} item
   */
  function videoTile(cell, img, item) {
    const badge = h("span", { class: "se-video-badge", "data-testid": "se-video-duration", text: formatDuration(item.video.duration),
      title: `${item.video.frames.toLocaleString()} frames at ${Number(item.video.fps.toFixed(3))} fps` });
    scrubber(cell, img, () => framesOf(item.row, SCRUB_FRAMES, model.get("thumb_size")));
    return h("div", { class: "se-frame se-video-frame" }, [img, badge]);
  }

  function dropVideo() {
    if (state.videoUrl) URL.revokeObjectURL(state.videoUrl);
    state.videoUrl = null;
  }

  /**
   * @param {HTMLElement} box
   * @param {import("./state.js").Message} msg
   * @param {string} note
   */
  function showStrip(box, msg, note) {
    box.dataset.mode = "loading-strip";
    framesOf(msg.row, 12, 256).then((frames) => {
      if (state.detailRow !== msg.row || !box.isConnected) return;
      box.replaceChildren(frameStrip(frames, msg.video.fps, note, h));
      box.dataset.mode = "strip";
    }).catch((error) => {
      box.replaceChildren(h("div", { class: "se-video-broken", text: `no frames: ${error.message}` }));
      box.dataset.mode = "broken";
    });
  }

  /** @param {import("./state.js").Message} msg */
  function videoBox(msg) {
    const box = h("div", { class: "se-detail-video", "data-testid": "se-detail-video" });
    const video = msg.video;
    if (video.broken !== undefined) {
      box.append(h("div", { class: "se-video-broken", "data-testid": "se-video-broken", text: `broken video: ${video.broken}` }));
      box.dataset.mode = "broken";
      return box;
    }
    const player = /** @type {HTMLVideoElement} */ (h("video", { class: "se-detail-player", "data-testid": "se-detail-player", controls: "", loop: "",
      playsinline: "", preload: "auto" }));
    player.muted = true;
    const cannot = `this browser cannot play ${video.codec} in ${video.mime}: ${video.frames.toLocaleString()} frames, ` +
      `${video.width} x ${video.height}, ${formatDuration(video.duration)}; evenly spaced frames instead`;
    if (!canPlay(player, video.mime, video.codec)) {
      showStrip(box, msg, cannot);
      return box;
    }
    box.dataset.mode = "loading";
    command("video_media", { row: msg.row }).then(({ response, buffers }) => {
      if (state.detailRow !== msg.row || !box.isConnected) return;
      if (response.type !== "video_media" || !buffers.length) {
        showStrip(box, msg, `the video is not sent to the player (${response.message || "no bytes"}); frames instead`);
        return;
      }
      dropVideo();
      const url = URL.createObjectURL(new Blob([/** @type {BlobPart} */ (buffers[0])], { type: /** @type {string} */ (response.mime) }));
      state.videoUrl = url;
      player.addEventListener("error", () => showStrip(box, msg, cannot), { once: true });
      player.addEventListener("loadeddata", () => { box.dataset.mode = "player"; }, { once: true });
      player.src = url;
      box.replaceChildren(player);
      player.play().catch(() => undefined);  // muted: browsers let it start; a refusal leaves the controls
    });
    return box;
  }

  return { videoTile, videoBox, dropVideo };
}
