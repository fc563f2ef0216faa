// @ts-check
// Building the page: elements with attributes and text (user text only ever through textContent), and
// images from the kernel's binary buffers.

/**
 * An element with attributes ("class" sets className, "text" sets textContent) and children.
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

/**
 * A data: URL of a buffer's bytes. data: URLs are decoded in the page's process; a Blob and an object
 * URL cost two IPC round trips an image.
 * @param {ArrayBufferView} view
 * @param {string} mime
 * @returns {string}
 */
export function toDataUrl(view, mime) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  /** @type {string} */
  let encoded;
  const native = /** @type {{ toBase64?: () => string }} */ (/** @type {unknown} */ (bytes));
  if (typeof native.toBase64 === "function") {
    encoded = native.toBase64();
  } else {
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    encoded = btoa(binary);
  }
  return `data:${mime};base64,${encoded}`;
}

/**
 * A copy of a buffer's bytes as a typed array of its own (the kernel's buffers are views into one message).
 * @template {Uint8ArrayConstructor | Uint16ArrayConstructor | Uint32ArrayConstructor | Int32ArrayConstructor | Float32ArrayConstructor} T
 * @param {T} Type
 * @param {ArrayBufferView} view
 * @returns {InstanceType<T>}
 */
export function typedCopy(Type, view) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice();  // a fresh ArrayBuffer
  return /** @type {InstanceType<T>} */ (new Type(bytes.buffer));
}

/**
 * An SVG element with attributes (each written as text).
 * @param {string} tag
 * @param {Record<string, string | number>} [attrs]
 * @returns {SVGElement}
 */
export function svg(tag, attrs = {}) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}
