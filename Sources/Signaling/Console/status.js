// The status panel and the header's badge: the connection (with the media's route), the
// video's size and fps, the share of presented frames with their pose, the latency, the
// camera's focus, exposure and white balance, the zoom. Everything a session showed is
// cleared when it ends (`forget`), so nothing stale stays on screen while reconnecting.

import {describe} from "./session.js";

// The status panel's fields, as they read with no session.
const EMPTY = "—";
const FIELDS = ["s-video", "s-pose", "s-latency", "s-focus", "s-exposure", "s-wb", "s-zoom"];

function routineText(routine, value) {
  if (!routine) return EMPTY;
  return `${routine.state}${value !== undefined && value !== null ? `, ${value}` : ""}`;
}

export function createStatus(app) {
  const {state, $} = app;
  let ticks = 0;

  function showPhase() {
    const d = describe(app.session);
    const badge = $("connection");
    badge.textContent = d.badge;
    badge.title = d.line;
    badge.className = `badge ${d.tone}`;
    $("s-connection").textContent = state.phase === "connected" && state.route
      ? `connected, ${state.route.local} ↔ ${state.route.remote} (${state.route.protocol})` : d.line;
    if (state.phase !== "connected" && !state.current) {
      $("stage-note").hidden = false;
      $("stage-note").textContent = state.phase === "idle" ? "Not connected" : d.line[0].toUpperCase() + d.line.slice(1);
    }
  }

  function onScene(message) {
    state.scene = message;
    const framing = message.effects && message.effects.framing;
    // The widest view's focal length, learnt while the zoom holds still: a frame's zoom is
    // then its own focal length against it (zoom.js).
    if (framing && typeof framing.zoom === "number" && state.current && state.current.pose) {
      if (state.lastSceneZoom === framing.zoom) state.widestFx = state.current.pose.intrinsics.fx / framing.zoom;
      state.lastSceneZoom = framing.zoom;
    }
    renderScene();
  }

  function renderScene() {
    const s = state.scene;
    if (!s) return;
    const r = s.routines || {}, v = s.values || {};
    const lock = s.lockRemaining !== undefined && s.lockRemaining !== null ? `, lock ${Number(s.lockRemaining).toFixed(1)} s` : "";
    $("s-focus").textContent = `${s.focusMode || ""} ${routineText(r.focus, v.lensPosition !== undefined ? `lens ${Number(v.lensPosition).toFixed(3)}` : null)}${lock}`;
    $("s-exposure").textContent = routineText(r.exposure, v.exposureMs !== undefined ? `${Number(v.exposureMs).toFixed(1)} ms, gain ${Number(v.gain ?? 0).toFixed(2)}` : null);
    $("s-wb").textContent = routineText(r.whiteBalance, v.whiteBalanceKelvin !== undefined ? `${Math.round(v.whiteBalanceKelvin)} K` : null);
    const framing = s.effects && s.effects.framing;
    if (framing) {
      $("s-zoom").textContent = `×${Number(framing.zoom).toFixed(2)}${framing.request ? ` (${framing.request})` : ""}`;
      $("stage-zoom-off").hidden = !(framing.zoom > 1.01 || framing.request);
    }
  }

  // The media's route (host, srflx, relay) from the selected candidate pair.
  async function refreshRoute() {
    const pc = app.transport.peerConnection();
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

  // Twice a second while a session has media.
  function tick() {
    if (ticks % 2 === 0) app.voice.refreshStats();  // every second
    if (ticks++ % 4 === 0) refreshRoute();          // every 2 s
    const now = performance.timeOrigin + performance.now();
    state.fpsTimes = state.fpsTimes.filter((t) => now - t < 1000);
    state.latencies = state.latencies.filter((l) => now - l.at < 2000);
    const current = state.current;
    $("s-video").textContent = current ? `${current.width}×${current.height}, ${state.fpsTimes.length} fps` : EMPTY;
    showPhase();
    const p = state.presented;
    const carrier = state.poseCarrier === "sei" ? " (H.264 SEI)" : state.poseCarrier ? ` (${state.poseCarrier})` : "";
    $("s-pose").textContent = p.count ? `${(100 * p.withPose / p.count).toFixed(1)} % of ${p.count}${carrier}` : EMPTY;
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
      $("s-latency").textContent = EMPTY;
    }
  }

  // A session ended: its values go, the panel says so.
  function forget(reason) {
    state.scene = null;
    state.route = null;
    state.lastSceneZoom = null;
    state.widestFx = null;
    for (const id of FIELDS) $(id).textContent = EMPTY;
    $("stage-zoom-off").hidden = true;
    $("stage-note").hidden = false;
    $("stage-note").textContent = reason ? `No video: ${reason}` : "Waiting for video…";
  }

  // What the panel shows now, for tests: every field's text.
  function shown() {
    const out = {connection: $("s-connection").textContent, badge: $("connection").textContent};
    for (const id of FIELDS) out[id.slice(2)] = $(id).textContent;
    return out;
  }

  return {showPhase, onScene, tick, forget, shown};
}
