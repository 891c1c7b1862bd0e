// The console's session reducer (Sources/Signaling/Console/session.js): joining, waiting,
// refusals, and reconnects with their backoff and the stale state cleared, in plain words.
import {test} from "node:test";
import assert from "node:assert/strict";
import {reduce, initialSession, describe, backoff} from "../../Sources/Signaling/Console/session.js";

const SERVER = "ws://127.0.0.1:8443/";
const SESSION = "3f2a9c41-8b7e-4c1d-9a55-0e2f6d7c1b90";

// Feeds events in order; gives the last state and every effect's type.
function run(events, state = initialSession()) {
  const effects = [];
  for (const event of events) {
    const out = reduce(state, event);
    state = out.state;
    effects.push(...out.effects);
  }
  return {state, effects, types: effects.map((e) => e.type)};
}

const join = {type: "join", room: "default", role: "expert", sfu: "", server: SERVER};
const signal = (message) => ({type: "signal", message});
const toConnected = [join, {type: "socketOpen"}, signal({type: "welcome", peerId: "me"}),
                     signal({type: "list", producers: [{id: "pub"}]}), signal({type: "sessionStarted", sessionId: SESSION}),
                     {type: "media", connectionState: "connected"}];

test("join → welcome → list → session → media: connected, with a short name in the badge", () => {
  const {state, effects} = run(toConnected);
  assert.equal(state.phase, "connected");
  assert.equal(state.sessionId, SESSION);
  assert.deepEqual(effects.filter((e) => e.type === "send").map((e) => e.message.type), ["list", "startSession"]);
  assert.deepEqual(effects.find((e) => e.message && e.message.type === "startSession").message, {type: "startSession", peerId: "pub"});
  assert.ok(effects.some((e) => e.type === "declare"));
  const shown = describe(state);
  assert.equal(shown.badge, "live · 3f2a");
  assert.ok(!shown.badge.includes(SESSION) && !shown.line.includes(SESSION), "no raw UUID shown");
  assert.ok(shown.badge.length <= 12);
});

test("no publisher yet: waiting, then a producer arrives and is asked", () => {
  const waiting = run([join, {type: "socketOpen"}, signal({type: "welcome", peerId: "me"}), signal({type: "list", producers: []})]);
  assert.equal(waiting.state.phase, "waiting");
  assert.match(describe(waiting.state).line, /no publisher in room default yet/);
  const asked = run([signal({type: "peerStatusChanged", peerId: "pub", roles: ["producer"]})], waiting.state);
  assert.equal(asked.state.phase, "negotiating");
  assert.deepEqual(asked.effects[0].message, {type: "startSession", peerId: "pub"});
  // A second producer while asking is not asked too.
  const again = run([signal({type: "peerStatusChanged", peerId: "other", roles: ["producer"]})], asked.state);
  assert.deepEqual(again.effects, []);
});

test("the server gone (1006): reconnecting in plain words, stale state cleared, backoff 1, 2, 4, 8, 8 s", () => {
  let {state} = run(toConnected);
  const lost = reduce(state, {type: "socketClosed", code: 1006});
  assert.equal(lost.state.phase, "reconnecting");
  assert.equal(lost.state.sessionId, null);
  assert.match(lost.state.detail, /^lost the connection to the server; trying again in 1 s$/);
  assert.ok(!describe(lost.state).line.includes("1006"));
  assert.deepEqual(lost.effects.map((e) => e.type), ["teardown", "closeSocket", "clearStale", "startTimer"]);
  assert.equal(lost.effects[3].ms, 1000);
  state = lost.state;
  const delays = [];
  for (let i = 0; i < 4; i++) {
    state = reduce(state, {type: "retry"}).state;
    assert.equal(state.phase, "connecting");
    const out = reduce(state, {type: "socketClosed", code: 1006});   // never opened
    assert.match(out.state.detail, /^cannot reach the server at 127\.0\.0\.1:8443; trying again/);
    delays.push(out.effects.find((e) => e.type === "startTimer").ms);
    state = out.state;
  }
  assert.deepEqual(delays, [2000, 4000, 8000, 8000]);
  assert.equal(backoff(0), 1000);
  // Back: connected again resets the backoff.
  const back = run([{type: "retry"}, ...toConnected.slice(1)], state);
  assert.equal(back.state.phase, "connected");
  assert.equal(back.state.attempt, 0);
});

