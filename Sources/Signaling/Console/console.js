// The PoseCast expert console: joins a room (docs/SIGNALING.md), answers the
// publisher's offer asking for the pose trailer (docs/POSE_WIRE_FORMAT.md), keys each
// frame's pose by RTP timestamp (pose-worker.js), and turns clicks and touches on the
// frame on screen into annotations and camera requests (docs/CONTROL_CHANNEL.md). When
// the offer has an audio m-line, the expert talks with the field in the same peer
// connection (docs/CONSOLE.md, "Voice").
//
// This module builds the page from the others and runs the session: the reducer in
// session.js decides, `dispatch` carries out its effects. The modules, one concern each:
//   session.js      the session and reconnects, a pure reducer     words.js     plain words, short names
//   transport.js    signaling socket, peer connection, Janus        control.js   requests and replies
//   frames.js       presented frames, freeze, the picture's place    pose-book.js poses by RTP timestamp, the wait
//   annotations.js  clicks and taps to annotations, the list         camera-menu.js the focus and metering menu
//   gestures.js     mouse and touch on the stage                     zoom.js      zoom keeping the pointed point
//   voice.js        microphone, speaker, mute, meters                status.js    the status panel and the badge
//   pose.js         the wire format and camera geometry (also the worker's and node's)
//
// `window.posecastConsole` exposes the state and counters for tests and the curious.

import * as PoseCast from "./pose.js";
import {initialSession, reduce} from "./session.js";
import {createTransport} from "./transport.js";
import {createControl} from "./control.js";
import {createFrames, freshPresented} from "./frames.js";
import {createAnnotations} from "./annotations.js";
import {createCameraMenu} from "./camera-menu.js";
import {wireStage} from "./gestures.js";
import {frameZoom, zoomKeeping, WHEEL_STEP} from "./zoom.js";
import {createVoice} from "./voice.js";
import {createStatus} from "./status.js";

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);

// ---------------------------------------------------------------- settings and state

