// @ts-check
// A widget whose kernel is gone looks it. A widget's model lives in the kernel; after a restart the page
// still shows it, and without this it would go on selecting and counting with nothing reaching the kernel.
// The shard browser does this itself; the embedding map and the issues panel share this: on the kernel's
// "restarting" / "dead", every waiting request settles at once (lib/requests.js close), later ones send
// nothing, a note says what happened and what to do, and every control is disabled.
import { h } from "./dom.js";

/**
 * Whether a kernel status means the model's kernel is gone (it restarts, or died).
 * @param {string} state
 */
export function kernelGone(state) {
  return state === "restarting" || state === "autorestarting" || state === "dead";
}

/**
 * Watch ``model``'s kernel; when it goes, mark ``root`` dead (class "se-dead"), show the note (put
 * ``note`` in the page) and close ``requests``. ``onDead`` runs once then (a widget's own clean-up).
 * @param {any} model an anywidget model (its widget_manager.kernel, where JupyterLab gives it)
 * @param {HTMLElement} root
 * @param {{close: (response: {type: string}) => void}} requests
 * @param {string} text what the note says
 * @param {() => void} [onDead]
 */
export function deadWatch(model, root, requests, text, onDead) {
  const note = h("div", { class: "se-dead-note", "data-testid": "se-dead", role: "alert", hidden: "" });
  let dead = false;
  function markDead() {
    if (dead) return;
    dead = true;
    requests.close({ type: "dead" });
    root.classList.add("se-dead");
    note.textContent = text;
    note.hidden = false;
    for (const control of root.querySelectorAll("button, input, select")) {
      /** @type {HTMLButtonElement} */ (control).disabled = true;
    }
    if (onDead) onDead();
  }
  const kernel = model.widget_manager && model.widget_manager.kernel;
  /** @param {unknown} _ @param {string} state */
  function onKernelStatus(_, state) {
    if (kernelGone(state)) markDead();
  }
  if (kernel && kernel.statusChanged) kernel.statusChanged.connect(onKernelStatus);
  return {
    note,
    markDead,
    /** whether the kernel is gone: nothing more is sent */
    get dead() { return dead; },
    dispose() {
      if (kernel && kernel.statusChanged) kernel.statusChanged.disconnect(onKernelStatus);
    },
  };
}
