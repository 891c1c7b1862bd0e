// The PoseCast expert console: joins a room (docs/SIGNALING.md), answers the
// publisher's offer asking for the pose trailer (docs/POSE_WIRE_FORMAT.md), keys each
// frame's pose by RTP timestamp (pose-worker.js), and turns clicks on the frame on
// screen into annotations and camera requests (docs/CONTROL_CHANNEL.md). When the offer
// has an audio m-line, the expert talks with the field in the same peer connection
// (docs/CONSOLE.md, "Voice").
//
// Through an SFU (`sfu=ws://JANUS:8188/` in the URL, docs/CONSOLE.md "Through Janus"):
// the session with the publisher carries control only (`via: "sfu"`, requests and
// replies as `control` peer messages on signaling), the media comes from Janus's
// VideoRoom (janus.js), and each frame's pose is read from inside the frame: an H.264
// SEI or the trailer (pose-worker.js).
//
// `window.posecastConsole` exposes the state and counters for tests and the curious.
"use strict";

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);

// ---------------------------------------------------------------- settings

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

// ---------------------------------------------------------------- state

const POSES_KEPT = 900;            // 30 s at 30 fps: frames wait far less in the jitter buffer
const PRESENTED_KEPT = 3000;

const state = {
  phase: "idle",                   // idle, connecting, waiting, negotiating, connected, reconnecting
  attempt: 0,
  peerId: null, producer: null, sessionId: null,
  connectionState: null,
  poses: new Map(),                // rtpTimestamp (as received) → {pose, receivedAt}
  poseCarrier: null,               // where the last pose was: "trailer" or "sei" (H.264 through an SFU)
  worker: {frames: 0, withTrailer: 0, withSEI: 0, malformed: 0, stripNanos: 0},
  presented: {count: 0, withPose: 0, newerThanCallback: 0},
  presentedLog: [],                // [{rtpTimestamp, frameId|null, at}] for tests
  current: null,                   // the frame on screen: {rtpTimestamp, pose, width, height}
  frozen: null,                    // the frozen frame (same shape) while frozen
  latencies: [],                   // [{at, ms}] over the last 2 s
  fpsTimes: [],
  annotations: [],
  scene: null,
  route: null,                     // the selected ICE pair: {local, remote, protocol} candidate types
  sdp: {offer: null, answer: null}, // the last session's, for tests and the curious
  sfu: null,                       // through an SFU: {url, room, feed} once Janus offered the feed
  controlRoute: null,              // "dataChannel", or "signaling" through an SFU, while control is possible
  pending: new Map(),              // request id → {type, sentAt, click?}
  clicks: [],                      // every click and what became of it, for tests
  errors: [],                      // every error reply, {code, message, shown}
  nextId: 1,
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

// ---------------------------------------------------------------- messages to the person

function say(text, kind = "info") {
  const item = document.createElement("li");
  item.className = kind;
  item.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  const log = $("log");
  log.prepend(item);
  while (log.children.length > 40) log.lastChild.remove();
}

const plainWords = {
  notAllowed: "Not allowed: you joined as a viewer; only an expert may annotate or steer the camera.",
  rateLimited: "Too many requests at once; the publisher will take more in a moment.",
  invalidValue: "The publisher refused a value",
  missingField: "The request missed a field",
  notFound: "Not found",
  unsupported: "The camera cannot do that",
  limitReached: "Too many annotations: remove some first.",
  malformed: "The publisher could not read the request",
  unknownType: "The publisher does not know this request",
  tooLarge: "The request is too large",
};

function explain(code, message) {
  const words = plainWords[code] || `Refused (${code})`;
  return message ? `${words} (${message})` : words;
}

const signalingWords = {
  unauthorized: "The room needs a token, and this one is wrong or missing.",
  roomFull: "The room is full or the publisher busy; trying again.",
  wrongRole: "That role cannot do this here.",
  rateLimited: "Signaling refused us for sending too fast; trying again.",
  idleTimeout: "The server dropped us for waiting without a session; trying again.",
};

// ---------------------------------------------------------------- signaling and the peer

let socket = null, pc = null, control = null, worker = null, statsTimer = null, retryTimer = null, janus = null;
let stopped = true;

function send(message) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

function setPhase(phase, detail) {
  state.phase = phase;
  const badge = $("connection");
  badge.textContent = detail ? `${phase}: ${detail}` : phase;
  badge.className = "badge " + ({connected: "ok", reconnecting: "warn", waiting: "warn", failed: "bad"}[phase] || "");
  $("s-connection").textContent = badge.textContent;
}

function join() {
  stopped = false;
  document.body.classList.toggle("viewer", settings.role === "viewer");
  $("join-button").hidden = true;
  $("leave-button").hidden = false;
  connect();
}

function leave() {
  stopped = true;
  releaseMicrophone();
  clearTimeout(retryTimer);
  teardown("left");
  if (socket) { socket.onclose = null; socket.close(); socket = null; }
  setPhase("idle");
  $("join-button").hidden = false;
  $("leave-button").hidden = true;
}

function scheduleReconnect(reason) {
  if (stopped) return;
  teardown(reason);
  if (socket) { socket.onclose = null; socket.close(); socket = null; }
  const delay = Math.min(8000, 1000 * 2 ** Math.min(state.attempt, 3));
  state.attempt += 1;
  setPhase("reconnecting", `${reason}; again in ${Math.round(delay / 1000)} s`);
  clearTimeout(retryTimer);
  retryTimer = setTimeout(connect, delay);
}

function connect() {
  if (stopped) return;
  setPhase("connecting", settings.signaling);
  try {
    socket = new WebSocket(settings.signaling);
  } catch (error) {
    say(`Cannot open ${settings.signaling}: ${error.message}`, "error");
    return scheduleReconnect("bad server address");
  }
  socket.onopen = () => setPhase("connecting", "joining the room");
  socket.onerror = () => {};
  socket.onclose = (event) => scheduleReconnect(`signaling closed (${event.code})`);
  socket.onmessage = (event) => {
    let message;
    try { message = JSON.parse(event.data); } catch { return say("The server sent something that is not JSON.", "error"); }
    onSignaling(message);
  };
}

function declare() {
  // Through an SFU the publisher opens no peer for us and puts the pose in every frame
  // (SEI for H.264, the trailer for VP8): nothing to ask for but the route.
  const meta = settings.sfu ? {name: "posecast-console", via: "sfu"}
    : {name: "posecast-console", poseTransport: state.transformAvailable ? "trailer" : "headerExtension"};
  const status = {type: "setPeerStatus", roles: ["listener", "consumer"], room: settings.room, role: settings.role, meta};
  if (settings.token) status.token = settings.token;
  send(status);
  send({type: "list"});
}

function startSession(producer) {
  if (state.sessionId || state.producer) return;
  state.producer = producer;
  setPhase("negotiating", "asking the publisher for a session");
  send({type: "startSession", peerId: producer});
}

async function onSignaling(message) {
  switch (message.type) {
  case "welcome":
    state.peerId = message.peerId;
    declare();
    break;
  case "list": {
    const producer = (message.producers || [])[0];
    if (producer) startSession(producer.id);
    else setPhase("waiting", `no publisher in room ${settings.room} yet`);
    break;
  }
  case "peerStatusChanged":
    if ((message.roles || []).includes("producer") && !state.sessionId && !state.producer) startSession(message.peerId);
    break;
  case "sessionStarted":
    state.sessionId = message.sessionId;
    if (settings.sfu) sfuSessionStarted(message.sessionId);
    break;
  case "peer":
    if (message.sessionId !== state.sessionId) return;
    if (typeof message.control === "string") onControl(message.control);
    else if (settings.sfu) say("The publisher sent media negotiation for a session through the SFU: ignored.", "error");
    else if (message.sdp) await onOffer(message.sdp, signalingRoute(state.sessionId));
    else if (message.ice && pc) {
      let text = message.ice.candidate || "";
      if (text.startsWith("a=")) text = text.slice(2);
      pc.addIceCandidate({candidate: text, sdpMLineIndex: message.ice.sdpMLineIndex ?? 0})
        .catch((error) => say(`A candidate from the publisher was refused: ${error.message}`, "error"));
    }
    break;
  case "endSession":
    if (message.sessionId === state.sessionId) {
      // Through an SFU a publisher that publishes into none refuses the session at once.
      scheduleReconnect(settings.sfu ? "the publisher ended the session (does it publish into Janus, --sfu?)"
                                     : "the publisher ended the session");
    }
    break;
  case "error": {
    const words = signalingWords[message.code] || "The signaling server refused a message";
    say(`${words} (${message.details || message.code})`, "error");
    if (message.code === "unauthorized" || message.code === "wrongRole") {
      setPhase("failed", words);
      stopped = true;
      $("join-button").hidden = false;
      $("leave-button").hidden = true;
      if (socket) { socket.onclose = null; socket.close(); socket = null; }
    } else if (["roomFull", "idleTimeout", "rateLimited"].includes(message.code) || state.phase === "negotiating") {
      // Refused while asking for a session (the publisher just left, say): start over.
      scheduleReconnect(message.code);
    }
    break;
  }
  }
}

function iceConfiguration() {
  const configuration = {iceServers: [], bundlePolicy: "max-bundle"};
  if (settings.turn) {
    const server = {urls: settings.turn};
    if (settings.turnUser !== null) server.username = settings.turnUser;
    if (settings.turnPassword !== null) server.credential = settings.turnPassword;
    configuration.iceServers.push(server);
  }
  if (settings.relayOnly) configuration.iceTransportPolicy = "relay";
  return configuration;
}

// Where our answer and candidates go for an offer: back to the publisher over signaling
// (the direct path), or to Janus (janusRoute). `answer` resolves once it is delivered.
function signalingRoute(session) {
  return {
    throughSFU: false,
    offerer: "the publisher",
    candidate(c) {
      if (c && c.candidate) send({type: "peer", sessionId: session, ice: {candidate: c.candidate, sdpMLineIndex: c.sdpMLineIndex ?? 0}});
    },
    async answer(sdp) { send({type: "peer", sessionId: session, sdp: {type: "answer", sdp}}); },
  };
}

async function onOffer(sdp, route) {
  if (sdp.type !== "offer") return say(`Expected an offer from ${route.offerer}, got ${sdp.type}.`, "error");
  pc = new RTCPeerConnection(iceConfiguration());
  const own = pc, session = state.sessionId;
  pc.onicecandidate = (event) => route.candidate(event.candidate);
  pc.ontrack = (event) => {
    if (event.track.kind === "audio") return onAudioTrack(event.track);
    if (event.track.kind !== "video") return;
    if (state.transformAvailable) {
      worker = new Worker("pose-worker.js");
      worker.onmessage = onWorkerMessage;
      // Through an SFU the worker also looks for the pose in an H.264 frame's SEI.
      event.receiver.transform = new RTCRtpScriptTransform(worker, {side: "receive", throughSFU: route.throughSFU});
    } else {
      say("This browser has no RTCRtpScriptTransform: the video plays without poses, and clicks cannot be placed.", "error");
    }
    const video = $("video");
    video.srcObject = event.streams[0] || new MediaStream([event.track]);
    video.play().catch((error) => say(`The video does not play: ${error.message}`, "error"));
    // One callback chain per page: a new session's track must not start a second one.
    if (frameCallback !== null) video.cancelVideoFrameCallback(frameCallback);
    frameCallback = video.requestVideoFrameCallback(onPresented);
  };
  pc.ondatachannel = (event) => {
    // Through an SFU control goes over signaling; Janus's relayed channel is left alone.
    if (route.throughSFU || event.channel.label !== "control") return;
    control = event.channel;
    control.onmessage = (m) => onControl(m.data);
    control.onopen = () => { state.controlRoute = "dataChannel"; say("Control channel open.", "ok"); announceVoice(); };
    control.onclose = () => { control = null; state.controlRoute = null; };
  };
  pc.onconnectionstatechange = () => {
    state.connectionState = pc.connectionState;
    if (pc.connectionState === "connected") {
      state.attempt = 0;
      setPhase("connected", `session ${session}${route.throughSFU ? " through Janus" : ""}`);
    } else if (pc.connectionState === "failed") {
      scheduleReconnect("the media connection failed");
    } else if (pc.connectionState === "disconnected") {
      setPhase("reconnecting", "media interrupted");
      setTimeout(() => { if (pc && pc.connectionState === "disconnected") scheduleReconnect("the media stayed interrupted"); }, 5000);
    }
  };
  try {
    state.sdp = {offer: sdp.sdp, answer: null};
    await pc.setRemoteDescription(sdp);
    await prepareVoice(sdp.sdp);
    if (pc !== own) return;   // left, or gone, while the browser asked for the microphone
    const answer = await pc.createAnswer();
    await pc.setLocalDescription(answer);
    state.sdp.answer = pc.localDescription.sdp;
    await route.answer(pc.localDescription.sdp);
    if (pc !== own) return;
    if (state.phase !== "connected") setPhase("negotiating", "connecting the media");
  } catch (error) {
    if (pc !== own) return;   // torn down meanwhile: nothing to answer any more
    say(`${route.offerer[0].toUpperCase()}${route.offerer.slice(1)}'s offer could not be answered: ${error.message}`, "error");
    scheduleReconnect("negotiation failed");
  }
  clearInterval(statsTimer);
  statsTimer = setInterval(refreshStatus, 500);
}

function teardown(reason) {
  if (pc) { pc.onconnectionstatechange = null; pc.close(); pc = null; }
  if (worker) { worker.terminate(); worker = null; }
  if (janus) { janus.close(); janus = null; }
  control = null;
  state.controlRoute = null;
  state.sfu = null;
  resetVoice();
  state.sessionId = null; state.producer = null; state.current = null;
  for (const [id, request] of state.pending) {
    if (request.click) request.click.outcome = {code: "lost", message: reason};
  }
  state.pending.clear();
  clearInterval(statsTimer);
  $("stage-note").hidden = false;
  $("stage-note").textContent = reason ? `No video: ${reason}` : "Waiting for video…";
}

// ---------------------------------------------------------------- through an SFU (Janus)

const FEED_WAIT_MS = 15000;        // as our GStreamer subscriber; then start over, with the backoff

// janus.js, fetched the first time a session goes through an SFU (the direct path never needs it).
let janusScript = null;
function loadJanus() {
  if (!janusScript) {
    janusScript = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = "janus.js";
      script.onload = resolve;
      script.onerror = () => { janusScript = null; reject(new Error("janus.js could not be loaded from this server")); };
      document.head.append(script);
    });
  }
  return janusScript;
}

