// @ts-check
// Long work in slices of a few milliseconds, so no task holds the page (input and frames run between).

export const SLICE_MS = 8; // a sliced job's budget per task
export const SLICE_ROWS = 32768; // rows between two looks at the clock

/**
 * Run ``stages`` ([count, run(from, to)], in order) a slice at a time, yielding to the page between slices
 * (a MessageChannel task: no 4 ms clamp); ``now`` ms of it at once, in the caller's task. ``done(ms)`` gets
 * the time spent working; the job's ``finish()`` runs what is left at once, ``cancel()`` drops it.
 * @param {Array<[number, (from: number, to: number) => void]>} stages
 * @param {(workMs: number) => void} done
 * @param {number} [now]
 * @returns {{cancel(): void, finish(): void, readonly running: boolean}}
 */
export function sliced(stages, done, now = 0) {
  let stage = 0, at = 0, work = 0, over = false;
  const channel = new MessageChannel();
  const stop = () => { over = true; channel.port1.onmessage = null; channel.port1.close(); channel.port2.close(); };
  /** @param {number} budget ms of work before this slice yields */
  const step = (budget) => {
    const t0 = performance.now();
    while (stage < stages.length) {
      const [count, run] = stages[stage];
      const to = Math.min(count, at + SLICE_ROWS);
      if (to > at) run(at, to);
      at = to;
      if (at >= count) { stage++; at = 0; }
      if (performance.now() - t0 > budget) break;
    }
    work += performance.now() - t0;
    if (stage < stages.length) return false;
    stop();
    done(work);
    return true;
  };
  const job = {
    cancel() { if (!over) stop(); },
    finish() { if (!over) step(Infinity); },
    get running() { return !over; },
  };
  channel.port1.onmessage = () => { if (!over && !step(SLICE_MS)) channel.port2.postMessage(0); };
  if (!now || !step(now)) channel.port2.postMessage(0);
  return job;
}
