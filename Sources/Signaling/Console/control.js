// Control requests to the publisher and its replies (docs/CONTROL_CHANNEL.md): over the
// `control` data channel, or through an SFU over signaling as `control` peer messages.
// Every request gets an id; its ack or error is matched to it, shown in words, and kept
// in `state.replies` (the last 50) for tests and the curious.

import {explainControl} from "./words.js";

const REPLIES_KEPT = 50;

export function createControl(app) {
  const {state} = app;

  // Null when sent, else why not (also shown and recorded on the click, if any).
  function request(message, extra = {}) {
    const id = `c${state.nextId++}`;
    message.id = id;
    if (!app.transport.controlReady()) {
      app.say("Not connected to the publisher yet: the request was not sent.", "error");
      if (extra.click) extra.click.outcome = {code: "notConnected", message: "no control channel"};
      return null;
    }
    state.pending.set(id, Object.assign({type: message.type, sentAt: performance.now(), message}, extra));
    app.transport.sendControl(JSON.stringify(message));
    return id;
  }

  function remember(id, type, outcome) {
    state.replies.push({id, type, ...outcome});
    if (state.replies.length > REPLIES_KEPT) state.replies.shift();
  }

  function onControl(text) {
    let message;
    try { message = JSON.parse(text); } catch { return app.say("The publisher sent something that is not JSON.", "error"); }
    switch (message.type) {
    case "ack": {
      const pending = state.pending.get(message.id);
      state.pending.delete(message.id);
      if (!pending) break;
      if (pending.click) pending.click.outcome = {code: "ack", annotationId: message.annotationId};
      remember(message.id, pending.type, {code: "ack", annotationId: message.annotationId});
      if (pending.onReply) pending.onReply({code: "ack"});
      if (pending.type !== "annotate" && pending.type !== "voice") app.say(`${pending.label || pending.type}: done.`, "ok");
      break;
    }
    case "error": {
      const pending = message.id ? state.pending.get(message.id) : null;
      if (message.id) state.pending.delete(message.id);
      if (!pending && /^rx\d+$/.test(message.id || "")) {
        // Our proof of reception through the SFU (transport.js), refused.
        app.say(`The publisher refused this page's proof of reception: ${message.message}`, "error");
        break;
      }
      const shown = explainControl(message.code, message.message);
      if (pending && pending.click) pending.click.outcome = {code: message.code, message: message.message};
      if (pending) remember(message.id, pending.type, {code: message.code, message: message.message});
      if (pending && pending.onReply) pending.onReply({code: message.code, message: message.message});
      state.errors.push({code: message.code, message: message.message, shown, type: pending ? pending.type : null});
      app.say(pending ? `${pending.type}: ${shown}` : shown, "error");
      break;
    }
    case "annotations":
      state.annotations = message.annotations || [];
      app.annotations.render();
      app.frames.drawMarks();
      break;
    case "annotationVisibility":
      state.hiddenAnnotations = new Set(Array.isArray(message.hidden) ? message.hidden.filter((id) => typeof id === "string") : []);
      app.annotations.render();
      app.frames.drawMarks();
      break;
    case "sceneStatus":
      app.status.onScene(message);
      break;
    case "voiceRoute":
      // Only a session through Janus gets one: where our voice goes (transport.js).
      app.transport.publishVoice({room: message.room, pin: message.pin, display: message.display, listen: message.listen});
      break;
    case "voices":
      state.voice.participants = Array.isArray(message.participants) ? message.participants : [];
      app.voice.renderVoices();
      break;
    }
  }

  // The session ended: requests still waiting will never be answered.
  function abandon(reason) {
    for (const pending of state.pending.values()) {
      if (pending.click) pending.click.outcome = {code: "lost", message: reason};
    }
    state.pending.clear();
  }

  return {request, onControl, abandon};
}
