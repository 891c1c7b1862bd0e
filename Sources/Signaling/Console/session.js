// The console's session with the room, as a pure reducer: `reduce(state, event)` gives
// the next state and the effects the page must carry out (open or close the signaling
// socket, send a message, start the retry timer, tear the media down, clear what the
// last session showed, say something). It touches no socket, timer or element, so
// joining, waiting, refusals and reconnects are unit tests (Tests/ConsoleJS/session.test.mjs).
//
// Phases: idle → connecting → waiting (no publisher yet) → negotiating → connected;
// reconnecting (the backoff timer runs) from any of them; failed (a refusal that
// retrying cannot mend: a wrong token or role).

import {closeWords, shortName, signalingWords, hostOf} from "./words.js";

// Seconds before the next attempt: 1, 2, 4, then every 8.
export const BACKOFF_MS = [1000, 2000, 4000, 8000];
// A media connection "disconnected" for this long is given up and started over.
export const MEDIA_GRACE_MS = 5000;

export function backoff(attempt) {
  return BACKOFF_MS[Math.min(Math.max(attempt, 0), BACKOFF_MS.length - 1)];
}

export function initialSession() {
  return {
    phase: "idle", detail: null, attempt: 0, running: false,
    socketOpen: false, wasOpen: false, peerId: null, producer: null, sessionId: null, media: null,
    room: "default", role: "expert", sfu: "", server: "",
  };
}

const same = (state) => ({state, effects: []});

// Leaves the session and the socket and schedules the next attempt.
function retry(state, reason, extra = []) {
  if (!state.running) return same(state);
  const ms = backoff(state.attempt);
  return {
    state: {...state, phase: "reconnecting", detail: `${reason}; trying again in ${ms / 1000} s`, attempt: state.attempt + 1,
            socketOpen: false, wasOpen: false, peerId: null, producer: null, sessionId: null, media: null},
    effects: [...extra, {type: "teardown", reason}, {type: "closeSocket"}, {type: "clearStale"}, {type: "startTimer", ms}],
  };
}

function askForSession(state, producer) {
  if (state.sessionId || state.producer) return same(state);
  return {state: {...state, producer, phase: "negotiating", detail: "asking the publisher for a session"},
          effects: [{type: "send", message: {type: "startSession", peerId: producer}}]};
}

function onSignal(state, message) {
  switch (message.type) {
  case "welcome":
    return {state: {...state, peerId: message.peerId}, effects: [{type: "declare"}, {type: "send", message: {type: "list"}}]};
  case "list": {
    const producer = (message.producers || [])[0];
    if (producer) return askForSession(state, producer.id);
    if (state.sessionId || state.producer) return same(state);
    return {state: {...state, phase: "waiting", detail: `no publisher in room ${state.room} yet`}, effects: []};
  }
  case "peerStatusChanged":
    if ((message.roles || []).includes("producer")) return askForSession(state, message.peerId);
    return same(state);
  case "sessionStarted": {
    if (!state.producer || state.sessionId) return same(state);
    const next = {...state, sessionId: message.sessionId, detail: "connecting the video"};
    return {state: next, effects: state.sfu ? [{type: "startSfu", sessionId: message.sessionId}] : []};
  }
  case "endSession":
    if (!message.sessionId || message.sessionId !== state.sessionId) return same(state);
    // Through an SFU a publisher that publishes into none refuses the session at once.
    return retry(state, state.sfu ? "the publisher ended the session (does it publish into Janus, --sfu?)"
                                  : "the publisher ended the session");
  case "error": {
    const words = signalingWords[message.code] || "The signaling server refused a message";
    const say = {type: "say", text: `${words}${message.details ? ` (${message.details})` : ""}`, kind: "error"};
    if (message.code === "unauthorized" || message.code === "wrongRole") {
      return {state: {...state, phase: "failed", detail: words, running: false, socketOpen: false,
                      peerId: null, producer: null, sessionId: null, media: null},
              effects: [say, {type: "cancelTimer"}, {type: "teardown", reason: words}, {type: "closeSocket"},
                        {type: "clearStale"}, {type: "showJoin"}]};
    }
    if (["roomFull", "idleTimeout", "rateLimited"].includes(message.code) || state.phase === "negotiating") {
      // Refused while asking for a session (the publisher just left, say): start over.
      return retry(state, words.replace(/[;.].*$/, "").toLowerCase(), [say]);
    }
    return {state, effects: [say]};
  }
  default:
    return same(state);
  }
}

