// A widget whose kernel is gone: the statuses that mean it, and what marking it dead does.
import { test } from "node:test";
import assert from "node:assert/strict";

import { kernelGone } from "../../stable_explore/widgets/static/lib/alive.js";
import { requester } from "../../stable_explore/widgets/static/lib/requests.js";

test("restarting, autorestarting and dead mean the kernel is gone; busy and idle do not", () => {
  for (const state of ["restarting", "autorestarting", "dead"]) assert.ok(kernelGone(state), state);
  for (const state of ["idle", "busy", "starting", "unknown"]) assert.ok(!kernelGone(state), state);
});

test("after close, a request settles at once with the dead reply and sends nothing", async () => {
  const sent = [];
  const requests = requester({ send: (content) => sent.push(content) });
  const waiting = requests.request("select", {});
  requests.close({ type: "dead" });
  assert.equal((await waiting).response.type, "dead");
  assert.equal((await requests.request("open", { index: 1 })).response.type, "dead");
  assert.equal(sent.length, 1);
});
