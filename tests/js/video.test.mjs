// Videos in the browser: the frame under the mouse, durations in words, what a <video> is asked.
import { test } from "node:test";
import assert from "node:assert/strict";

import { canPlay, formatDuration, frameTime, playableType, scrubIndex } from "../../stable_explore/widgets/static/lib/video.js";

test("the mouse across a tile walks through every frame once, left to right", () => {
  const seen = [];
  for (let x = 0; x < 128; x++) seen.push(scrubIndex(x, 128, 8));
  assert.deepEqual([...new Set(seen)], [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.equal(seen.filter((i) => i === 3).length, 16);
  assert.equal(scrubIndex(-5, 128, 8), 0);
  assert.equal(scrubIndex(128, 128, 8), 7);
  assert.equal(scrubIndex(500, 128, 8), 7);
  assert.equal(scrubIndex(10, 0, 8), 0);
  assert.equal(scrubIndex(10, 128, 0), 0);
});

test("durations read as a badge says them", () => {
  assert.equal(formatDuration(0.5), "0.5 s");
  assert.equal(formatDuration(9.96), "10.0 s");
  assert.equal(formatDuration(65), "1:05");
  assert.equal(formatDuration(3723), "1:02:03");
  assert.equal(formatDuration(Number.NaN), "");
  assert.equal(formatDuration(-1), "");
});

test("a <video> is asked about the container and the codec", () => {
  assert.equal(playableType("video/webm", "vp9"), 'video/webm; codecs="vp09.00.10.08"');
  assert.equal(playableType("video/mp4", "h264"), 'video/mp4; codecs="avc1.42E01E"');
  assert.equal(playableType("video/x-matroska", "ffv1"), "video/x-matroska");
  const chromium = { canPlayType: (type) => (type.startsWith("video/webm") ? "probably" : "") };
  assert.equal(canPlay(chromium, "video/webm", "vp9"), true);
  assert.equal(canPlay(chromium, "video/mp4", "h264"), false);
});

test("a strip's captions give each frame's time", () => {
  assert.equal(frameTime(12, 24), "0.50 s");
  assert.equal(frameTime(3, 0), "frame 3");
});

test("a tile asks for its frames once, and only after the mouse rests on it", async () => {
  const { scrubber } = await import("../../stable_explore/widgets/static/lib/video.js");
  const listeners = {};
  const area = { dataset: {}, addEventListener: (name, fn) => { listeners[name] = fn; } };
  const img = { src: "poster", dataset: {}, getAttribute: () => img.src,
    getBoundingClientRect: () => ({ left: 0, width: 80 }) };
  let asked = 0;
  const load = () => { asked++; return Promise.resolve([{ src: "f0", index: 0 }, { src: "f1", index: 9 }]); };
  scrubber(area, img, load, 20);
  listeners.mouseenter({ clientX: 5 });
  listeners.mouseleave();  // a sweep: gone before the delay
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(asked, 0);
  listeners.mouseenter({ clientX: 70 });
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(asked, 1);
  assert.equal(img.src, "f1");
  assert.equal(img.dataset.frame, "9");
  listeners.mousemove({ clientX: 10 });
  assert.equal(img.src, "f0");
  listeners.mouseleave();
  assert.equal(img.src, "poster");
  listeners.mouseenter({ clientX: 10 });
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(asked, 1);  // loaded once per tile
  assert.equal(area.dataset.scrub, "2");
});
