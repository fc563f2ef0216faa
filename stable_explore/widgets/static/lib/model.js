// @ts-check
// What every widget does with its anywidget model: listen to a set of its events and stop listening when
// the view goes, and keep a status line (the kernel's status, or a request the kernel did not answer in
// time, until the kernel's next status replaces it).

/**
 * @typedef {object} AnyModel the part of an anywidget model the widgets use
 * @property {(name: string) => any} get
 * @property {(name: string, value: unknown) => void} set
 * @property {() => void} save_changes
 * @property {(event: string, callback: (...args: any[]) => void) => void} on
 * @property {(event: string, callback: (...args: any[]) => void) => void} off
 * @property {(content: object, callbacks?: unknown, buffers?: ArrayBuffer[]) => void} send
 */

/**
 * Listen to ``model``'s events ("change:title", "msg:custom", ...); the returned function stops every one.
 * @param {Pick<AnyModel, "on" | "off">} model
 * @param {Record<string, (...args: any[]) => void>} handlers
 * @returns {() => void}
 */
export function listenModel(model, handlers) {
  const pairs = Object.entries(handlers);
  for (const [event, handler] of pairs) model.on(event, handler);
  return () => {
    for (const [event, handler] of pairs) model.off(event, handler);
  };
}

/**
 * A status line in ``element``: the model's "status", or the message of a reply the kernel never gave
 * (``say`` it), shown until the model's status changes. ``dispose`` stops listening.
 * @param {Pick<AnyModel, "get" | "on" | "off">} model
 * @param {{textContent: string | null}} element
 */
export function statusLine(model, element) {
  let pageError = "";
  const show = () => { element.textContent = pageError || model.get("status"); };
  const onStatus = () => { pageError = ""; show(); };
  model.on("change:status", onStatus);
  return {
    show,
    /**
     * Show a reply's error when the kernel did not answer in time (its own errors come as its status).
     * @param {{timeout?: boolean, message?: string} | undefined} response
     */
    say(response) {
      if (response && response.timeout) {
        pageError = response.message || "";
        show();
      }
    },
    dispose() { model.off("change:status", onStatus); },
  };
}
