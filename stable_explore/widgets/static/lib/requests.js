// @ts-check
// One request/reply layer for every widget (the kernel's side is widgets/_requests.py): a request is
// anywidget's command form, {kind: "anywidget-command", id, name, msg}, with binary buffers; its reply
// {kind: "anywidget-command-response", id, response} comes back to every view of the model, and only the
// view that asked takes it. A request the kernel does not answer within the timeout (it is busy, or gone)
// settles with {type: "error", timeout: true, message}, so no caller waits forever; a reply that comes
// after that goes to `late`, if given.

export const REQUEST = "anywidget-command";
export const RESPONSE = "anywidget-command-response";
export const TIMEOUT_MS = 60000;

/** @typedef {{type: string, message?: string, timeout?: boolean, [key: string]: unknown}} Response */
/** @typedef {{response: Response, buffers: DataView[]}} Reply */
/**
 * @typedef {object} Model what this layer needs of an anywidget model
 * @property {(content: object, callbacks?: unknown, buffers?: ArrayBuffer[]) => void} send
 */

/**
 * Requests to the kernel over ``model``.
 * @param {Model} model
 * @param {{timeoutMs?: number, late?: (reply: Reply, name: string) => void}} [options]
 */
export function requester(model, { timeoutMs = TIMEOUT_MS, late } = {}) {
  const prefix = Math.random().toString(36).slice(2);
  let next = 0;
  /** @type {Map<string, {name: string, resolve: (reply: Reply) => void, timer: ReturnType<typeof setTimeout>}>} */
  const waiting = new Map();
  /** @type {Map<string, string>} ids that timed out -> the request's name (a late reply still finds its way) */
  const overdue = new Map();
  /** @type {Response | null} */
  let closed = null;

  /**
   * Ask the kernel to run ``name``; settles with its reply, or an error reply after the timeout.
   * @param {string} name
   * @param {object} [msg]
   * @param {ArrayBuffer[]} [buffers]
   * @returns {Promise<Reply>}
   */
  function request(name, msg = {}, buffers = []) {
    if (closed) return Promise.resolve({ response: closed, buffers: [] });
    const id = `${prefix}-${++next}`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        waiting.delete(id);
        overdue.set(id, name);
        const seconds = Math.round(timeoutMs / 1000);
        const message = `error: the kernel did not answer "${name}" within ${seconds} s (busy running a cell, or stopped)`;
        resolve({ response: { type: "error", timeout: true, message }, buffers: [] });
      }, timeoutMs);
      waiting.set(id, { name, resolve, timer });
      model.send({ kind: REQUEST, id, name, msg }, undefined, buffers);
    });
  }

  /**
   * Take ``content`` if it is a reply: true for any reply (ours or another view's), false for a push.
   * @param {any} content
   * @param {DataView[]} buffers
   * @returns {boolean}
   */
  function receive(content, buffers) {
    if (!content || content.kind !== RESPONSE) return false;
    const entry = waiting.get(content.id);
    if (entry) {
      waiting.delete(content.id);
      clearTimeout(entry.timer);
      entry.resolve({ response: content.response, buffers });
    } else if (overdue.has(content.id)) {
      const name = /** @type {string} */ (overdue.get(content.id));
      overdue.delete(content.id);
      if (late) late({ response: content.response, buffers }, name);
    }
    return true;
  }

  /**
   * Settle every waiting request with ``response`` (the kernel is gone, the view is closed); later
   * requests settle with it at once and send nothing.
   * @param {Response} response
   */
  function close(response) {
    closed = response;
    for (const entry of waiting.values()) {
      clearTimeout(entry.timer);
      entry.resolve({ response, buffers: [] });
    }
    waiting.clear();
    overdue.clear();
  }

  return {
    request,
    receive,
    close,
    /** requests sent and not yet answered */
    get pending() { return waiting.size; },
  };
}