// The session on signaling is live at once (the publisher opens no peer for it): control
// goes over signaling from now on, and the media is asked of Janus. Any failure on the
// way is said in words and starts everything over (1, 2, 4, then every 8 s).
function sfuSessionStarted(session) {
  state.controlRoute = "signaling";
  say("Session open with the publisher: control over signaling, the video through Janus.", "ok");
  announceVoice();
  subscribeThroughJanus(session).catch((error) => {
    if (session !== state.sessionId || stopped) return;   // left, or already starting over
    say(`Through Janus: ${error.message}`, "error");
    scheduleReconnect(error.message);
  });
}

async function subscribeThroughJanus(session) {
  setPhase("negotiating", `asking Janus at ${settings.sfu} for room ${settings.room}`);
  await loadJanus();
  const client = await PoseCastJanus.Client.connect(settings.sfu);
  if (session !== state.sessionId) { client.close(); return; }
  janus = client;
  client.onclose = (reason) => { if (janus === client) scheduleReconnect(`Janus: ${reason}`); };
  const handle = await client.attach(PoseCastJanus.VIDEOROOM);
  client.onevent = (message) => onJanusEvent(message, handle);
  const feed = await roomPublisher(client, handle, session);
  if (feed === null) return;
  const offer = await PoseCastJanus.subscribe(client, handle, settings.room, feed);
  if (session !== state.sessionId) return;
  state.sfu = {url: settings.sfu, room: settings.room, feed};
  await onOffer({type: "offer", sdp: offer}, janusRoute(client, handle));
}

