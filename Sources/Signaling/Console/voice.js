// Two-way voice in the same peer connection: the publisher's offer has an audio m-line
// (Opus, bundled with the video) when it runs with a microphone or a speaker. Its
// direction says what we may do: sendrecv (an expert: talk and listen), sendonly (a
// viewer: listen only), recvonly (talk only), inactive or none (no voice). Mute (m, the
// button), push to talk (Space held while muted), level meters, and the publisher's
// `voices` roster (docs/CONSOLE.md, "Voice").

export function createVoice(app) {
  const {state} = app;

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
    const pc = app.transport.peerConnection();
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
      // Through Janus the field's voice comes in its feed, and ours goes by a feed of its
      // own once the publisher routes it (transport.js, `publishVoice`).
      v.listeningOnly = app.settings.role === "viewer" ? "viewers listen, they do not talk here"
        : app.settings.sfu ? "our voice goes through Janus once the publisher routes it"
        : "the publisher does not take our voice in this session";
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
    else if (v.listeningOnly) app.say(`Listening only: ${v.listeningOnly}.`, app.settings.role === "viewer" || app.settings.sfu ? "info" : "error");
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
        app.say("The microphone stopped (unplugged or taken away): listening only.", "error");
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

  // The microphone's track for our voice through Janus; throws why not, in words.
  async function microphoneTrack() {
    const refusal = await openMicrophone();
    if (refusal) throw new Error(refusal);
    return micTrack();
  }

  // Our voice through Janus flows (true), or stopped (false, and why).
  function sfuSending(on, why) {
    const v = state.voice;
    v.throughSfu = on;
    v.sending = on;
    if (on) {
      v.listeningOnly = null;
      const track = micTrack();
      if (track) track.enabled = talking();
      watchMicrophone();
      announceVoice();
    } else if (why) {
      v.listeningOnly = why;
    }
    renderVoice();
    updateMeters();
  }

  function releaseMicrophone() {
    if (microphone) microphone.getTracks().forEach((t) => t.stop());
    microphone = null;
    if (micSource) { micSource.disconnect(); micSource = null; }
  }

  // A session ended: the microphone stays open for the next one.
  function resetVoice() {
    const v = state.voice;
    Object.assign(v, {offered: null, sending: false, throughSfu: false, receiving: false, listeningOnly: null, playing: false, playRefused: null,
                      participants: [], stats: {sent: null, received: null}});
    v.heard = {rmsDb: null, peakHz: null};
    if (heardSource) { heardSource.disconnect(); heardSource = null; }
    const audio = app.$("voice-audio");
    if (audio) audio.srcObject = null;
    renderVoice();
    renderVoices();
    updateMeters();
  }

  function onAudioTrack(track) {
    const v = state.voice;
    v.receiving = true;
    const audio = app.$("voice-audio");
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
    const audio = app.$("voice-audio"), v = state.voice;
    if (!audio.srcObject) return;
    audio.play().then(() => {
      v.playing = true; v.playRefused = null;
      app.$("voice-unblock").hidden = true;
      renderVoice();
    }).catch((error) => {
      v.playing = false; v.playRefused = error.name;
      app.$("voice-unblock").hidden = false;    // autoplay policy: a click plays it
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
    const meter = app.$(id);
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
    if (!(v.offered === "sendrecv" || v.offered === "recvonly" || v.throughSfu) || !app.transport.controlReady()) return;
    app.control.request({type: "voice", muted: !talking()});
  }

  function renderVoice() {
    const v = state.voice;
    let text;
    if (!v.offered || v.offered === "inactive") text = "no voice in this session";
    else if (!v.sending) text = `listening only: ${v.listeningOnly || "no microphone"}`;
    else if (v.pushToTalk) text = "talking (push to talk)";
    else text = v.muted ? "muted (hold Space to talk)" : "talking";
    if (v.offered && v.receiving && v.playRefused) text += " · the browser blocked the sound: click to hear it";
    app.$("v-state").textContent = text;
    app.$("v-state").className = v.sending && !v.muted ? "ok" : v.listeningOnly && app.settings.role !== "viewer" ? "warn" : "";
    const mute = app.$("mute");
    mute.hidden = !v.sending;
    mute.textContent = v.muted ? "Unmute (m)" : "Mute (m)";
    mute.setAttribute("aria-pressed", v.muted ? "true" : "false");
    app.$("voice").classList.toggle("off", !v.offered || v.offered === "inactive");
  }

  function renderVoices() {
    const list = app.$("voices");
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
    const pc = app.transport.peerConnection();
    if (!pc || !state.voice.offered) return;
    try {
      const stats = await pc.getStats();
      // Through Janus our voice leaves on a peer connection of its own.
      const voicePc = app.transport.voicePeerConnection();
      const voiceStats = voicePc ? await voicePc.getStats() : new Map();
      let sent = null, received = null;
      const read = (s, stats) => {
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
      };
      stats.forEach((s) => read(s, stats));
      voiceStats.forEach((s) => read(s, voiceStats));
      state.voice.stats = {sent, received};
    } catch (error) {
      // The connection closed meanwhile.
    }
  }

  return {prepare: prepareVoice, releaseMicrophone, reset: resetVoice, onAudioTrack, playHeard, heardLevelAt, microphoneTrack, sfuSending,
          setMuted, setPushToTalk, announce: announceVoice, renderVoice, renderVoices, refreshStats: refreshAudioStats};
}
