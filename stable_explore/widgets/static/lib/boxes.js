// @ts-check
// Where a box is drawn: the kernel sends each box's corners as fractions (0..1) of its stored image, and the
// image is drawn letterboxed inside a frame (the thumbnail's object-fit: contain), so a box lands in the
// displayed image's rectangle, never in the bars around it.

/** @typedef {{x: number, y: number, width: number, height: number}} Rect */
/** @typedef {[number, number, number, number, number, number | null]} SentBox x0, y0, x1, y1 (fractions), class, score */

/**
 * Where an image of ``imageWidth`` x ``imageHeight`` is drawn inside a frame of ``frameWidth`` x ``frameHeight``
 * when it keeps its aspect (CSS ``object-fit: contain``): centred, as large as fits, bars on two sides.
 * An image of unknown size fills the frame.
 * @param {number} imageWidth
 * @param {number} imageHeight
 * @param {number} frameWidth
 * @param {number} frameHeight
 * @returns {Rect}
 */
export function containRect(imageWidth, imageHeight, frameWidth, frameHeight) {
  if (!(imageWidth > 0 && imageHeight > 0)) return { x: 0, y: 0, width: frameWidth, height: frameHeight };
  const scale = Math.min(frameWidth / imageWidth, frameHeight / imageHeight);
  const width = imageWidth * scale;
  const height = imageHeight * scale;
  return { x: (frameWidth - width) / 2, y: (frameHeight - height) / 2, width, height };
}

/**
 * A box's rectangle in the frame, from its corners as fractions of the image and the image's rectangle there.
 * Corners are put in order, and a box reaching outside the image is cut at its edge.
 * @param {number[]} corners x0, y0, x1, y1 as fractions of the image
 * @param {Rect} image where the image is drawn (see containRect)
 * @returns {Rect}
 */
export function placeBox(corners, image) {
  const clamp = (/** @type {number} */ v) => Math.min(1, Math.max(0, v));
  const [a, b, c, d] = corners.map(clamp);
  const [x0, x1] = a <= c ? [a, c] : [c, a];
  const [y0, y1] = b <= d ? [b, d] : [d, b];
  return {
    x: image.x + x0 * image.width,
    y: image.y + y0 * image.height,
    width: (x1 - x0) * image.width,
    height: (y1 - y0) * image.height,
  };
}

/**
 * The boxes drawn at a score threshold: every box without a score (ground truth), and scored boxes at or above it.
 * @param {SentBox[] | null | undefined} boxes
 * @param {number} threshold
 * @returns {SentBox[]}
 */
export function visibleBoxes(boxes, threshold) {
  return (boxes || []).filter((box) => box[5] === null || box[5] === undefined || box[5] >= threshold);
}

/**
 * The classes of some boxes, each once, in the order first met (what a legend lists).
 * @param {SentBox[]} boxes
 * @returns {number[]}
 */
export function boxClasses(boxes) {
  return [...new Set(boxes.map((box) => box[4]))];
}

/**
 * A box's label text: its class name (or index when the names do not have it) and its score, if any.
 * @param {SentBox} box
 * @param {string[]} names
 * @returns {string}
 */
export function boxText(box, names) {
  const name = names[box[4]] ?? String(box[4]);
  return box[5] === null || box[5] === undefined ? name : `${name} ${box[5].toFixed(2)}`;
}

/**
 * The colours a mask is painted in, one RGBA entry per class index 0..255: each class in ``colourOf(index)``
 * (channels 0..1) at ``alpha`` (0..255); the background (class 0, when ``background``) and values past the
 * classes (255 as "ignore") transparent.
 * @param {number} count how many classes the mask's column names
 * @param {(index: number) => number[]} colourOf
 * @param {{background?: boolean, alpha?: number}} [options]
 * @returns {Uint8ClampedArray}
 */
export function maskPalette(count, colourOf, { background = false, alpha = 110 } = {}) {
  const palette = new Uint8ClampedArray(256 * 4);
  for (let index = background ? 1 : 0; index < Math.min(count, 256); index++) {
    const [r, g, b] = colourOf(index);
    palette.set([Math.round(r * 255), Math.round(g * 255), Math.round(b * 255), alpha], index * 4);
  }
  return palette;
}

/**
 * Paint a mask in place: ``pixels`` are the RGBA bytes of a grey PNG whose value is the class index; each
 * pixel becomes its class's palette colour.
 * @param {Uint8ClampedArray} pixels
 * @param {Uint8ClampedArray} palette see maskPalette
 */
export function paintMask(pixels, palette) {
  for (let i = 0; i < pixels.length; i += 4) {
    const at = pixels[i] * 4;
    pixels[i] = palette[at];
    pixels[i + 1] = palette[at + 1];
    pixels[i + 2] = palette[at + 2];
    pixels[i + 3] = palette[at + 3];
  }
}

/**
 * The points and skeleton lines of one instance's keypoints, in the frame: points labelled (visibility > 0)
 * only, and a line only between two labelled points.
 * @param {number[]} flat x0, y0, v0, x1, y1, v1, ... with x and y as fractions of the image
 * @param {number[][]} skeleton pairs of point indexes
 * @param {Rect} image where the image is drawn (see containRect)
 * @returns {{points: {index: number, x: number, y: number, visible: boolean}[], lines: number[][]}}
 */
export function placeKeypoints(flat, skeleton, image) {
  /** @type {({index: number, x: number, y: number, visible: boolean} | null)[]} */
  const all = [];
  for (let i = 0; i + 2 < flat.length; i += 3) {
    const [x, y, v] = [flat[i], flat[i + 1], flat[i + 2]];
    all.push(v > 0 ? { index: i / 3, x: image.x + x * image.width, y: image.y + y * image.height, visible: v >= 2 } : null);
  }
  const lines = [];
  for (const [a, b] of skeleton) {
    const from = all[a];
    const to = all[b];
    if (from && to) lines.push([from.x, from.y, to.x, to.y]);
  }
  return { points: /** @type {{index: number, x: number, y: number, visible: boolean}[]} */ (all.filter(Boolean)), lines };
}
