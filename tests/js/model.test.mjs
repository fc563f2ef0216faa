// What the widgets share about their model: listening to a set of events until the view goes, and a
// status line that shows a request the kernel did not answer until the kernel's next status.
import { test } from "node:test";
import assert from "node:assert/strict";

import { listenModel, statusLine } from "../../stable_explore/widgets/static/lib/model.js";

function model(values) {
  // an in-memory model with anywidget's get / on / off / set (set fires "change:<name>")
  const handlers = new Map();
  return {
    get: (name) => values[name],
    set(name, value) {
      values[name] = value;
      for (const handler of handlers.get(`change:${name}`) || []) handler();
    },
    on(event, handler) { handlers.set(event, [...(handlers.get(event) || []), handler]); },
    off(event, handler) { handlers.set(event, (handlers.get(event) || []).filter((h) => h !== handler)); },
    listening: () => [...handlers.values()].reduce((sum, list) => sum + list.length, 0),
  };
}

test("every event listened to is heard, and none after the view stops listening", () => {
  const m = model({ title: "a", mode: "pan" });
  const heard = [];
  const stop = listenModel(m, { "change:title": () => heard.push("title"), "change:mode": () => heard.push("mode") });
  m.set("title", "b");
  m.set("mode", "box");
  assert.deepEqual(heard, ["title", "mode"]);
  stop();
  m.set("title", "c");
  assert.deepEqual(heard, ["title", "mode"]);
  assert.equal(m.listening(), 0);
});

test("the status line shows the kernel's status, a timeout until the next status, and not other errors", () => {
  const m = model({ status: "ready" });
  const element = { textContent: "" };
  const line = statusLine(m, element);
  line.show();
  assert.equal(element.textContent, "ready");
  line.say({ type: "error", message: "the kernel's own error" }); // comes as the model's status instead
  assert.equal(element.textContent, "ready");
  line.say({ type: "error", timeout: true, message: "error: the kernel did not answer" });
  assert.equal(element.textContent, "error: the kernel did not answer");
  m.set("status", "selected 3 rows");
  assert.equal(element.textContent, "selected 3 rows");
  line.dispose();
  m.set("status", "later");
  assert.equal(element.textContent, "selected 3 rows");
  assert.equal(m.listening(), 0);
});