test("the publisher ends the session: start over; another session's end is not ours", () => {
  const {state} = run(toConnected);
  assert.deepEqual(reduce(state, signal({type: "endSession", sessionId: "someone-else"})).effects, []);
  const ended = reduce(state, signal({type: "endSession", sessionId: SESSION}));
  assert.equal(ended.state.phase, "reconnecting");
  assert.match(ended.state.detail, /the publisher ended the session/);
  assert.ok(ended.effects.some((e) => e.type === "clearStale"));
});

test("media interrupted: reconnecting at once, started over only if still down after the grace", () => {
  const {state} = run(toConnected);
  const down = reduce(state, {type: "media", connectionState: "disconnected"});
  assert.equal(down.state.phase, "reconnecting");
  assert.deepEqual(down.effects, [{type: "watchMedia", ms: 5000}]);
  const recovered = reduce(down.state, {type: "media", connectionState: "connected"});
  assert.equal(recovered.state.phase, "connected");
  assert.deepEqual(reduce(recovered.state, {type: "mediaWatch", sessionId: SESSION}).effects, []);
  const stillDown = reduce(down.state, {type: "mediaWatch", sessionId: SESSION});
  assert.match(stillDown.state.detail, /the video stayed interrupted/);
  assert.ok(stillDown.effects.some((e) => e.type === "startTimer"));
  const failed = reduce(state, {type: "media", connectionState: "failed"});
  assert.match(failed.state.detail, /the video connection failed/);
});

test("a wrong token stops, says why and does not retry; a full room retries", () => {
  const {state} = run(toConnected.slice(0, 3));
  const refused = reduce(state, signal({type: "error", code: "unauthorized", details: "bad token"}));
  assert.equal(refused.state.phase, "failed");
  assert.equal(refused.state.running, false);
  assert.ok(!refused.effects.some((e) => e.type === "startTimer"));
  assert.ok(refused.effects.some((e) => e.type === "say" && /needs a token/.test(e.text)));
  assert.equal(describe(refused.state).badge, "stopped");
  // Nothing after a stop moves it.
  assert.deepEqual(reduce(refused.state, {type: "socketClosed", code: 1006}).effects, []);
  const full = reduce(state, signal({type: "error", code: "roomFull"}));
  assert.equal(full.state.phase, "reconnecting");
  assert.ok(full.effects.some((e) => e.type === "startTimer"));
});

test("leave: idle, the timer cancelled, the microphone let go; late events change nothing", () => {
  const {state} = run(toConnected);
  const left = reduce(state, {type: "leave"});
  assert.equal(left.state.phase, "idle");
  assert.deepEqual(left.effects.map((e) => e.type),
                   ["cancelTimer", "teardown", "closeSocket", "clearStale", "releaseMicrophone", "showJoin"]);
  for (const late of [{type: "retry"}, {type: "socketClosed", code: 1000}, {type: "media", connectionState: "failed"},
                      signal({type: "welcome", peerId: "x"})]) {
    assert.deepEqual(reduce(left.state, late), {state: left.state, effects: []});
  }
});

test("through an SFU the session starts Janus; its failures start over with the session checked", () => {
  const sfuJoin = {...join, sfu: "ws://10.77.0.1:8188/"};
  const {state, effects} = run([sfuJoin, {type: "socketOpen"}, signal({type: "welcome", peerId: "me"}),
                                signal({type: "list", producers: [{id: "pub"}]}), signal({type: "sessionStarted", sessionId: SESSION})]);
  assert.deepEqual(effects.at(-1), {type: "startSfu", sessionId: SESSION});
  assert.deepEqual(reduce(state, {type: "failure", sessionId: "old", reason: "x"}).effects, []);
  const failed = reduce(state, {type: "failure", sessionId: SESSION, reason: "no publisher in Janus room 7 within 15 s"});
  assert.match(failed.state.detail, /no publisher in Janus room 7/);
  const ended = reduce(state, signal({type: "endSession", sessionId: SESSION}));
  assert.match(ended.state.detail, /does it publish into Janus/);
});

test("close codes in words", () => {
  const open = run(toConnected).state;
  assert.match(reduce(open, {type: "socketClosed", code: 1001}).state.detail, /shutting down or restarting/);
  assert.match(reduce(open, {type: "socketClosed", code: 1013}).state.detail, /busy/);
});