// The room's publisher in Janus (its feed id), waited for: it may still be joining.
// Null when our session ended meanwhile.
async function roomPublisher(client, handle, session) {
  const deadline = performance.now() + FEED_WAIT_MS;
  for (;;) {
    const feeds = await PoseCastJanus.publishers(client, handle, settings.room);
    if (session !== state.sessionId) return null;
    if (feeds.length) return feeds[0];
    if (performance.now() > deadline) {
      throw new Error(`no publisher in Janus room ${settings.room} within ${FEED_WAIT_MS / 1000} s`);
    }
    setPhase("waiting", `no publisher in Janus room ${settings.room} yet`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

// Our answer and candidates for Janus's offer go to Janus (`start`, `trickle`).
function janusRoute(client, handle) {
  return {
    throughSFU: true,
    offerer: "Janus",
    candidate(c) {
      if (!c) client.trickle(handle, null);   // gathering done
      else if (c.candidate) client.trickle(handle, {candidate: c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex});
    },
    answer(sdp) { return PoseCastJanus.start(client, handle, sdp); },
  };
}

// What Janus says of its own accord about our subscription: a candidate of its own, or
// its end (Janus hung up, or the feed left the room).
function onJanusEvent(message, handle) {
  if (message.sender !== undefined && message.sender !== handle) return;
  const data = message.plugindata && message.plugindata.data;
  if (message.janus === "trickle" && pc && message.candidate && !message.candidate.completed) {
    pc.addIceCandidate(message.candidate).catch((error) => say(`A candidate from Janus was refused: ${error.message}`, "error"));
  } else if (message.janus === "hangup" || message.janus === "detached") {
    scheduleReconnect(`Janus ended our subscription${message.reason ? ` (${message.reason})` : ""}`);
  } else if (message.janus === "event" && data && (data.left || data.unpublished)) {
    scheduleReconnect("the publisher left the Janus room");
  }
}

// ---------------------------------------------------------------- frames and poses

function onWorkerMessage(event) {
  const m = event.data;
  if (m.type === "pose") {
    state.poses.set(m.rtpTimestamp, {pose: m.pose, receivedAt: m.receivedAt});
    state.poseCarrier = m.carrier;
    if (state.poses.size > POSES_KEPT) state.poses.delete(state.poses.keys().next().value);
  } else if (m.type === "counts") {
    state.worker = m.counts;
  } else if (m.type === "problem") {
    say(`A frame's pose could not be read: ${m.text}`, "error");
  }
}

const copy = document.createElement("canvas");   // the frame on screen, copied as it is presented
const copyContext = copy.getContext("2d", {willReadFrequently: true});

let frameCallback = null;

// The frame the video element holds now, as a VideoFrame: its own RTP timestamp says
// which frame it is. drawImage(video) in a frame callback may draw a newer frame than
// the callback's metadata describes (the decoder delivers frames between the compositor's
// callback and the draw; measured: one pin in 36 found 5.5 px from its frame's projection
// under CPU load), so pixels and pose are taken from this one object. Null where the
// browser has no VideoFrame(video) or no rtpTimestamp in its metadata: the callback's
// metadata then.
function heldFrame(video) {
  if (typeof VideoFrame !== "function") return null;
  try {
    const frame = new VideoFrame(video);
    const rtp = frame.metadata ? frame.metadata().rtpTimestamp : undefined;
    if (rtp === undefined) { frame.close(); return null; }
    return {frame, rtpTimestamp: rtp, width: frame.displayWidth, height: frame.displayHeight};
  } catch (error) {
    return null;
  }
}

function onPresented(now, callbackMetadata) {
  const video = $("video");
  frameCallback = video.requestVideoFrameCallback(onPresented);
  const held = heldFrame(video);
  const metadata = held ? {rtpTimestamp: held.rtpTimestamp, width: held.width, height: held.height,
                           expectedDisplayTime: callbackMetadata.expectedDisplayTime} : callbackMetadata;
  if (held && held.rtpTimestamp !== callbackMetadata.rtpTimestamp) state.presented.newerThanCallback += 1;
  const entry = state.poses.get(metadata.rtpTimestamp);
  const pose = entry ? entry.pose : null;
  state.presented.count += 1;
  if (pose) state.presented.withPose += 1;
  state.presentedLog.push({rtpTimestamp: metadata.rtpTimestamp, frameId: pose ? pose.frameId : null,
                           captureTimeNs: pose ? pose.captureTimeNs.toString() : null});
  if (state.presentedLog.length > PRESENTED_KEPT) state.presentedLog.splice(0, state.presentedLog.length - PRESENTED_KEPT);
  const shownAt = performance.timeOrigin + (metadata.expectedDisplayTime || now);
  state.fpsTimes.push(shownAt);
  if (pose) state.latencies.push({at: shownAt, ms: shownAt - pose.captureTimeMs});
  if (copy.width !== metadata.width || copy.height !== metadata.height) {
    copy.width = metadata.width; copy.height = metadata.height;
  }
  // The pixels of this very frame, for a click that comes before the next one.
  if (held) {
    copyContext.drawImage(held.frame, 0, 0, copy.width, copy.height);
    held.frame.close();
  } else {
    copyContext.drawImage(video, 0, 0, copy.width, copy.height);
  }
  state.current = {rtpTimestamp: metadata.rtpTimestamp, pose, width: metadata.width, height: metadata.height};
  $("stage-note").hidden = true;
  if (state.frozen) drawMarks();
}

// The frame a click lands on: the frozen one, else the one on screen (whose pixels
// were copied when it was presented).
function clickedFrame() { return state.frozen || state.current; }

function setFrozen(on) {
  const canvas = $("frozen");
  if (on && state.current) {
    canvas.width = copy.width; canvas.height = copy.height;
    canvas.getContext("2d").drawImage(copy, 0, 0);
    state.frozen = Object.assign({}, state.current);
    canvas.hidden = false;
    $("freeze").textContent = "Back to live";
  } else {
    state.frozen = null;
    canvas.hidden = true;
    $("freeze").textContent = "Freeze frame";
  }
  $("stage").classList.toggle("frozen", !!state.frozen);
  drawMarks();
}

// Where the picture sits in the stage (object-fit: contain) and a point's place in it.
function pictureRect(frame) {
  const stage = $("stage").getBoundingClientRect();
  const w = frame ? frame.width : 640, h = frame ? frame.height : 480;
  const scale = Math.min(stage.width / w, stage.height / h);
  return {left: stage.left + (stage.width - w * scale) / 2, top: stage.top + (stage.height - h * scale) / 2,
          width: w * scale, height: h * scale};
}

function normalisedPoint(event, frame) {
  const rect = pictureRect(frame);
  return {x: (event.clientX - rect.left) / rect.width, y: (event.clientY - rect.top) / rect.height};
}

// While frozen: the annotations as the frozen frame's pose sees them (the publisher
// draws them into live frames itself).
function drawMarks() {
  const canvas = $("marks");
  const stage = $("stage").getBoundingClientRect();
  canvas.width = Math.round(stage.width); canvas.height = Math.round(stage.height);
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, canvas.width, canvas.height);
  const frame = state.frozen;
  if (!frame || !frame.pose) return;
  const rect = pictureRect(frame);
  for (const a of state.annotations) {
    const p = PoseCast.project(frame.pose, [a.position.x, a.position.y, a.position.z]);
    if (!p) continue;
    const x = rect.left - stage.left + p.u * rect.width, y = rect.top - stage.top + p.v * rect.height;
    context.strokeStyle = a.color || "#ff00ff"; context.lineWidth = 2;
    context.beginPath(); context.arc(x, y, 7, 0, 2 * Math.PI); context.stroke();
    context.beginPath(); context.moveTo(x - 11, y); context.lineTo(x + 11, y); context.moveTo(x, y - 11); context.lineTo(x, y + 11); context.stroke();
  }
}

// ---------------------------------------------------------------- control requests

// Control goes on the data channel from the publisher, or, through an SFU, over
// signaling as `control` peer messages of our session (Janus relays nothing back).
function controlReady() {
  if (state.controlRoute === "signaling") return !!(state.sessionId && socket && socket.readyState === WebSocket.OPEN);
  return !!(control && control.readyState === "open");
}

function sendControl(text) {
  if (state.controlRoute === "signaling") send({type: "peer", sessionId: state.sessionId, control: text});
  else control.send(text);
}

function request(message, extra = {}) {
  const id = `c${state.nextId++}`;
  message.id = id;
  if (!controlReady()) {
    say("Not connected to the publisher yet: the request was not sent.", "error");
    if (extra.click) extra.click.outcome = {code: "notConnected", message: "no control channel"};
    return null;
  }
  state.pending.set(id, Object.assign({type: message.type, sentAt: performance.now()}, extra));
  sendControl(JSON.stringify(message));
  return id;
}

function annotateAt(event) {
  const frame = clickedFrame();
  const point = normalisedPoint(event, frame);
  const click = {at: Date.now(), point, rtpTimestamp: frame ? frame.rtpTimestamp : null,
                 frameId: frame && frame.pose ? frame.pose.frameId : null, frozen: !!state.frozen, outcome: null};
  state.clicks.push(click);
  if (!(point.x >= 0 && point.x <= 1 && point.y >= 0 && point.y <= 1)) {
    click.outcome = {code: "outside", message: "the click is beside the picture"};
    return;
  }
  if (!frame || !frame.pose) {
    click.outcome = {code: "noPose", message: "this frame has no pose"};
    return say("This frame has no pose yet, so the click cannot be placed; try again in a moment.", "error");
  }
  const mode = $("placement").value;
  const message = {type: "annotate", frameId: frame.pose.frameId, tap: point, kind: $("kind").value, color: $("color").value};
  const label = $("label").value.trim();
  if (label) message.label = label;
  const ray = PoseCast.ray(frame.pose, point.x, point.y);
  let plane = [0, 1, 0, 0];
  if (mode === "plane") {
    plane = $("plane").value.split(",").map(Number);
    if (plane.length !== 4 || !plane.every(Number.isFinite) || Math.hypot(plane[0], plane[1], plane[2]) === 0) {
      click.outcome = {code: "badPlane", message: "the plane is not nx,ny,nz,d"};
      return say("The plane must be four numbers nx,ny,nz,d with a non-zero normal.", "error");
    }
  }
  const world = PoseCast.meetPlane(ray, plane.slice(0, 3), plane[3]);
  click.world = world;
  if (mode === "depth") {
    message.placement = "publisherDepth";
  } else if (mode === "auto") {
    message.placement = "auto";
    if (world) message.position = {x: world[0], y: world[1], z: world[2]};
  } else {
    if (!world) {
      click.outcome = {code: "noSurface", message: "the click's ray meets no plane in front of the camera"};
      return say("That point is above the horizon: its ray never meets the plane.", "error");
    }
    message.placement = "world";
    message.position = {x: world[0], y: world[1], z: world[2]};
  }
  click.request = request(message, {click});
  flashMark(event);
}

function flashMark(event) {
  const stage = $("stage").getBoundingClientRect();
  const canvas = $("marks");
  if (!state.frozen) { canvas.width = Math.round(stage.width); canvas.height = Math.round(stage.height); }
  const context = canvas.getContext("2d");
  context.strokeStyle = "#ffffff"; context.lineWidth = 1.5;
  context.beginPath(); context.arc(event.clientX - stage.left, event.clientY - stage.top, 12, 0, 2 * Math.PI); context.stroke();
  if (!state.frozen) setTimeout(() => { if (!state.frozen) context.clearRect(0, 0, canvas.width, canvas.height); }, 400);
}

function onControl(text) {
  let message;
  try { message = JSON.parse(text); } catch { return say("The publisher sent something that is not JSON.", "error"); }
  switch (message.type) {
  case "ack": {
    const request = state.pending.get(message.id);
    state.pending.delete(message.id);
    if (request && request.click) {
      request.click.outcome = {code: "ack", annotationId: message.annotationId};
    }
    if (request && request.type !== "annotate" && request.type !== "voice") say(`${request.type}: done.`, "ok");
    break;
  }
  case "error": {
    const request = message.id ? state.pending.get(message.id) : null;
    if (message.id) state.pending.delete(message.id);
    const shown = explain(message.code, message.message);
    if (request && request.click) request.click.outcome = {code: message.code, message: message.message};
    state.errors.push({code: message.code, message: message.message, shown, type: request ? request.type : null});
    say(request ? `${request.type}: ${shown}` : shown, "error");
    break;
  }
  case "annotations":
    state.annotations = message.annotations || [];
    renderAnnotations();
    drawMarks();
    break;
  case "sceneStatus":
    state.scene = message;
    renderScene();
    break;
  case "voices":
    state.voice.participants = Array.isArray(message.participants) ? message.participants : [];
    renderVoices();
    break;
  }
}

function renderAnnotations() {
  const list = $("annotations");
  list.replaceChildren();
  for (const a of state.annotations) {
    const item = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = "swatch"; swatch.style.background = a.color || "#ff00ff";
    const p = a.position;
    const text = document.createTextNode(`${a.kind}${a.label ? ` “${a.label}”` : ""} at ${p.x.toFixed(2)}, ${p.y.toFixed(2)}, ${p.z.toFixed(2)} m`
      + (a.placement ? ` (${a.placement})` : ""));
    const remove = document.createElement("button");
    remove.textContent = "×"; remove.title = "Remove"; remove.type = "button";
    remove.onclick = () => request({type: "removeAnnotation", annotationId: a.id});
    item.append(swatch, text, remove);
    list.append(item);
  }
}

function removeNewest() {
  const newest = state.annotations[state.annotations.length - 1];
  if (newest) request({type: "removeAnnotation", annotationId: newest.id});
}

function routineText(routine, unit, value) {
  if (!routine) return "—";
  return `${routine.state}${value !== undefined && value !== null ? `, ${value}${unit}` : ""}`;
}

function renderScene() {
  const s = state.scene;
  if (!s) return;
  const r = s.routines || {}, v = s.values || {};
  const lock = s.lockRemaining !== undefined && s.lockRemaining !== null ? `, lock ${Number(s.lockRemaining).toFixed(1)} s` : "";
  $("s-focus").textContent = `${s.focusMode || ""} ${routineText(r.focus, "", v.lensPosition !== undefined ? `lens ${Number(v.lensPosition).toFixed(3)}` : null)}${lock}`;
  $("s-exposure").textContent = routineText(r.exposure, "", v.exposureMs !== undefined ? `${Number(v.exposureMs).toFixed(1)} ms, gain ${Number(v.gain ?? 0).toFixed(2)}` : null);
  $("s-wb").textContent = routineText(r.whiteBalance, "", v.whiteBalanceKelvin !== undefined ? `${Math.round(v.whiteBalanceKelvin)} K` : null);
}

// ---------------------------------------------------------------- the focus and metering menu

function openMenu(event) {
  const frame = clickedFrame();
  const point = normalisedPoint(event, frame);
  if (!(point.x >= 0 && point.x <= 1 && point.y >= 0 && point.y <= 1)) return;
  const menu = $("menu");
  menu.replaceChildren();
  const stage = $("stage").getBoundingClientRect();
  const group = (text) => { const g = document.createElement("div"); g.className = "group"; g.textContent = text; menu.append(g); };
  const item = (text, action) => {
    const b = document.createElement("button");
    b.type = "button"; b.textContent = text;
    b.onclick = () => { closeMenu(); action(); };
    menu.append(b);
  };
  group("Focus");
  item("Focus here", () => request({type: "focus", point, mode: "tapToAutoFocus"}));
  item("Focus here and lock", () => request({type: "focus", point, mode: "tapToLockFocus"}));
  item("Continuous auto focus", () => request({type: "focus", point, mode: "auto"}));
  group("Metering");
  const mode = document.createElement("label");
  mode.innerHTML = 'Mode <select id="menu-mode"><option>spot</option><option>weighted</option><option>uniform</option></select>';
  const duration = document.createElement("label");
  // A lock only when asked for: by default metering here holds 5 s, then goes back to continuous.
  duration.innerHTML = 'Hold for <select id="menu-lock"><option value="5">5 s</option><option value="15">15 s</option><option value="60">60 s</option><option value="0">until unlocked</option></select>';
  menu.append(mode, duration);
  const meter = () => {
    const message = {type: "meter", point, meteringMode: $("menu-mode").value};
    const seconds = Number($("menu-lock").value);
    if (seconds > 0) message.lockDuration = seconds;
    request(message);
  };
  item("Meter here", meter);
  item("Use this mode (no lock)", () => request({type: "meteringMode", mode: $("menu-mode").value}));
  item("Lock exposure, focus and white balance", () => request({type: "lock"}));
  item("Unlock (continuous metering)", () => request({type: "unlock"}));
  menu.hidden = false;
  const x = Math.min(event.clientX - stage.left, stage.width - 240), y = Math.min(event.clientY - stage.top, stage.height - 300);
  menu.style.left = `${Math.max(0, x)}px`; menu.style.top = `${Math.max(0, y)}px`;
}

function closeMenu() { $("menu").hidden = true; }

// ---------------------------------------------------------------- status

// The media's route (host, srflx, relay) from the selected candidate pair.
async function refreshRoute() {
  if (!pc) return;
  try {
    const stats = await pc.getStats();
    let pair = null;
    stats.forEach((s) => {
      if (s.type === "transport" && s.selectedCandidatePairId) pair = stats.get(s.selectedCandidatePairId);
    });
    if (!pair) stats.forEach((s) => { if (s.type === "candidate-pair" && s.nominated && s.state === "succeeded") pair = s; });
    if (!pair) return;
    const local = stats.get(pair.localCandidateId), remote = stats.get(pair.remoteCandidateId);
    state.route = {local: local && local.candidateType, remote: remote && remote.candidateType,
                   protocol: local && (local.relayProtocol || local.protocol)};
  } catch (error) {
    state.route = null;
  }
}

let statusTicks = 0;

function refreshStatus() {
  if (statusTicks % 2 === 0) refreshAudioStats();  // every second
  if (statusTicks++ % 4 === 0) refreshRoute();   // every 2 s
  const now = performance.timeOrigin + performance.now();
  state.fpsTimes = state.fpsTimes.filter((t) => now - t < 1000);
  state.latencies = state.latencies.filter((l) => now - l.at < 2000);
  const current = state.current;
  $("s-video").textContent = current ? `${current.width}×${current.height}, ${state.fpsTimes.length} fps` : "—";
  if (state.phase === "connected" && state.route) {
    $("s-connection").textContent = `connected, ${state.route.local} ↔ ${state.route.remote} (${state.route.protocol})`;
  }
  const p = state.presented;
  const carrier = state.poseCarrier === "sei" ? " (H.264 SEI)" : state.poseCarrier ? ` (${state.poseCarrier})` : "";
  $("s-pose").textContent = p.count ? `${(100 * p.withPose / p.count).toFixed(1)} % of ${p.count}${carrier}` : "—";
  if (!state.transformAvailable) {
    $("s-latency").textContent = "unknown: no poses in this browser";
  } else if (state.latencies.length) {
    const sorted = state.latencies.map((l) => l.ms).sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    // The capture time is the publisher's wall clock: only meaningful with clocks in step.
    $("s-latency").textContent = median < -5 || median > 10000
      ? `clocks differ (capture time ${median.toFixed(0)} ms from here)`
      : `${median.toFixed(0)} ms capture to screen (clocks assumed in step)`;
  } else {
    $("s-latency").textContent = "—";
  }
}

// ---------------------------------------------------------------- voice

// Two-way voice in the same peer connection: the publisher's offer has an audio m-line
// (Opus, bundled with the video) when it runs with a microphone or a speaker. Its
// direction says what we may do: sendrecv (an expert: talk and listen), sendonly (a
// viewer: listen only), recvonly (talk only), inactive or none (no voice).
const VOICE_CONSTRAINTS = {audio: {echoCancellation: true, noiseSuppression: true, autoGainControl: true}};
let microphone = null;            // our MediaStream, kept across sessions (no second prompt on reconnect)
let audioContext = null, micAnalyser = null, micSource = null, heardAnalyser = null, heardSource = null, meterTimer = null;

// The direction of the first audio m-section of an SDP, or null without one.
function audioDirection(text) {
  const sections = text.split(/\r?\nm=/).slice(1);
  const audio = sections.find((section) => section.startsWith("audio "));
  if (!audio) return null;
  // Port 0 without a=bundle-only: a disabled m-line (with it: bundled, as the publisher offers).
  if (/^audio 0 /.test(audio) && !/\r?\na=bundle-only\b/.test(audio)) return "inactive";
  const found = audio.match(/\r?\na=(sendrecv|sendonly|recvonly|inactive)\b/);
  return found ? found[1] : "sendrecv";
}

function audioTransceiver() {
  if (!pc) return null;
  return pc.getTransceivers().find((t) => t.receiver && t.receiver.track && t.receiver.track.kind === "audio" && !t.stopped) || null;
}

function micTrack() {
  const track = microphone ? microphone.getAudioTracks()[0] : null;
  return track && track.readyState === "live" ? track : null;
}

// After setRemoteDescription, before createAnswer: the microphone on the audio
// transceiver when the offer lets us send, else an answer that only listens.
async function prepareVoice(offerSdp) {
  const v = state.voice;
  const direction = audioDirection(offerSdp);
  v.offered = direction;
  const transceiver = audioTransceiver();
  if (!direction || !transceiver) { renderVoice(); return; }
  const mayReceive = direction === "sendrecv" || direction === "sendonly";
  let maySend = direction === "sendrecv" || direction === "recvonly";
  if (direction === "sendonly") {
    // A viewer, unless the publisher runs with --viewers-may-talk (then its offer is sendrecv).
    v.listeningOnly = settings.role === "viewer" ? "viewers listen, they do not talk here" : "the publisher does not take our voice in this session";
  }
  if (maySend) {
    const refusal = await openMicrophone();
    if (refusal) { v.listeningOnly = refusal; maySend = false; }
  }
  const track = maySend ? micTrack() : null;
  try {
    await transceiver.sender.replaceTrack(track);
    transceiver.direction = track ? (mayReceive ? "sendrecv" : "sendonly") : (mayReceive ? "recvonly" : "inactive");
  } catch (error) {
    v.listeningOnly = `the microphone could not be attached (${error.message})`;
    transceiver.direction = mayReceive ? "recvonly" : "inactive";
  }
  v.sending = !!track && transceiver.direction.startsWith("send");
  if (v.sending) { v.listeningOnly = null; track.enabled = !v.muted || v.pushToTalk; watchMicrophone(); }
  else if (v.listeningOnly) say(`Listening only: ${v.listeningOnly}.`, settings.role === "viewer" ? "info" : "error");
  renderVoice();
}

// Null when the microphone is ours, else why not, in words.
async function openMicrophone() {
  if (micTrack()) return null;
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
    return "this page has no microphone access (browsers give it only to secure pages: HTTPS, or localhost)";
  }
  try {
    microphone = await navigator.mediaDevices.getUserMedia(VOICE_CONSTRAINTS);
    const track = micTrack();
    if (!track) return "the microphone gave no audio track";
    track.onended = () => {
      say("The microphone stopped (unplugged or taken away): listening only.", "error");
      state.voice.sending = false;
      state.voice.listeningOnly = "the microphone stopped";
      renderVoice();
    };
    return null;
  } catch (error) {
    microphone = null;
    if (error.name === "NotAllowedError" || error.name === "SecurityError") return "the microphone was refused";
    if (error.name === "NotFoundError" || error.name === "OverconstrainedError") return "no microphone found";
    if (error.name === "NotReadableError" || error.name === "AbortError") return "the microphone is busy or failed";
    return `the microphone could not be opened (${error.name}: ${error.message})`;
  }
}

function releaseMicrophone() {
  if (microphone) microphone.getTracks().forEach((t) => t.stop());
  microphone = null;
  if (micSource) { micSource.disconnect(); micSource = null; }
}

// A session ended: the microphone stays open for the next one.
function resetVoice() {
  const v = state.voice;
  Object.assign(v, {offered: null, sending: false, receiving: false, listeningOnly: null, playing: false, playRefused: null,
                    participants: [], stats: {sent: null, received: null}});
  v.heard = {rmsDb: null, peakHz: null};
  if (heardSource) { heardSource.disconnect(); heardSource = null; }
  const audio = $("voice-audio");
  if (audio) audio.srcObject = null;
  renderVoice();
  renderVoices();
  updateMeters();
}

function onAudioTrack(track) {
  const v = state.voice;
  v.receiving = true;
  const audio = $("voice-audio");
  const stream = new MediaStream([track]);
  audio.srcObject = stream;
  playHeard();
  // What is heard, measured from the same stream the element plays.
  const context = meterContext();
  if (context) {
    if (heardSource) heardSource.disconnect();
    heardSource = context.createMediaStreamSource(stream);
    heardAnalyser = heardAnalyser || Object.assign(context.createAnalyser(), {fftSize: 4096, smoothingTimeConstant: 0.3});
    heardSource.connect(heardAnalyser);
  }
  startMeters();
  renderVoice();
}

function playHeard() {
  const audio = $("voice-audio"), v = state.voice;
  if (!audio.srcObject) return;
  audio.play().then(() => {
    v.playing = true; v.playRefused = null;
    $("voice-unblock").hidden = true;
    renderVoice();
  }).catch((error) => {
    v.playing = false; v.playRefused = error.name;
    $("voice-unblock").hidden = false;    // autoplay policy: a click plays it
    renderVoice();
  });
  if (audioContext && audioContext.state === "suspended") audioContext.resume().catch(() => {});
}

function meterContext() {
  if (audioContext) return audioContext;
  const Context = window.AudioContext || window.webkitAudioContext;
  if (!Context) return null;
  audioContext = new Context();
  return audioContext;
}

function watchMicrophone() {
  const context = meterContext(), track = micTrack();
  if (!context || !track) return;
  if (micSource) micSource.disconnect();
  micSource = context.createMediaStreamSource(new MediaStream([track]));
  micAnalyser = micAnalyser || Object.assign(context.createAnalyser(), {fftSize: 2048, smoothingTimeConstant: 0.3});
  micSource.connect(micAnalyser);
  startMeters();
}

// RMS in dBFS of an analyser's last window.
function rmsDb(analyser, buffer) {
  analyser.getFloatTimeDomainData(buffer);
  let sum = 0;
  for (let i = 0; i < buffer.length; i++) sum += buffer[i] * buffer[i];
  const rms = Math.sqrt(sum / buffer.length);
  return rms > 0 ? 20 * Math.log10(rms) : -Infinity;
}

// The strongest frequency heard (for tests: the field's test tone), and its bin's dB.
function peakOf(analyser) {
  const bins = new Float32Array(analyser.frequencyBinCount);
  analyser.getFloatFrequencyData(bins);
  let best = 0;
  for (let i = 1; i < bins.length; i++) if (bins[i] > bins[best]) best = i;
  return {hertz: best * audioContext.sampleRate / analyser.fftSize, db: bins[best]};
}

// The level in dB of the bin nearest `hertz` in what is heard (window.posecastConsole.heardLevelAt).
function heardLevelAt(hertz) {
  if (!heardAnalyser || !audioContext) return null;
  const bins = new Float32Array(heardAnalyser.frequencyBinCount);
  heardAnalyser.getFloatFrequencyData(bins);
  const i = Math.round(hertz * heardAnalyser.fftSize / audioContext.sampleRate);
  return Math.max(bins[i - 1] ?? -Infinity, bins[i], bins[i + 1] ?? -Infinity);
}

const micBuffer = new Float32Array(2048), heardBuffer = new Float32Array(4096);

function startMeters() {
  if (meterTimer === null) meterTimer = setInterval(updateMeters, 100);
}

function updateMeters() {
  const v = state.voice;
  const live = micTrack();
  // Muted: what is sent (silence), not what the microphone picks up.
  v.mic.rmsDb = micAnalyser && live && v.sending ? (live.enabled ? rmsDb(micAnalyser, micBuffer) : -Infinity) : null;
  if (heardAnalyser && heardSource) {
    v.heard.rmsDb = rmsDb(heardAnalyser, heardBuffer);
    const peak = peakOf(heardAnalyser);
    v.heard.peakHz = peak.db > -90 ? Math.round(peak.hertz) : null;
  } else {
    v.heard.rmsDb = null; v.heard.peakHz = null;
  }
  drawMeter("meter-mic", v.mic.rmsDb);
  drawMeter("meter-heard", v.heard.rmsDb);
}

// -60 dBFS (empty) to 0 dBFS (full).
function drawMeter(id, db) {
  const meter = $(id);
  if (!meter) return;
  const fill = meter.firstElementChild;
  const share = db === null || !Number.isFinite(db) ? 0 : Math.max(0, Math.min(1, (db + 60) / 60));
  fill.style.width = `${(100 * share).toFixed(1)}%`;
  meter.title = db === null ? "—" : Number.isFinite(db) ? `${db.toFixed(1)} dBFS` : "silence";
  meter.setAttribute("aria-valuenow", db === null || !Number.isFinite(db) ? "-60" : db.toFixed(0));
}

// Mute on or off (`m`, the button); push-to-talk (Space held while muted) talks
// without changing `muted`. The publisher hears of every change (`voice`).
function setMuted(muted) {
  const v = state.voice;
  if (!v.sending) return;
  v.muted = muted;
  applyMicrophone();
}

function setPushToTalk(on) {
  const v = state.voice;
  if (!v.sending || v.pushToTalk === on) return;
  v.pushToTalk = on;
  applyMicrophone();
}

function talking() { const v = state.voice; return v.sending && (!v.muted || v.pushToTalk); }

function applyMicrophone() {
  const track = micTrack();
  if (track) track.enabled = talking();
  announceVoice();
  renderVoice();
  updateMeters();
}

// Tells the publisher whether we are heard (on every change, and when the control
// channel opens), when the offer let us talk (not a viewer's sendonly).
function announceVoice() {
  const v = state.voice;
  if (!(v.offered === "sendrecv" || v.offered === "recvonly") || !controlReady()) return;
  request({type: "voice", muted: !talking()});
}

function renderVoice() {
  const v = state.voice;
  let text;
  if (!v.offered || v.offered === "inactive") text = "no voice in this session";
  else if (!v.sending) text = `listening only: ${v.listeningOnly || "no microphone"}`;
  else if (v.pushToTalk) text = "talking (push to talk)";
  else text = v.muted ? "muted (hold Space to talk)" : "talking";
  if (v.offered && v.receiving && v.playRefused) text += " · the browser blocked the sound: click to hear it";
  $("v-state").textContent = text;
  $("v-state").className = v.sending && !v.muted ? "ok" : v.listeningOnly && settings.role !== "viewer" ? "warn" : "";
  const mute = $("mute");
  mute.hidden = !v.sending;
  mute.textContent = v.muted ? "Unmute (m)" : "Mute (m)";
  mute.setAttribute("aria-pressed", v.muted ? "true" : "false");
  $("voice").classList.toggle("off", !v.offered || v.offered === "inactive");
}

function renderVoices() {
  const list = $("voices");
  list.replaceChildren();
  for (const p of state.voice.participants) {
    const item = document.createElement("li");
    const who = p.id === "field" ? "field" : p.id === state.peerId ? "you" : p.id;
    item.textContent = `${who} (${p.role}) `;
    const badge = document.createElement("span");
    const listens = p.mayTalk === false;           // a viewer the publisher does not let talk
    badge.className = "badge-small " + (listens ? "listens" : p.muted ? "muted" : "live");
    badge.textContent = listens ? "listens" : p.muted ? "muted" : "live";
    item.append(badge);
    list.append(item);
  }
}

// getStats for the audio (every second while connected): what we sent and what was decoded.
async function refreshAudioStats() {
  if (!pc || !state.voice.offered) return;
  try {
    const stats = await pc.getStats();
    let sent = null, received = null;
    stats.forEach((s) => {
      if (s.kind !== "audio" && s.mediaType !== "audio") return;
      if (s.type === "outbound-rtp") {
        sent = {packetsSent: s.packetsSent, bytesSent: s.bytesSent};
        const source = s.mediaSourceId ? stats.get(s.mediaSourceId) : null;
        if (source) Object.assign(sent, {audioLevel: source.audioLevel, totalAudioEnergy: source.totalAudioEnergy});
      } else if (s.type === "inbound-rtp") {
        received = {packetsReceived: s.packetsReceived, packetsLost: s.packetsLost, bytesReceived: s.bytesReceived,
                    audioLevel: s.audioLevel, totalAudioEnergy: s.totalAudioEnergy, totalSamplesReceived: s.totalSamplesReceived,
                    concealedSamples: s.concealedSamples, jitterBufferDelay: s.jitterBufferDelay,
                    jitterBufferEmittedCount: s.jitterBufferEmittedCount};
      }
    });
    state.voice.stats = {sent, received};
  } catch (error) {
    // The connection closed meanwhile.
  }
}

// ---------------------------------------------------------------- input

// Space: a tap freezes (or goes back to live), as always; while muted, held for more
// than 250 ms it talks until let go (push to talk) and freezes nothing.
let spaceTimer = null, spaceHeld = false;

function spaceDown(event) {
  if (event.repeat) return;
  const v = state.voice;
  if (!(v.sending && v.muted)) { setFrozen(!state.frozen); return; }
  spaceHeld = true;
  clearTimeout(spaceTimer);
  spaceTimer = setTimeout(() => { spaceTimer = null; if (spaceHeld) setPushToTalk(true); }, 250);
}

function spaceUp() {
  if (!spaceHeld) return;
  spaceHeld = false;
  if (spaceTimer !== null) { clearTimeout(spaceTimer); spaceTimer = null; setFrozen(!state.frozen); }
  else setPushToTalk(false);
}

function wireInput() {
  const stage = $("stage");
  let pressTimer = null, longPressed = false;
  stage.addEventListener("contextmenu", (event) => { event.preventDefault(); openMenu(event); });
  stage.addEventListener("pointerdown", (event) => {
    if (event.target.closest("#menu")) return;
    stage.focus();
    if (event.pointerType === "touch") {
      longPressed = false;
      pressTimer = setTimeout(() => { longPressed = true; openMenu(event); }, 600);
    }
  });
  stage.addEventListener("pointerup", () => clearTimeout(pressTimer));
  stage.addEventListener("pointercancel", () => clearTimeout(pressTimer));
  stage.addEventListener("click", (event) => {
    if (event.target.closest("#menu")) return;
    if (!$("menu").hidden) { closeMenu(); return; }
    if (longPressed) { longPressed = false; return; }
    if (event.button === 0) annotateAt(event);
  });
  document.addEventListener("keydown", (event) => {
    if (event.target.matches("input, select, textarea")) return;
    if (event.key === "Escape") { closeMenu(); setFrozen(false); }
    else if (event.key === "Delete" || event.key === "Backspace") { event.preventDefault(); removeNewest(); }
    else if (event.key === " ") { event.preventDefault(); spaceDown(event); }
    else if ((event.key === "m" || event.key === "M") && !event.ctrlKey && !event.metaKey && !event.altKey && !event.repeat) {
      setMuted(!state.voice.muted);
    }
  });
  document.addEventListener("keyup", (event) => {
    if (event.key === " " && !event.target.matches("input, select, textarea")) { event.preventDefault(); spaceUp(); }
  });
  window.addEventListener("blur", () => { if (spaceHeld) { spaceHeld = false; clearTimeout(spaceTimer); spaceTimer = null; setPushToTalk(false); } });
  $("mute").onclick = () => { setMuted(!state.voice.muted); $("mute").blur(); };
  $("voice-unblock").onclick = playHeard;
  // Any click is a gesture the autoplay policy accepts: play what it refused.
  document.addEventListener("click", () => { if (state.voice.playRefused) playHeard(); }, true);
  $("freeze").onclick = () => setFrozen(!state.frozen);
  $("clear").onclick = () => request({type: "clearAnnotations"});
  $("placement").onchange = () => { $("plane-row").hidden = $("placement").value !== "plane"; };
  window.addEventListener("resize", drawMarks);
  const form = $("join");
  form.room.value = settings.room; form.role.value = settings.role; form.token.value = settings.token;
  form.signaling.value = settings.signaling;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    settings.room = form.room.value.trim() || "default"; settings.role = form.role.value;
    settings.token = form.token.value; settings.signaling = form.signaling.value.trim() || defaultSignaling();
    state.attempt = 0;
    join();
  });
  $("leave-button").onclick = leave;
}

wireInput();
window.posecastConsole = {state, settings, copy, setFrozen, join, leave, pictureRect, setMuted, heardLevelAt,
                          get audio() { return state.voice.stats; }};
if (query.get("join") !== "0") join();