function defaultSignaling() {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host || "127.0.0.1:8443"}/`;
}

const settings = {
  signaling: query.get("signaling") || defaultSignaling(),
  room: query.get("room") || "default",
  role: query.get("role") === "viewer" ? "viewer" : "expert",
  token: query.get("token") || "",
  turn: query.get("turn"),
  turnUser: query.get("turnUser"),
  turnPassword: query.get("turnPassword"),
  relayOnly: query.get("relayOnly") === "1",
  sfu: query.get("sfu") || "",     // Janus's WebSocket API: the media through its VideoRoom `room`
};

// Everything the page knows, for the modules and for tests. The session's own fields
// (phase, sessionId, peerId, producer, attempt) are the reducer's, read through.
const state = {
  connectionState: null,
  poses: null,                     // rtpTimestamp (as received) → {pose, receivedAt} (frames.js)
  poseCarrier: null,               // where the last pose was: "trailer" or "sei" (H.264 through an SFU)
  worker: {frames: 0, withTrailer: 0, withSEI: 0, parameterSets: 0, malformed: 0, stripNanos: 0},
  presented: freshPresented(),
  presentedLog: [],                // [{rtpTimestamp, frameId|null, captureTimeNs|null, lateMs?}] for tests
  current: null,                   // the frame on screen: {rtpTimestamp, pose, width, height, presentedAt, posePending}
  frozen: null,                    // the frozen frame (the same record) while frozen
  latencies: [],                   // [{at, ms}] over the last 2 s
  fpsTimes: [],
  annotations: [],
  hiddenAnnotations: new Set(),    // ids the publisher's video shows hidden (behind something nearer)
  scene: null,
  route: null,                     // the selected ICE pair: {local, remote, protocol} candidate types
  sdp: {offer: null, answer: null}, // the last session's, for tests and the curious
  sfu: null,                       // through an SFU: {url, room, feed} once Janus offered the feed
  controlRoute: null,              // "dataChannel", or "signaling" through an SFU, while control is possible
  pending: new Map(),              // request id → {type, sentAt, message, click?}
  replies: [],                     // the last requests answered: {id, type, code, …}
  clicks: [],                      // every click and what became of it, for tests
  zooms: [],                       // every zoom asked for: {point, pinched, factor, frameZoom, frameId, request}
  errors: [],                      // every error reply, {code, message, shown}
  noPoseRefusals: 0,               // clicks refused because their frame's pose never came
  nextId: 1,
  widestFx: null,                  // the publisher's widest view's focal length (status.js)
  transformAvailable: typeof RTCRtpScriptTransform !== "undefined",
  voice: {
    offered: null,                 // the offer's audio direction (sendrecv, sendonly, …), null: no audio m-line
    sending: false,                // our microphone's track is on the audio transceiver
    receiving: false,              // a remote audio track arrived
    listeningOnly: null,           // why we do not send, in words (null while we send or there is no audio)
    muted: false,
    pushToTalk: false,             // Space held while muted: talking until it is let go
    playing: false,                // the <audio> element plays (false: refused by the autoplay policy, say)
    playRefused: null,
    participants: [],              // the last `voices` from the publisher
    mic: {rmsDb: null},            // what the microphone gives (silence while muted)
    heard: {rmsDb: null, peakHz: null},   // what the <audio> element plays
    stats: {sent: null, received: null},  // getStats: outbound-rtp and inbound-rtp of kind audio
  },
};

const app = {state, settings, $, session: initialSession()};
for (const key of ["phase", "attempt", "peerId", "producer", "sessionId"]) {
  Object.defineProperty(state, key, {get: () => app.session[key], enumerable: true});
}

// ---------------------------------------------------------------- messages to the person

app.say = (text, kind = "info") => {
  const item = document.createElement("li");
  item.className = kind;
  item.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  const log = $("log");
  log.prepend(item);
  while (log.children.length > 40) log.lastChild.remove();
};

// ---------------------------------------------------------------- the modules

app.transport = createTransport(app);
app.control = createControl(app);
app.frames = createFrames(app);
app.annotations = createAnnotations(app);
app.menu = createCameraMenu(app);
app.voice = createVoice(app);
app.status = createStatus(app);

// ---------------------------------------------------------------- the session: events in, effects out

let retryTimer = null, dispatching = false;
const queued = [];

// Events that arrive while effects run (a socket that fails at once) wait their turn.
app.dispatch = (event) => {
  queued.push(event);
  if (dispatching) return;
  dispatching = true;
  try {
    while (queued.length) {
      const next = queued.shift();
      const before = app.session;
      const {state: after, effects} = reduce(before, next);
      app.session = after;
      for (const effect of effects) run(effect);
      if (after.phase !== before.phase && after.phase !== "connected" && before.phase === "connected") {
        app.say(`Disconnected: ${after.detail}.`, "error");
      } else if (after.phase === "connected" && before.phase !== "connected") {
        app.say("Connected: the video is live.", "ok");
      }
      app.status.showPhase();
    }
  } finally {
    dispatching = false;
  }
};

function run(effect) {
  switch (effect.type) {
  case "openSocket": app.transport.openSocket(); break;
  case "closeSocket": app.transport.closeSocket(); break;
  case "send": app.transport.send(effect.message); break;
  case "declare": app.transport.declare(); break;
  case "startSfu": app.transport.startSfu(effect.sessionId); break;
  case "teardown": app.transport.teardown(effect.reason); break;
  case "startTimer":
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => app.dispatch({type: "retry"}), effect.ms);
    break;
  case "cancelTimer": clearTimeout(retryTimer); retryTimer = null; break;
  case "watchMedia": {
    const session = app.session.sessionId;
    setTimeout(() => app.dispatch({type: "mediaWatch", sessionId: session}), effect.ms);
    break;
  }
  case "clearStale":
    app.frames.forget();
    app.annotations.forget();
    app.status.forget(app.session.detail);
    app.menu.close();
    break;
  case "releaseMicrophone": app.voice.releaseMicrophone(); break;
  case "showJoin": showJoinButtons(); break;
  case "say": app.say(effect.text, effect.kind); break;
  }
}

function showJoinButtons() {
  const joined = app.session.running;
  $("join-button").hidden = joined;
  $("leave-button").hidden = !joined;
  document.body.classList.toggle("form-open", !joined && query.get("join") === "0");
}

function join() {
  document.body.classList.toggle("viewer", settings.role === "viewer");
  if (settings.role === "viewer" && document.body.dataset.panel === "tools") selectPanel("status");
  app.dispatch({type: "join", room: settings.room, role: settings.role, sfu: settings.sfu, server: settings.signaling});
  showJoinButtons();
}

function leave() { app.dispatch({type: "leave"}); }

// ---------------------------------------------------------------- zoom

// The zoom of the frame a point was taken on: its focal length against the widest
// view's, else what the publisher last said, else none.
function zoomOf(frame) {
  if (frame && frame.pose && state.widestFx) return frameZoom(frame.pose.intrinsics, state.widestFx);
  const framing = state.scene && state.scene.effects && state.scene.effects.framing;
  return framing && framing.zoom ? framing.zoom : 1;
}

let lastZoom = null;               // {factor, at}: the wheel's notches add up before the frames show them

function zoomAt(x, y, scaleBy, fromTarget) {
  if (settings.role === "viewer") return;
  const frame = app.frames.clickedFrame();
  if (!frame) return;
  const p = app.frames.normalisedPoint(x, y, frame);
  if (!(p.x >= 0 && p.x <= 1 && p.y >= 0 && p.y <= 1)) return;
  const z = zoomOf(frame);
  const base = fromTarget && lastZoom && performance.now() - lastZoom.at < 1500 ? lastZoom.factor : z;
  const wanted = zoomKeeping(p, z, base * scaleBy);
  if (!wanted) return;
  const message = {type: "zoom", point: wanted.point, factor: wanted.factor};
  if (frame.pose) message.frameId = frame.pose.frameId;
  lastZoom = {factor: wanted.factor, at: performance.now()};
  const record = {pinched: p, point: wanted.point, factor: wanted.factor, frameZoom: z, frameId: message.frameId ?? null,
                  intrinsics: frame.pose ? frame.pose.intrinsics : null, at: Date.now(), outcome: null};
  state.zooms.push(record);
  record.request = app.control.request(message, {label: `zoom ×${wanted.factor.toFixed(2)}`,
                                                  onReply: (outcome) => { record.outcome = outcome; }});
}

function zoomOff() {
  lastZoom = null;
  app.control.request({type: "zoom", factor: 1}, {label: "zoom off"});
}

// ---------------------------------------------------------------- input

// Space: a tap freezes (or goes back to live), as always; while muted, held for more
// than 250 ms it talks until let go (push to talk) and freezes nothing.
let spaceTimer = null, spaceHeld = false;

function spaceDown(event) {
  if (event.repeat) return;
  const v = state.voice;
  if (!(v.sending && v.muted)) { app.frames.setFrozen(!state.frozen); return; }
  spaceHeld = true;
  clearTimeout(spaceTimer);
  spaceTimer = setTimeout(() => { spaceTimer = null; if (spaceHeld) app.voice.setPushToTalk(true); }, 250);
}

function spaceUp() {
  if (!spaceHeld) return;
  spaceHeld = false;
  if (spaceTimer !== null) { clearTimeout(spaceTimer); spaceTimer = null; app.frames.setFrozen(!state.frozen); }
  else app.voice.setPushToTalk(false);
}

// The panels on a small screen: one at a time, chosen by the sheet's tabs.
function selectPanel(name) {
  document.body.dataset.panel = name;
  for (const tab of document.querySelectorAll("#sheet-tabs button")) {
    tab.setAttribute("aria-selected", tab.dataset.panel === name ? "true" : "false");
  }
}

function wireInput() {
  wireStage(app, {
    tap: (x, y) => app.annotations.annotateAt(x, y),
    longPress: (x, y) => app.menu.open(x, y),
    menuOpen: () => app.menu.isOpen(),
    closeMenu: () => app.menu.close(),
    mayZoom: () => settings.role !== "viewer" && !!state.current,
    pinch: (x, y, scale) => zoomAt(x, y, scale, false),
    wheel: (x, y, notches) => zoomAt(x, y, WHEEL_STEP ** notches, true),
  });
  document.addEventListener("pointerdown", (event) => {
    if (app.menu.isOpen() && !event.target.closest("#menu") && !event.target.closest("#stage")) app.menu.close();
    if (document.body.classList.contains("form-open") && !event.target.closest("header")) {
      document.body.classList.remove("form-open");
      $("form-toggle").setAttribute("aria-expanded", "false");
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.target.matches("input, select, textarea")) return;
    if (event.key === "Escape") { app.menu.close(); app.frames.setFrozen(false); }
    else if (event.key === "Delete" || event.key === "Backspace") { event.preventDefault(); app.annotations.removeNewest(); }
    else if (event.key === " ") { event.preventDefault(); spaceDown(event); }
    else if ((event.key === "m" || event.key === "M") && !event.ctrlKey && !event.metaKey && !event.altKey && !event.repeat) {
      app.voice.setMuted(!state.voice.muted);
    }
  });
  document.addEventListener("keyup", (event) => {
    if (event.key === " " && !event.target.matches("input, select, textarea")) { event.preventDefault(); spaceUp(); }
  });
  window.addEventListener("blur", () => {
    if (spaceHeld) { spaceHeld = false; clearTimeout(spaceTimer); spaceTimer = null; app.voice.setPushToTalk(false); }
  });
  $("mute").onclick = () => { app.voice.setMuted(!state.voice.muted); $("mute").blur(); };
  $("voice-unblock").onclick = app.voice.playHeard;
  // Any click is a gesture the autoplay policy accepts: play what it refused.
  document.addEventListener("click", () => { if (state.voice.playRefused) app.voice.playHeard(); }, true);
  $("freeze").onclick = () => app.frames.setFrozen(!state.frozen);
  $("stage-freeze").onclick = () => app.frames.setFrozen(!state.frozen);
  $("stage-zoom-off").onclick = zoomOff;
  $("clear").onclick = app.annotations.clearAll;
  $("placement").onchange = () => { $("plane-row").hidden = $("placement").value !== "plane"; };
  for (const tab of document.querySelectorAll("#sheet-tabs button")) tab.onclick = () => selectPanel(tab.dataset.panel);
  selectPanel(document.body.dataset.panel);
  $("panel-toggle").onclick = () => {
    const closed = document.body.classList.toggle("panels-closed");
    $("panel-toggle").setAttribute("aria-expanded", closed ? "false" : "true");
    requestAnimationFrame(app.frames.drawMarks);
  };
  $("form-toggle").onclick = () => {
    const open = document.body.classList.toggle("form-open");
    $("form-toggle").setAttribute("aria-expanded", open ? "true" : "false");
  };
  window.addEventListener("resize", () => { app.menu.close(); app.frames.drawMarks(); });
  const form = $("join");
  form.room.value = settings.room; form.role.value = settings.role; form.token.value = settings.token;
  form.signaling.value = settings.signaling;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    settings.room = form.room.value.trim() || "default"; settings.role = form.role.value;
    settings.token = form.token.value; settings.signaling = form.signaling.value.trim() || defaultSignaling();
    document.body.classList.remove("form-open");
    join();
  });
  $("leave-button").onclick = leave;
}

wireInput();
// Tests (scripts/interop/chromium_console.py) and the curious.
window.PoseCast = PoseCast;
window.posecastConsole = {
  state, settings, copy: app.frames.copy, setFrozen: app.frames.setFrozen, join, leave, pictureRect: app.frames.pictureRect,
  renderAnnotations: app.annotations.render, setMuted: app.voice.setMuted, heardLevelAt: app.voice.heardLevelAt, shown: app.status.shown,
  get session() { return app.session; },
  get audio() { return state.voice.stats; },
  othersHeard: () => app.transport.othersHeard(),
};
app.status.showPhase();
if (query.get("join") !== "0") join();
else { document.body.classList.add("form-open"); showJoinButtons(); }
