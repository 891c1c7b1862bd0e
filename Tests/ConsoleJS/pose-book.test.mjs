// The pose lookup rule (Sources/Signaling/Console/pose-book.js): a frame presented before
// its pose waits for it, a short time.
import {test} from "node:test";
import assert from "node:assert/strict";
import {PoseBook, POSE_WAIT_MS} from "../../Sources/Signaling/Console/pose-book.js";

// Timers run by hand: `advance(ms)` fires what is due.
function clock() {
  let now = 0, next = 1;
  const timers = new Map();
  return {
    setTimer(fn, ms) { const id = next++; timers.set(id, {fn, at: now + ms}); return id; },
    clearTimer(id) { timers.delete(id); },
    advance(ms) {
      now += ms;
      for (const [id, t] of [...timers]) if (t.at <= now) { timers.delete(id); t.fn(); }
    },
    pending: () => timers.size,
  };
}

const pose = (frameId) => ({pose: {frameId}, receivedAt: 0});

test("a pose known before the frame: found at once", async () => {
  const book = new PoseBook();
  book.add(9000, pose(1));
  assert.equal(book.get(9000).pose.frameId, 1);
  assert.equal((await book.whenPose(9000)).pose.frameId, 1);
});

test("a pose 40 ms after its frame: the lookup waits and gets it", async () => {
  const c = clock();
  const book = new PoseBook({setTimer: c.setTimer, clearTimer: c.clearTimer});
  const found = book.whenPose(3000);
  c.advance(40);
  book.add(3000, pose(2));
  assert.equal((await found).pose.frameId, 2);
  assert.equal(c.pending(), 0, "its timer is gone");
});

test("no pose within the wait: null; a pose after that is kept for later lookups", async () => {
  const c = clock();
  const book = new PoseBook({setTimer: c.setTimer, clearTimer: c.clearTimer});
  const lost = book.whenPose(6000);
  c.advance(POSE_WAIT_MS);
  assert.equal(await lost, null);
  book.add(6000, pose(3));
  assert.equal(book.get(6000).pose.frameId, 3);
});

test("two lookups of one frame (a click and a freeze) both get the pose; another frame's does not", async () => {
  const c = clock();
  const book = new PoseBook({setTimer: c.setTimer, clearTimer: c.clearTimer});
  const a = book.whenPose(1), b = book.whenPose(1), other = book.whenPose(2);
  book.add(1, pose(10));
  assert.equal((await a).pose.frameId, 10);
  assert.equal((await b).pose.frameId, 10);
  c.advance(POSE_WAIT_MS);
  assert.equal(await other, null);
});

test("a new session clears the book and ends every wait", async () => {
  const c = clock();
  const book = new PoseBook({setTimer: c.setTimer, clearTimer: c.clearTimer});
  book.add(1, pose(1));
  const waiting = book.whenPose(2);
  book.clear();
  assert.equal(await waiting, null);
  assert.equal(book.size, 0);
  assert.equal(c.pending(), 0);
});

test("only the newest poses are kept", () => {
  const book = new PoseBook({kept: 3});
  for (let i = 0; i < 5; i++) book.add(i * 3000, pose(i));
  assert.equal(book.size, 3);
  assert.equal(book.get(0), null);
  assert.equal(book.get(12000).pose.frameId, 4);
});
