// @ts-check
// Typed shorthands for the form controls a view builds with ``h`` (lib/dom.js): the same element, typed
// as the control it is, so its ``value`` and ``disabled`` are checked.
import { h } from "./dom.js";

/**
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLButtonElement}
 */
export function button(attrs = {}, children = []) {
  return /** @type {HTMLButtonElement} */ (h("button", attrs, children));
}

/**
 * @param {Record<string, string>} [attrs]
 * @returns {HTMLInputElement}
 */
export function input(attrs = {}) {
  return /** @type {HTMLInputElement} */ (h("input", attrs));
}

/**
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLSelectElement}
 */
export function select(attrs = {}, children = []) {
  return /** @type {HTMLSelectElement} */ (h("select", attrs, children));
}
