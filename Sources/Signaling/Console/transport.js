// The console's connections: the signaling WebSocket (docs/SIGNALING.md), the peer
// connection that answers the publisher's offer (or Janus's, through an SFU), the pose
// worker on the video receiver, and the control channel. What happens to the session
// is decided by the reducer (session.js): this module reports events to
// `app.dispatch` and carries out the reducer's effects (open, close, send, tear down).
//
// Through an SFU (`sfu=ws://JANUS:8188/` in the URL, docs/CONSOLE.md "Through Janus"):
// the session with the publisher carries control only (`via: "sfu"`, requests and
// replies as `control` peer messages on signaling), the media comes from Janus's
// VideoRoom (janus.js, a classic script loaded only then), and each frame's pose is read
// from inside the frame: an H.264 SEI or the trailer (pose-worker.js).

const FEED_WAIT_MS = 15000;        // as our GStreamer subscriber; then start over, with the backoff
const NO_SUCH_ROOM = 426;          // the VideoRoom's error for a room that does not exist
const RECEPTION_PROOF_MS = 2000;   // as our GStreamer subscriber; the publisher waits 10 s for the next

export function createTransport(app) {
  const {state, settings} = app;
  let socket = null, pc = null, control = null, worker = null, janus = null, statsTimer = null;
  let lastProofAt = null, proofs = 0;

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  function openSocket() {
    closeSocket();
    let opened;
    try {
      opened = new WebSocket(settings.signaling);
    } catch (error) {
      queueMicrotask(() => app.dispatch({type: "socketFailed", message: error.message}));
      return;
    }
    socket = opened;
    opened.onopen = () => { if (socket === opened) app.dispatch({type: "socketOpen"}); };
    opened.onerror = () => {};
    opened.onclose = (event) => { if (socket === opened) { socket = null; app.dispatch({type: "socketClosed", code: event.code}); } };
    opened.onmessage = (event) => {
      if (socket !== opened) return;
      let message;
      try { message = JSON.parse(event.data); } catch { return app.say("The server sent something that is not JSON.", "error"); }
      if (message.type === "peer") onPeer(message);
      else app.dispatch({type: "signal", message});
    };
  }

  function closeSocket() {
    if (!socket) return;
    socket.onclose = null; socket.onmessage = null;
    socket.close();
    socket = null;
  }

  // Who we are (effect "declare", after `welcome`). Through an SFU the publisher opens no
  // peer for us and puts the pose in every frame (SEI for H.264, the trailer for VP8):
  // nothing to ask for but the route.
  function declare() {
    const meta = settings.sfu ? {name: "posecast-console", via: "sfu"}
      : {name: "posecast-console", poseTransport: state.transformAvailable ? "trailer" : "headerExtension"};
    const status = {type: "setPeerStatus", roles: ["listener", "consumer"], room: settings.room, role: settings.role, meta};
    if (settings.token) status.token = settings.token;
    send(status);
  }

  // A message for our session from the publisher: an offer, a candidate, or (through an
  // SFU) a control reply.
  async function onPeer(message) {
    if (!message.sessionId || message.sessionId !== state.sessionId) return;
    if (typeof message.control === "string") app.control.onControl(message.control);
    else if (settings.sfu) app.say("The publisher sent media negotiation for a session through the SFU: ignored.", "error");
    else if (message.sdp) await onOffer(message.sdp, signalingRoute(state.sessionId));
    else if (message.ice && pc) {
      let text = message.ice.candidate || "";
      if (text.startsWith("a=")) text = text.slice(2);
      pc.addIceCandidate({candidate: text, sdpMLineIndex: message.ice.sdpMLineIndex ?? 0})
        .catch((error) => app.say(`A candidate from the publisher was refused: ${error.message}`, "error"));
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
    if (sdp.type !== "offer") return app.say(`Expected an offer from ${route.offerer}, got ${sdp.type}.`, "error");
    pc = new RTCPeerConnection(iceConfiguration());
    const own = pc, session = state.sessionId;
    pc.onicecandidate = (event) => route.candidate(event.candidate);
    pc.ontrack = (event) => {
      if (event.track.kind === "audio") return app.voice.onAudioTrack(event.track);
      if (event.track.kind !== "video") return;
      if (state.transformAvailable) {
        worker = new Worker("pose-worker.js", {type: "module"});
        worker.onmessage = app.frames.onWorkerMessage;
        // Through an SFU the worker also looks for the pose in an H.264 frame's SEI.
        event.receiver.transform = new RTCRtpScriptTransform(worker, {side: "receive", throughSFU: route.throughSFU});
      } else {
        app.say("This browser has no RTCRtpScriptTransform: the video plays without poses, and clicks cannot be placed.", "error");
      }
      const video = app.$("video");
      video.srcObject = event.streams[0] || new MediaStream([event.track]);
      video.play().catch((error) => app.say(`The video does not play: ${error.message}`, "error"));
      app.frames.present(video);
    };
    pc.ondatachannel = (event) => {
      // Through an SFU control goes over signaling; Janus's relayed channel is left alone.
      if (route.throughSFU || event.channel.label !== "control") return;
      control = event.channel;
      control.onmessage = (m) => app.control.onControl(m.data);
      control.onopen = () => { state.controlRoute = "dataChannel"; app.say("Control channel open.", "ok"); app.voice.announce(); };
      control.onclose = () => { control = null; state.controlRoute = null; };
    };
    pc.onconnectionstatechange = () => {
      if (pc !== own) return;
      state.connectionState = pc.connectionState;
      app.dispatch({type: "media", connectionState: pc.connectionState});
    };
    try {
      state.sdp = {offer: sdp.sdp, answer: null};
      await pc.setRemoteDescription(sdp);
      await app.voice.prepare(sdp.sdp);
      if (pc !== own) return;   // left, or gone, while the browser asked for the microphone
      const answer = await pc.createAnswer();
      await pc.setLocalDescription(answer);
      state.sdp.answer = pc.localDescription.sdp;
      await route.answer(pc.localDescription.sdp);
      if (pc !== own) return;
    } catch (error) {
      if (pc !== own) return;   // torn down meanwhile: nothing to answer any more
      const who = `${route.offerer[0].toUpperCase()}${route.offerer.slice(1)}`;
      app.dispatch({type: "failure", sessionId: session, reason: "the video could not be set up",
                    say: `${who}'s offer could not be answered: ${error.message}`});
      return;
    }
    clearInterval(statsTimer);
    statsTimer = setInterval(app.status.tick, 500);
  }

  function teardown(reason) {
    stopVoice();
    if (pc) { pc.onconnectionstatechange = null; pc.close(); pc = null; }
    if (worker) { worker.terminate(); worker = null; }
    if (janus) { janus.close(); janus = null; }
    control = null;
    lastProofAt = null;
    state.controlRoute = null;
    state.connectionState = null;
    state.sfu = null;
    app.voice.reset();
    app.control.abandon(reason);
    clearInterval(statsTimer);
  }

  // ---------------------------------------------------------------- through an SFU (Janus)

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
  // way is said in words and starts everything over.
  function startSfu(session) {
    state.controlRoute = "signaling";
    app.say("Session open with the publisher: control over signaling, the video through Janus.", "ok");
    app.voice.announce();
    subscribeThroughJanus(session).catch((error) => {
      if (session !== state.sessionId) return;   // left, or already starting over
      app.dispatch({type: "failure", sessionId: session, reason: error.message, say: `Through Janus: ${error.message}`});
    });
  }

  // Several Janus servers with the room (a cascade's edges, `sfu=ws://A/,ws://B/`): the
  // console starts at one picked at random, so consoles spread over them, passes over
  // one it cannot reach, and starts at the next after a subscription that failed.
  const sfuServers = () => (settings.sfu || "").split(",").map((url) => url.trim()).filter(Boolean);
  let sfuServer = Math.floor(Math.random() * 1024);

  async function connectJanus(PoseCastJanus, servers) {
    let failure = new Error("no Janus server given");
    for (let step = 0; step < servers.length; step++) {
      const index = (sfuServer + step) % servers.length;
      try {
        const client = await PoseCastJanus.Client.connect(servers[index]);
        sfuServer = index;
        return client;
      } catch (error) {
        failure = error;
      }
    }
    throw failure;
  }

  async function subscribeThroughJanus(session) {
    const servers = sfuServers();
    app.dispatch({type: "progress", detail: `asking Janus at ${servers.join(" or ")} for room ${settings.room}`});
    await loadJanus();
    const PoseCastJanus = window.PoseCastJanus;
    const client = await connectJanus(PoseCastJanus, servers);
    if (session !== state.sessionId) { client.close(); return; }
    const index = sfuServer % servers.length, server = servers[index];
    const next = () => { if (sfuServer % servers.length === index) sfuServer = index + 1; };
    janus = client;
    client.onclose = (reason) => {
      if (janus !== client) return;
      next();
      app.dispatch({type: "failure", sessionId: session, reason: `Janus: ${reason}`});
    };
    try {
      const handle = await client.attach(PoseCastJanus.VIDEOROOM);
      client.onevent = (message) => onJanusEvent(message, handle, session);
      const feed = await roomPublisher(client, handle, session);
      if (feed === null) return;
      const offer = await PoseCastJanus.subscribe(client, handle, settings.room, feed);
      if (session !== state.sessionId) return;
      state.sfu = {url: server, room: settings.room, feed};
      await onOffer({type: "offer", sdp: offer}, janusRoute(client, handle));
    } catch (error) {
      next();
      throw error;
    }
  }

  // The room's publisher in Janus (its feed id), waited for: it may still be joining, and
  // on a cascade's edge that just restarted the room itself comes a moment later (Janus's
  // error 426 until then). Null when our session ended meanwhile.
  async function roomPublisher(client, handle, session) {
    const deadline = performance.now() + FEED_WAIT_MS;
    for (;;) {
      let feeds = [];
      try {
        feeds = await window.PoseCastJanus.publishers(client, handle, settings.room);
      } catch (error) {
        if (error.code !== NO_SUCH_ROOM || performance.now() > deadline) throw error;
      }
      if (session !== state.sessionId) return null;
      if (feeds.length) return feeds[0];
      if (performance.now() > deadline) {
        throw new Error(`no publisher in Janus room ${settings.room} within ${FEED_WAIT_MS / 1000} s`);
      }
      app.dispatch({type: "progress", detail: `no publisher in Janus room ${settings.room} yet`});
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
      answer(sdp) { return window.PoseCastJanus.start(client, handle, sdp); },
    };
  }

  // What Janus says of its own accord about our subscription: a candidate of its own, or
  // its end (Janus hung up, or the feed left the room).
  function onJanusEvent(message, handle, session) {
    if (voiceOut && voiceOut.handle !== null && message.sender === voiceOut.handle) return onVoiceEvent(message, voiceOut);
    if (message.sender !== undefined && message.sender !== handle) return;
    const data = message.plugindata && message.plugindata.data;
    if (message.janus === "trickle" && pc && message.candidate && !message.candidate.completed) {
      pc.addIceCandidate(message.candidate).catch((error) => app.say(`A candidate from Janus was refused: ${error.message}`, "error"));
    } else if (message.janus === "hangup" || message.janus === "detached") {
      app.dispatch({type: "failure", sessionId: session, reason: `Janus ended our subscription${message.reason ? ` (${message.reason})` : ""}`});
    } else if (message.janus === "event" && data && (data.left || data.unpublished)) {
      app.dispatch({type: "failure", sessionId: session, reason: "the publisher left the Janus room"});
    }
  }

  // ---------------------------------------------------------------- our voice through Janus

  // The publisher routes our voice (`voiceRoute`: its voice room, the room's pin, our name
  // there) once we proved reception and may talk. It goes as an audio-only feed from a
  // peer connection of its own, on the Janus server our video comes from; the publisher
  // listens to the feed of that name only (docs/SCALING.md, "Voice through the SFU"). A try
  // that fails is tried again after 1 s, doubling to 10 s, for as long as the session
  // lasts; a new route (the room made again, with a new pin) replaces it.
  // `route.listen`: the other talkers' names; their feeds in the voice room are heard
  // through one subscription of their own, made again whenever they change (hearOthers).
  let voiceOut = null;   // {route, session, client, handle, pc, timer, failures, feeds, heard}
  const samePlace = (a, b) => a.room === b.room && a.pin === b.pin && a.display === b.display;

  function publishVoice(route) {
    if (!janus || !state.sfu) return;
    route.listen = Array.isArray(route.listen) ? route.listen : [];
    if (voiceOut && samePlace(voiceOut.route, route) && voiceOut.session === state.sessionId) {
      voiceOut.route = route;   // only whom we hear changed
      hearOthers(voiceOut);
      return;
    }
    stopVoice();
    voiceOut = {route, session: state.sessionId, client: janus, handle: null, pc: null, timer: null, failures: 0,
                feeds: new Map(), heard: null};
    tryVoice(voiceOut);
  }

  async function tryVoice(out) {
    const {client, route} = out;
    try {
      const track = await app.voice.microphoneTrack();
      if (voiceOut !== out) return;
      out.handle = await client.attach(window.PoseCastJanus.VIDEOROOM);
      const joined = await window.PoseCastJanus.joinAsPublisher(client, out.handle, route.room, route.display, route.pin);
      out.feeds = new Map(joined.publishers.map((p) => [p.id, p.display]));
      hearOthers(out);
      const own = new RTCPeerConnection(iceConfiguration());
      out.pc = own;
      own.addTransceiver(track, {direction: "sendonly"});
      own.onicecandidate = (event) => {
        const c = event.candidate;
        if (!c) client.trickle(out.handle, null);
        else if (c.candidate) client.trickle(out.handle, {candidate: c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex});
      };
      own.onconnectionstatechange = () => {
        if (voiceOut !== out) return;
        if (own.connectionState === "connected") {
          out.failures = 0;
          app.voice.sfuSending(true);
          app.say("Our voice goes to the field through Janus.", "ok");
        } else if (own.connectionState === "failed" || own.connectionState === "closed") {
          retryVoice(out, `the connection to Janus ${own.connectionState}`);
        }
      };
      const offer = await own.createOffer();
      await own.setLocalDescription(offer);
      const answer = await window.PoseCastJanus.publish(client, out.handle, own.localDescription.sdp);
      if (voiceOut !== out) return;
      await own.setRemoteDescription({type: "answer", sdp: answer});
    } catch (error) {
      retryVoice(out, error.message);
    }
  }

  // Janus about our voice's handle: its end, or the other talkers coming and going.
  function onVoiceEvent(message, out) {
    const data = message.plugindata && message.plugindata.data;
    if (message.janus === "hangup" || message.janus === "detached") retryVoice(out, `Janus ${message.janus}${message.reason ? ` (${message.reason})` : ""}`);
    else if (message.janus === "event" && data && data.videoroom === "destroyed") retryVoice(out, "the voice room was destroyed");
    else if (message.janus === "event" && data) {
      for (const p of data.publishers || []) out.feeds.set(p.id, p.display || "");
      for (const gone of [data.unpublished, data.leaving]) if (typeof gone === "number") out.feeds.delete(gone);
      hearOthers(out);
    }
  }

  // The other talkers' feeds to hear now: one subscription to them all, made again when they change.
  function hearOthers(out) {
    const wanted = [...out.feeds].filter(([, display]) => out.route.listen.includes(display)).map(([id]) => id).sort((a, b) => a - b);
    const key = wanted.join(",");
    if ((out.heard ? out.heard.key : "") === key) return;
    closeHeard(out);
    if (!wanted.length) return;
    const heard = {key, handle: null, pc: null, audios: []};
    out.heard = heard;
    subscribeOthers(out, heard, wanted).catch((error) => {
      if (out.heard === heard) app.say(`The other experts cannot be heard: ${error.message}`, "error");
    });
  }

  async function subscribeOthers(out, heard, feeds) {
    const {client, route} = out;
    heard.handle = await client.attach(window.PoseCastJanus.VIDEOROOM);
    const offer = await window.PoseCastJanus.subscribeFeeds(client, heard.handle, route.room, feeds, route.pin);
    if (out.heard !== heard) return;
    const own = new RTCPeerConnection(iceConfiguration());
    heard.pc = own;
    own.ontrack = (event) => {
      // The browser mixes them and cancels their echo with the field's.
      const audio = new Audio();
      audio.srcObject = new MediaStream([event.track]);
      audio.play().catch((error) => app.say(`Another expert's voice does not play: ${error.message}`, "error"));
      heard.audios.push(audio);
    };
    own.onicecandidate = (event) => {
      const c = event.candidate;
      if (!c) client.trickle(heard.handle, null);
      else if (c.candidate) client.trickle(heard.handle, {candidate: c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex});
    };
    await own.setRemoteDescription({type: "offer", sdp: offer});
    const answer = await own.createAnswer();
    await own.setLocalDescription(answer);
    await window.PoseCastJanus.start(client, heard.handle, own.localDescription.sdp);
  }

  function closeHeard(out) {
    const heard = out.heard;
    if (!heard) return;
    out.heard = null;
    for (const audio of heard.audios) { audio.pause(); audio.srcObject = null; }
    if (heard.pc) heard.pc.close();
    if (heard.handle !== null) out.client.call({janus: "detach", handle_id: heard.handle}).catch(() => {});
  }

  function retryVoice(out, reason) {
    if (voiceOut !== out || out.timer !== null) return;
    closeVoiceTry(out);
    out.failures += 1;
    const delay = Math.min(10000, 1000 * 2 ** (out.failures - 1));
    app.voice.sfuSending(false, `our voice through Janus failed (${reason}); trying again in ${delay / 1000} s`);
    out.timer = setTimeout(() => { out.timer = null; if (voiceOut === out && janus === out.client) tryVoice(out); }, delay);
  }

  function closeVoiceTry(out) {
    closeHeard(out);
    out.feeds = new Map();
    if (out.pc) { out.pc.onconnectionstatechange = null; out.pc.close(); out.pc = null; }
    if (out.handle !== null) {
      // Detaching the handle leaves the room: the feed goes at once, not at Janus's timeout.
      out.client.call({janus: "detach", handle_id: out.handle}).catch(() => {});
      out.handle = null;
    }
  }

  function stopVoice() {
    if (!voiceOut) return;
    const out = voiceOut;
    voiceOut = null;
    clearTimeout(out.timer);
    closeVoiceTry(out);
  }

  function voicePeerConnection() { return voiceOut ? voiceOut.pc : null; }

  // What arrived of the other talkers' voices (tests and the curious): audio streams, packets, energy.
  async function othersHeard() {
    const heard = voiceOut && voiceOut.heard;
    if (!heard || !heard.pc) return {streams: 0, packetsReceived: 0, totalAudioEnergy: 0};
    const out = {streams: heard.audios.length, packetsReceived: 0, totalAudioEnergy: 0};
    (await heard.pc.getStats()).forEach((s) => {
      if (s.type === "inbound-rtp" && s.kind === "audio") {
        out.packetsReceived += s.packetsReceived || 0;
        out.totalAudioEnergy += s.totalAudioEnergy || 0;
      }
    });
    return out;
  }

  // ---------------------------------------------------------------- control

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

  // Through an SFU the publisher cannot see our media: a presented frame names itself
  // (`receiving`: its frame id and exact capture time) at once and then every 2 s, or the
  // publisher ends the session (docs/SCALING.md). Ids `rx…`: control.js keeps them apart.
  function proveReception(pose) {
    if (state.controlRoute !== "signaling" || !state.sfu || !controlReady()) return;
    const now = performance.now();
    if (lastProofAt !== null && now - lastProofAt < RECEPTION_PROOF_MS) return;
    lastProofAt = now;
    proofs += 1;
    sendControl(JSON.stringify({type: "receiving", id: `rx${proofs}`, frameId: pose.frameId,
                                captureTimeNs: pose.captureTimeNs.toString()}));
  }

  function peerConnection() { return pc; }

  return {openSocket, closeSocket, send, declare, teardown, startSfu, controlReady, sendControl, proveReception,
          peerConnection, publishVoice, voicePeerConnection, othersHeard};
}
