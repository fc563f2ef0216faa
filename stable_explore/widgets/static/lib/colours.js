// @ts-check
// Class colours: golden-angle hues, so neighbouring classes get distant colours; the browser's badges and
// the map's points use the same hues.

/** @typedef {[number, number, number]} Rgb */

/**
 * HSL to RGB, each channel 0..1.
 * @param {number} hue degrees
 * @param {number} saturation 0..1
 * @param {number} lightness 0..1
 * @returns {Rgb}
 */
export function hslToRgb(hue, saturation, lightness) {
  const a = saturation * Math.min(lightness, 1 - lightness);
  /** @param {number} n */
  const f = (n) => {
    const k = (n + hue / 30) % 12;
    return lightness - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
  };
  return [f(0), f(8), f(4)];
}

/**
 * WCAG relative luminance of an RGB colour (channels 0..1).
 * @param {Rgb} rgb
 * @returns {number}
 */
export function luminance([r, g, b]) {
  /** @param {number} c */
  const channel = (c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

/**
 * WCAG contrast ratio of two colours (channels 0..1): 1 to 21.
 * @param {Rgb} a
 * @param {Rgb} b
 * @returns {number}
 */
export function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/**
 * CSS text of a colour whose channels are 0..1.
 * @param {Rgb} rgb
 * @returns {string}
 */
export function rgbText(rgb) {
  return `rgb(${rgb.map((c) => Math.round(c * 255)).join(", ")})`;
}

/** @type {Map<number, {badge: string, light: string, badgeRgb: Rgb, lightRgb: Rgb}>} */
const colourCache = new Map();

/**
 * Class ``index``'s colours: ``badge`` is dark enough for white text at 4.5:1 (WCAG AA) whatever the hue;
 * ``light``, for a dark theme, is a light shade of the same hue at 5:1 or more against near-black.
 * @param {number} index
 */
export function classColours(index) {
  let colours = colourCache.get(index);
  if (!colours) {
    const hue = (index * 137.508) % 360;
    let lightness = 0.4;
    let rgb = hslToRgb(hue, 0.62, lightness);
    while (luminance(rgb) > 0.16 && lightness > 0.05) {  // (1 + 0.05) / (0.16 + 0.05) = 5.0:1 with white
      lightness -= 0.01;
      rgb = hslToRgb(hue, 0.62, lightness);
    }
    let light = 0.6;
    let lightRgb = hslToRgb(hue, 0.7, light);
    while (luminance(lightRgb) < 0.3 && light < 0.95) {  // >= 5:1 against a near-black background
      light += 0.01;
      lightRgb = hslToRgb(hue, 0.7, light);
    }
    colours = { badge: rgbText(rgb), light: rgbText(lightRgb), badgeRgb: rgb, lightRgb };
    colourCache.set(index, colours);
  }
  return colours;
}

/**
 * The map's colour of a label (channels 0..255): the class's hue; no label (index < 0): grey.
 * @param {number} index
 * @returns {Rgb}
 */
export function labelRgb(index) {
  if (index < 0) return [128, 128, 128];
  const [r, g, b] = hslToRgb((index * 137.508) % 360, 0.62, 0.42);
  return [Math.round(255 * r), Math.round(255 * g), Math.round(255 * b)];
}

/**
 * A colour (channels 0..255) as one pixel of an ImageData viewed as Uint32: little-endian ABGR.
 * @param {Rgb} rgb
 * @param {number} [alpha]
 * @returns {number}
 */
export function packed(rgb, alpha = 255) {
  return ((alpha << 24) | (rgb[2] << 16) | (rgb[1] << 8) | rgb[0]) >>> 0;
}

/**
 * The badge colour (CSS text) of class ``index``.
 * @param {number} index
 * @returns {string}
 */
export function labelColour(index) {
  return classColours(index).badge;
}
