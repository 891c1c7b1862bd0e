// Every frame's pose by the frame's RTP timestamp (as this browser received it), and the
// lookup rule for a frame presented before its pose was read (docs/POSE_WIRE_FORMAT.md,
// "Looking a pose up"): the pose worker posts a frame's pose a few milliseconds after it
// hands the frame on, so on a busy machine the compositor can show the frame first. A
// lookup that misses then waits up to `waitMs` for that timestamp's pose and resolves
// with it as soon as it comes, or with null. Timers are injected: the unit tests
// (Tests/ConsoleJS/pose-book.test.mjs) run without a browser.

export const POSES_KEPT = 900;      // 30 s at 30 fps: frames wait far less in the jitter buffer
export const POSE_WAIT_MS = 150;    // a pose this late is lost, not slow

export class PoseBook {
  constructor({kept = POSES_KEPT, waitMs = POSE_WAIT_MS, setTimer = setTimeout, clearTimer = clearTimeout} = {}) {
    this.kept = kept;
    this.waitMs = waitMs;
    this.setTimer = setTimer;
    this.clearTimer = clearTimer;
    this.entries = new Map();        // rtpTimestamp → {pose, receivedAt, …}
    this.waiting = new Map();        // rtpTimestamp → [{resolve, timer}]
  }

  get size() { return this.entries.size; }

  // A pose read from a frame: kept (the oldest forgotten past `kept`) and handed to
  // every lookup waiting for its timestamp.
  add(rtpTimestamp, entry) {
    this.entries.set(rtpTimestamp, entry);
    if (this.entries.size > this.kept) this.entries.delete(this.entries.keys().next().value);
    const waiters = this.waiting.get(rtpTimestamp);
    if (!waiters) return;
    this.waiting.delete(rtpTimestamp);
    for (const w of waiters) { this.clearTimer(w.timer); w.resolve(entry); }
  }

  get(rtpTimestamp) { return this.entries.get(rtpTimestamp) || null; }

  // The pose of `rtpTimestamp`: at once when known, else when it arrives within
  // `waitMs`, else null.
  whenPose(rtpTimestamp, waitMs = this.waitMs) {
    const known = this.get(rtpTimestamp);
    if (known || waitMs <= 0) return Promise.resolve(known);
    return new Promise((resolve) => {
      const waiter = {resolve, timer: null};
      waiter.timer = this.setTimer(() => {
        const list = this.waiting.get(rtpTimestamp) || [];
        const rest = list.filter((w) => w !== waiter);
        if (rest.length) this.waiting.set(rtpTimestamp, rest); else this.waiting.delete(rtpTimestamp);
        resolve(null);
      }, waitMs);
      const list = this.waiting.get(rtpTimestamp);
      if (list) list.push(waiter); else this.waiting.set(rtpTimestamp, [waiter]);
    });
  }

  // A new session: its timestamps start elsewhere. Lookups still waiting get null.
  clear() {
    for (const waiters of this.waiting.values()) for (const w of waiters) { this.clearTimer(w.timer); w.resolve(null); }
    this.waiting.clear();
    this.entries.clear();
  }
}
