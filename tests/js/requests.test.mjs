// The widgets' request/reply layer: replies find their request, another view's replies are left alone,
// and nothing waits forever.
import { test } from "node:test";
import assert from "node:assert/strict";

import { REQUEST, RESPONSE, requester } from "../../stable_explore/widgets/static/lib/requests.js";

function fakeModel() {
  const sent = [];
  return { sent, send(content, callbacks, buffers) { sent.push({ content, buffers }); } };
}

test("a request is anywidget's command form, and its reply settles it with the reply's buffers", async () => {
  const model = fakeModel();
  const requests = requester(model);
  const buffer = new Int32Array([4, 9]).buffer;
  const reply = requests.request("select", { shape: { kind: "box" } }, [buffer]);
  const [{ content, buffers }] = model.sent;
  assert.equal(content.kind, REQUEST);
  assert.equal(content.name, "select");
  assert.deepEqual(content.msg, { shape: { kind: "box" } });
  assert.deepEqual(buffers, [buffer]);
  const image = new DataView(new ArrayBuffer(3));
  assert.equal(requests.receive({ kind: RESPONSE, id: content.id, response: { type: "ok" } }, [image]), true);
  assert.deepEqual(await reply, { response: { type: "ok" }, buffers: [image] });
  assert.equal(requests.pending, 0);
});

test("another view's reply is a reply (not a push) but settles nothing here", async () => {
  const model = fakeModel();
  const mine = requester(model);
  const theirs = requester(fakeModel());
  const waiting = mine.request("refresh");
  assert.equal(mine.receive({ kind: RESPONSE, id: "someone-else-1", response: { type: "page" } }, []), true);
  assert.equal(mine.pending, 1);
  assert.equal(theirs.receive({ kind: RESPONSE, id: model.sent[0].content.id, response: {} }, []), true);
  assert.equal(mine.receive({ type: "page" }, []), false);  // a push is for the widget
  mine.receive({ kind: RESPONSE, id: model.sent[0].content.id, response: { type: "page" } }, []);
  assert.equal((await waiting).response.type, "page");
});

test("a request the kernel never answers settles with an error after the timeout; a late reply goes to late", async () => {
  const model = fakeModel();
  const late = [];
  const requests = requester(model, { timeoutMs: 20, late: (reply, name) => late.push([name, reply.response.type]) });
  const started = Date.now();
  const { response, buffers } = await requests.request("hover", { row: 3 });
  assert.ok(Date.now() - started < 2000);
  assert.equal(response.type, "error");
  assert.equal(response.timeout, true);
  assert.match(response.message, /did not answer "hover" within 0 s/);
  assert.deepEqual(buffers, []);
  assert.equal(requests.pending, 0);
  requests.receive({ kind: RESPONSE, id: model.sent[0].content.id, response: { type: "thumb" } }, []);
  assert.deepEqual(late, [["hover", "thumb"]]);
  requests.receive({ kind: RESPONSE, id: model.sent[0].content.id, response: { type: "thumb" } }, []);
  assert.equal(late.length, 1);  // once
});

test("close settles every waiting request, and later ones at once without sending", async () => {
  const model = fakeModel();
  const requests = requester(model, { timeoutMs: 60000 });
  const a = requests.request("refresh");
  const b = requests.request("detail", { row: 1 });
  requests.close({ type: "dead" });
  assert.deepEqual((await a).response, { type: "dead" });
  assert.deepEqual((await b).response, { type: "dead" });
  assert.deepEqual((await requests.request("flag")).response, { type: "dead" });
  assert.equal(model.sent.length, 2);
});

test("each request gets its own id, and two views' ids never meet", () => {
  const model = fakeModel();
  const one = requester(model);
  const two = requester(model);
  one.request("a"); one.request("b"); two.request("c");
  const ids = model.sent.map((m) => m.content.id);
  assert.equal(new Set(ids).size, 3);
  one.close({ type: "closed" });
  two.close({ type: "closed" });
});
