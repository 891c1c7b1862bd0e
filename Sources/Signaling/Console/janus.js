// The console's side of Janus's JSON API over its WebSocket transport (subprotocol
// "janus-protocol"), only what a VideoRoom subscriber needs: a session, a handle on the
// VideoRoom plugin, the room's publisher, the subscription (Janus offers, we answer
// with `start`), our candidates, keepalives. The same steps as our GStreamer subscriber
// (Sources/SFU/JanusClient.swift, JanusVideoRoom.swift). Loaded by console.js only in
// SFU mode; defines `PoseCastJanus`.
"use strict";

(function (global) {
  const REPLY_TIMEOUT_MS = 10000;
  const KEEPALIVE_MS = 25000;          // Janus drops a session after 60 s of silence
  const VIDEOROOM = "janus.plugin.videoroom";

  // Janus, or its plugin, said no (with its error code), or never answered: in words,
  // with the request it was about.
  class JanusError extends Error {
    constructor(request, reason, code) {
      super(code !== undefined ? `Janus refused ${request}: ${reason} (error ${code})`
        : request === "connect" ? reason : `${reason} (Janus, ${request})`);
      this.name = "JanusError";
      this.code = code;
    }
  }

  // One Janus session on one WebSocket. Replies are routed to the request waiting for
  // their transaction (a synchronous request's `success`/`error`, an asynchronous one's
  // `event` after its `ack`); everything else (`webrtcup`, `hangup`, `trickle`, plugin
  // events of no request) goes to `onevent`. `onclose(reason)` once the socket is gone.
  class Client {
    constructor(url, socket) {
      this.url = url;
      this.socket = socket;
      this.sessionId = null;
      this.waiting = new Map();      // transaction → {resolve, reject, untilEvent, request, timer}
      this.next = 0;
      this.closed = false;
      this.keepalive = null;
      this.onevent = () => {};
      this.onclose = () => {};
      socket.onmessage = (event) => this.receive(event.data);
      socket.onclose = (event) => this.ended(`the connection closed (${event.code})`);
    }

    // Opens the socket and creates a session; throws a JanusError saying why not.
    static async connect(url) {
      if (!/^wss?:\/\/[^/]+/i.test(url)) throw new JanusError("connect", `not a ws:// or wss:// URL: ${url}`);
      const socket = new WebSocket(url, "janus-protocol");
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => { socket.close(); reject(new JanusError("connect", `no answer from ${url} within 10 s`)); },
                                 REPLY_TIMEOUT_MS);
        socket.onopen = () => { clearTimeout(timer); resolve(); };
        // The browser gives no reason for a refused WebSocket: say where we tried.
        socket.onclose = () => { clearTimeout(timer); reject(new JanusError("connect", `cannot reach Janus at ${url}`)); };
      });
      const client = new Client(url, socket);
      const created = await client.call({janus: "create"});
      client.sessionId = created.data && created.data.id;
      if (!client.sessionId) { client.close(); throw new JanusError("create", "no session id in Janus's answer"); }
      client.keepalive = setInterval(() => client.call({janus: "keepalive"}).catch(() => {}), KEEPALIVE_MS);
      return client;
    }

    send(message) {
      if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
    }

    // Sends a request and waits for its answer: the `success` (or the `ack` of a
    // keepalive), or with `untilEvent` the plugin's `event` after the `ack`.
    call(message, untilEvent = false) {
      if (this.closed) return Promise.reject(new JanusError(message.janus, "the connection to Janus is closed"));
      const transaction = `pc${++this.next}`;
      const request = message.body && message.body.request ? message.body.request : message.janus;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          this.waiting.delete(transaction);
          reject(new JanusError(request, `no answer within ${REPLY_TIMEOUT_MS / 1000} s`));
        }, REPLY_TIMEOUT_MS);
        this.waiting.set(transaction, {resolve, reject, untilEvent, request, timer});
        const full = Object.assign({transaction}, message);
        if (this.sessionId && full.janus !== "create") full.session_id = this.sessionId;
        this.send(full);
      });
    }

    receive(text) {
      let message;
      try { message = JSON.parse(text); } catch { return; }
      const waiter = message.transaction ? this.waiting.get(message.transaction) : null;
      if (!waiter || (message.janus === "ack" && waiter.untilEvent)) {
        if (!waiter) this.onevent(message);
        return;
      }
      this.waiting.delete(message.transaction);
      clearTimeout(waiter.timer);
      const pluginError = message.plugindata && message.plugindata.data && message.plugindata.data.error_code;
      if (message.janus === "error") {
        waiter.reject(new JanusError(waiter.request, message.error ? message.error.reason : "error", message.error && message.error.code));
      } else if (pluginError) {
        waiter.reject(new JanusError(waiter.request, message.plugindata.data.error, pluginError));
      } else {
        waiter.resolve(message);
      }
    }

    ended(reason) {
      if (this.closed) return;
      this.closed = true;
      clearInterval(this.keepalive);
      for (const waiter of this.waiting.values()) {
        clearTimeout(waiter.timer);
        waiter.reject(new JanusError(waiter.request, reason));
      }
      this.waiting.clear();
      this.onclose(reason);
    }

    // Destroys the session and closes the socket (no onclose: we chose to leave).
    close() {
      this.onclose = () => {};
      if (!this.closed && this.sessionId) this.send({janus: "destroy", transaction: `pc${++this.next}`, session_id: this.sessionId});
      this.ended("closed by us");
      this.socket.close();
    }

    async attach(plugin) {
      const reply = await this.call({janus: "attach", plugin});
      if (!reply.data || !reply.data.id) throw new JanusError("attach", "no handle id in Janus's answer");
      return reply.data.id;
    }

    // A synchronous plugin request: the plugin's data.
    async request(handle, body) {
      const reply = await this.call({janus: "message", handle_id: handle, body});
      return (reply.plugindata && reply.plugindata.data) || {};
    }

    // An asynchronous plugin request (with our SDP when negotiating): the plugin's event.
    message(handle, body, jsep) {
      const message = {janus: "message", handle_id: handle, body};
      if (jsep) message.jsep = jsep;
      return this.call(message, true);
    }

    // Our ICE candidate ({candidate, sdpMid, sdpMLineIndex}), or null: gathering is done.
    trickle(handle, candidate) {
      this.send({janus: "trickle", transaction: `pc${++this.next}`, session_id: this.sessionId, handle_id: handle,
                 candidate: candidate || {completed: true}});
    }
  }

  // The VideoRoom's rooms are numbers (Janus's default, without string_ids).
  function roomNumber(room) {
    const n = Number(room);
    if (!Number.isSafeInteger(n) || n <= 0) throw new JanusError("room", `Janus rooms are positive numbers, not "${room}"`);
    return n;
  }

  // The feed ids publishing in the room now.
  async function publishers(client, handle, room) {
    const data = await client.request(handle, {request: "listparticipants", room: roomNumber(room)});
    return (data.participants || []).filter((p) => p.publisher).map((p) => p.id);
  }

  // Joins as a subscriber of `feed`: Janus's offer (its SDP text).
  async function subscribe(client, handle, room, feed) {
    const reply = await client.message(handle, {request: "join", ptype: "subscriber", room: roomNumber(room), streams: [{feed}]});
    if (!reply.jsep || reply.jsep.type !== "offer") throw new JanusError("join", "Janus's answer holds no offer");
    return reply.jsep.sdp;
  }

  // Our answer: Janus starts sending.
  async function start(client, handle, sdp) {
    await client.message(handle, {request: "start"}, {type: "answer", sdp});
  }

  // Joins `room` (with its pin) as a publisher named `display`: our feed id, and the
  // others publishing there now ({id, display}).
  async function joinAsPublisher(client, handle, room, display, pin) {
    const reply = await client.message(handle, {request: "join", ptype: "publisher", room: roomNumber(room), display, pin});
    const data = reply.plugindata && reply.plugindata.data;
    if (!data || data.videoroom !== "joined") throw new JanusError("join", "Janus did not say we joined");
    return {id: data.id, publishers: (data.publishers || []).map((p) => ({id: p.id, display: p.display || ""}))};
  }

  // Subscribes to several feeds of a room with a pin (the voice room): Janus's offer.
  async function subscribeFeeds(client, handle, room, feeds, pin) {
    const reply = await client.message(handle, {request: "join", ptype: "subscriber", room: roomNumber(room), pin,
                                                streams: feeds.map((feed) => ({feed}))});
    if (!reply.jsep || reply.jsep.type !== "offer") throw new JanusError("join", "Janus's answer holds no offer");
    return reply.jsep.sdp;
  }

  // Publishes our offer: Janus's answer (its SDP text).
  async function publish(client, handle, sdp) {
    const reply = await client.message(handle, {request: "publish"}, {type: "offer", sdp});
    if (!reply.jsep || reply.jsep.type !== "answer") throw new JanusError("publish", "Janus's answer holds no SDP answer");
    return reply.jsep.sdp;
  }

  global.PoseCastJanus = {Client, JanusError, VIDEOROOM, publishers, subscribe, start, joinAsPublisher, publish, subscribeFeeds};
})(window);