export function reduce(state, event) {
  switch (event.type) {
  case "join": {
    const next = {...initialSession(), running: true, phase: "connecting", detail: `reaching ${hostOf(event.server)}`,
                  room: event.room ?? "default", role: event.role ?? "expert", sfu: event.sfu ?? "", server: event.server ?? ""};
    return {state: next, effects: [{type: "cancelTimer"}, {type: "clearStale"}, {type: "openSocket"}]};
  }
  case "leave":
    return {state: {...state, phase: "idle", detail: null, running: false, attempt: 0, socketOpen: false, wasOpen: false,
                    peerId: null, producer: null, sessionId: null, media: null},
            effects: [{type: "cancelTimer"}, {type: "teardown", reason: "left"}, {type: "closeSocket"}, {type: "clearStale"},
                      {type: "releaseMicrophone"}, {type: "showJoin"}]};
  case "retry":
    if (!state.running || state.phase !== "reconnecting") return same(state);
    return {state: {...state, phase: "connecting", detail: `reaching ${hostOf(state.server)}`}, effects: [{type: "openSocket"}]};
  case "socketOpen":
    if (!state.running) return same(state);
    return {state: {...state, socketOpen: true, wasOpen: true, detail: "joining the room"}, effects: []};
  case "socketClosed":
    return retry(state, closeWords(event.code, state.wasOpen, state.server));
  case "socketFailed":
    return retry(state, `the server address ${state.server} is not a ws:// or wss:// URL`,
                 [{type: "say", text: `Cannot open ${state.server}: ${event.message}`, kind: "error"}]);
  case "signal":
    if (!state.running) return same(state);
    return onSignal(state, event.message);
  case "media": {
    if (!state.running || !state.sessionId) return same(state);
    const media = event.connectionState;
    if (media === "connected") {
      return {state: {...state, media, attempt: 0, phase: "connected", detail: state.sfu ? "the video through Janus" : "live"}, effects: []};
    }
    if (media === "failed") return retry({...state, media}, "the video connection failed");
    if (media === "disconnected") {
      return {state: {...state, media, phase: "reconnecting", detail: "the video is interrupted"},
              effects: [{type: "watchMedia", ms: MEDIA_GRACE_MS}]};
    }
    return {state: {...state, media}, effects: []};
  }
  case "mediaWatch":
    if (state.media !== "disconnected" || event.sessionId !== state.sessionId) return same(state);
    return retry(state, "the video stayed interrupted");
  case "progress":
    // A step on the way (through Janus: waiting for its publisher), said but not a new phase.
    if (!state.running || state.phase === "connected" || state.phase === "reconnecting") return same(state);
    return {state: {...state, detail: event.detail}, effects: []};
  case "failure":
    if (event.sessionId !== undefined && event.sessionId !== state.sessionId) return same(state);
    return retry(state, event.reason, event.say ? [{type: "say", text: event.say, kind: "error"}] : []);
  default:
    return same(state);
  }
}

// The header's badge (a few words that never wrap) and the longer line for the status
// panel and the badge's tooltip.
export function describe(state) {
  const session = state.sessionId ? `session ${shortName(state.sessionId)}` : "";
  switch (state.phase) {
  case "idle": return {badge: "not connected", tone: "", line: "not connected"};
  case "connecting": return {badge: "connecting…", tone: "", line: `connecting: ${state.detail}`};
  case "waiting": return {badge: "waiting", tone: "warn", line: `waiting: ${state.detail}`};
  case "negotiating": return {badge: "starting video…", tone: "", line: `starting: ${state.detail}`};
  case "connected":
    return {badge: `live · ${shortName(state.sessionId)}`, tone: "ok",
            line: `connected, ${session}${state.sfu ? " through Janus" : ""}`};
  case "reconnecting": return {badge: "reconnecting…", tone: "warn", line: `reconnecting: ${state.detail}`};
  case "failed": return {badge: "stopped", tone: "bad", line: `stopped: ${state.detail}`};
  default: return {badge: state.phase, tone: "", line: state.phase};
  }
}
