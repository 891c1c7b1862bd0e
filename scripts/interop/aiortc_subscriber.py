#!/usr/bin/env python3
"""An independent PoseCast subscriber built on aiortc, for interoperability checks.

Written only against PoseCast's documented protocols (docs/SIGNALING.md and
docs/CONTROL_CHANNEL.md), not against its code: it joins a room on the signaling
server as an expert, finds the publisher, answers its offer with aiortc, trickles
ICE both ways, decodes the video track, and exercises the "control" data channel
(reads `annotations` and `sceneStatus`, sends `annotate`, `focus` and malformed
requests and checks every reply).

Prints exactly one JSON line on stdout (the result) and exits 0 only when every
check passed; progress and diagnostics go to stderr. Every wait has a time limit.

With --stray-video (--stray-audio) it also sends the publisher a video (audio) stream
its offer never asked for (answering sendrecv, or recvonly and sending regardless):
every other check must pass all the same. With --role viewer it declares itself a
viewer (whose audio m-line is send-only) and checks only that its camera requests are
refused, each with a reply, besides the video.

With --forge-fingerprint it plays a man in the middle instead: its answer names three
random certificate digests (sha-256, sha-384, sha-512) in place of its own, and it
checks that the publisher ends the session within 1 s of DTLS completing while no
video frame and no control message reaches it (docs/SECURITY.md).

    python3 scripts/interop/aiortc_subscriber.py --signaling ws://127.0.0.1:8443/ \
        [--room default] [--token T] [--frames 100] [--timeout 60] \
        [--expect-focus ack|unsupported|any] [--expect-codec VP8|H264]
"""

import argparse
import asyncio
import json
import logging
import random
import re
import struct
import sys
import time

try:
    import websockets
    from aiortc import RTCPeerConnection, RTCSessionDescription, VideoStreamTrack
    from aiortc.mediastreams import AudioStreamTrack
    from aiortc.sdp import candidate_from_sdp, candidate_to_sdp
except ImportError as error:  # pragma: no cover - depends on the machine
    print(json.dumps({"ok": False, "errors": [f"missing Python package: {error} (run scripts/interop-setup)"]}))
    sys.exit(2)


class CheckFailed(Exception):
    """A protocol step did not happen as documented."""


def log(message):
    print(f"[aiortc-subscriber {time.monotonic() - START:6.2f}s] {message}", file=sys.stderr, flush=True)


START = time.monotonic()


class Signaling:
    """The WebSocket connection to posecast-signaling: JSON messages in and out,
    with a queue the waits read from (messages nobody waited for stay queued)."""

    def __init__(self, socket):
        self.socket = socket
        self.pending = []
        self.received = []      # every message, in arrival order
        self.arrived = asyncio.Event()
        self.closed_reason = None
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        try:
            async for text in self.socket:
                message = json.loads(text)
                log(f"signaling <- {summarise(message)}")
                self.pending.append(message)
                self.received.append(message)
                self.arrived.set()
        except Exception as error:  # closed, or not JSON: either ends the conversation
            self.closed_reason = f"signaling connection lost: {error!r}"
        else:
            self.closed_reason = "signaling server closed the connection"
        self.arrived.set()

    async def send(self, message):
        log(f"signaling -> {summarise(message)}")
        await self.socket.send(json.dumps(message))

    async def wait_for(self, what, predicate, timeout):
        """Removes and returns the first queued message matching `predicate`; an
        `error` from the server fails at once (we never send anything it should refuse)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, message in enumerate(self.pending):
                if message.get("type") == "error":
                    raise CheckFailed(f"signaling error while waiting for {what}: "
                                      f"{message.get('code')}: {message.get('details')}")
                if predicate(message):
                    return self.pending.pop(i)
            if self.closed_reason:
                raise CheckFailed(f"{self.closed_reason} while waiting for {what}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CheckFailed(f"no {what} within {timeout:.0f} s")
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def take_all(self, predicate):
        taken = [m for m in self.pending if predicate(m)]
        self.pending = [m for m in self.pending if not predicate(m)]
        return taken


def summarise(message):
    """One log line per message: SDP bodies shortened."""
    shown = dict(message)
    if isinstance(shown.get("sdp"), dict):
        shown["sdp"] = {"type": shown["sdp"].get("type"), "sdp": f"<{len(shown['sdp'].get('sdp', ''))} chars>"}
    return json.dumps(shown)[:300]


class Control:
    """The publisher's `control` data channel: every received message kept, in order,
    with a wait on them."""

    def __init__(self):
        self.channel = None
        self.opened = asyncio.Event()
        self.messages = []
        self.arrived = asyncio.Event()
        self.problems = []
        self.failed = asyncio.Event()   # the peer connection failed: nothing will open

    def attach(self, channel):
        self.channel = channel
        log(f"data channel '{channel.label}' ({channel.readyState}, ordered={channel.ordered})")

        @channel.on("message")
        def on_message(data):
            if isinstance(data, bytes):
                self.problems.append(f"binary control message of {len(data)} bytes; the channel carries JSON text")
                return
            try:
                message = json.loads(data)
            except ValueError:
                self.problems.append(f"control message is not JSON: {data[:80]!r}")
                return
            if not isinstance(message, dict) or not isinstance(message.get("type"), str):
                self.problems.append(f"control message without a type: {data[:80]!r}")
                return
            if message["type"] != "sceneStatus":
                log(f"control <- {data[:200]}")
            self.messages.append(message)
            self.arrived.set()

        if channel.readyState == "open":
            self.opened.set()
        else:
            channel.on("open", self.opened.set)

    def send(self, text):
        log(f"control -> {text[:200]}")
        self.channel.send(text)

    async def wait_for(self, what, predicate, timeout, after=0):
        """The first message at index `after` or later matching `predicate`, and its index."""
        deadline = time.monotonic() + timeout
        while True:
            for i in range(after, len(self.messages)):
                if predicate(self.messages[i]):
                    return self.messages[i], i
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CheckFailed(f"no {what} on the control channel within {timeout:.0f} s")
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), remaining)
            except asyncio.TimeoutError:
                pass


class Video:
    """Decodes the received track: frame count, sizes, first-frame time."""

    def __init__(self):
        self.frames = 0
        self.sizes = {}
        self.first_frame_at = None
        self.enough = asyncio.Event()
        self.target = 0
        self.error = None
        self.task = None

    def start(self, track, target):
        self.target = target
        self.task = asyncio.create_task(self._receive(track))

    async def _receive(self, track):
        try:
            while True:
                frame = await track.recv()
                self.frames += 1
                size = f"{frame.width}x{frame.height}"
                self.sizes[size] = self.sizes.get(size, 0) + 1
                if self.first_frame_at is None:
                    self.first_frame_at = time.monotonic() - START
                    log(f"first decoded frame: {size} {frame.format.name}")
                if self.frames >= self.target:
                    self.enough.set()
        except Exception as error:  # MediaStreamError when the track ends
            self.error = f"video track ended after {self.frames} frames: {error!r}"
            self.enough.set()


POSE_EXTENSION_URI = "urn:x-posecast:rtp-hdrext:pose:1"   # docs/POSE_WIRE_FORMAT.md
TRANSPORT_LOG = None   # set in main: a TransportLog


class PoseExtensionWatch:
    """Counts the decrypted video RTP packets that carry the pose header-extension
    element. aiortc does not know the URI, leaves it out of its answer and never reads
    the element; this only looks, to show the element was on the wire while aiortc
    decoded around it. It wraps aiortc's RTP parser without changing what it returns."""

    def __init__(self):
        self.extension_id = None
        self.payload_types = set()
        self.packets = 0
        self.with_pose = 0

    def install(self):
        from aiortc import rtp
        original = rtp.RtpPacket.parse.__func__
        watch = self

        def parse(cls, data, *rest, **named):
            watch.observe(data)
            return original(cls, data, *rest, **named)

        rtp.RtpPacket.parse = classmethod(parse)

    def observe(self, data):
        if len(data) < 12 or (data[1] & 0x7F) not in self.payload_types:
            return
        self.packets += 1
        if not data[0] & 0x10 or self.extension_id is None:
            return
        start = 12 + 4 * (data[0] & 0x0F)
        if len(data) < start + 4:
            return
        profile, words = struct.unpack_from("!HH", data, start)
        body = data[start + 4:start + 4 + 4 * words]
        i = 0
        while i < len(body):
            if body[i] == 0:                       # padding
                i += 1
                continue
            if profile & 0xFFF0 == 0x1000:         # two-byte elements (RFC 8285)
                if i + 2 > len(body):
                    return
                element, length, header = body[i], body[i + 1], 2
            elif profile == 0xBEDE:                # one-byte elements
                element, length, header = body[i] >> 4, (body[i] & 0x0F) + 1, 1
                if element == 15:
                    return
            else:
                return
            if element == self.extension_id:
                self.with_pose += 1
                return
            i += header + length


class TransportLog(logging.Handler):
    """Keeps what aiortc's DTLS transport says about packets it had to drop (SRTP that
    does not authenticate, RTP that does not parse), for the failure message."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.drops = {}

    def emit(self, record):
        text = record.getMessage()
        for marker in ("SRTP unprotect failed", "RTP parsing failed", "RTCP parsing failed"):
            if marker in text:
                first, count = self.drops.get(marker, (text, 0))
                self.drops[marker] = (first, count + 1)

    def install(self):
        transport_logger = logging.getLogger("aiortc.rtcdtlstransport")
        transport_logger.addHandler(self)
        if transport_logger.getEffectiveLevel() > logging.DEBUG:
            transport_logger.setLevel(logging.DEBUG)
            transport_logger.propagate = False   # only here, unless --verbose asked for everything


def mids_in_order(sdp):
    """The `a=mid` of each m-line, in m-line order (None where an m-line has none)."""
    mids = []
    for line in sdp.splitlines():
        if line.startswith("m="):
            mids.append(None)
        elif line.startswith("a=mid:") and mids:
            mids[-1] = line[len("a=mid:"):].strip()
    return mids


def video_payload_types(sdp):
    """Payload types of the video m-line's media codecs (not its RTX repair types)."""
    types, in_video = set(), False
    for line in sdp.splitlines():
        if line.startswith("m="):
            in_video = line.startswith("m=video")
        elif in_video and line.startswith("a=rtpmap:"):
            number, name = line[len("a=rtpmap:"):].split(" ", 1)
            if not name.lower().startswith("rtx/"):
                types.add(int(number))
    return types


def forge_fingerprints(sdp, rng=random.SystemRandom()):
    """`sdp` with every a=fingerprint line replaced by three random digests, one per
    hash function, none of them our certificate's."""
    def digest(size):
        return ":".join(f"{rng.randrange(256):02X}" for _ in range(size))
    forged = [f"a=fingerprint:sha-256 {digest(32)}", f"a=fingerprint:sha-384 {digest(48)}",
              f"a=fingerprint:sha-512 {digest(64)}"]
    out = []
    for line in sdp.splitlines():
        if line.startswith("a=fingerprint:"):
            out.extend(forged)
        else:
            out.append(line)
    return "\r\n".join(out) + "\r\n"


def extmaps(sdp):
    return sorted(set(re.findall(r"^a=extmap:\d+(?:/\w+)? (\S+)", sdp, re.MULTILINE)))


def video_codecs(sdp):
    """Encoding names (upper case) of the video m-line's rtpmap lines."""
    names, in_video = [], False
    for line in sdp.splitlines():
        if line.startswith("m="):
            in_video = line.startswith("m=video")
        elif in_video and line.startswith("a=rtpmap:"):
            names.append(line.split(" ", 1)[1].split("/")[0].upper())
    return names


async def add_remote_candidate(pc, ice, mids):
    text = ice.get("candidate", "")
    index = ice.get("sdpMLineIndex")
    if not text:
        await pc.addIceCandidate(None)   # end of candidates
        return
    text = text[2:] if text.startswith("a=") else text
    candidate = candidate_from_sdp(text.split(":", 1)[1] if text.startswith("candidate:") else text)
    candidate.sdpMLineIndex = index
    candidate.sdpMid = mids[index] if index is not None and index < len(mids) else None
    await pc.addIceCandidate(candidate)


async def run(args, result, video, control, watch):
    url = args.signaling
    async with websockets.connect(url, max_size=1 << 20, open_timeout=args.step_timeout) as socket:
        signaling = Signaling(socket)
        welcome = await signaling.wait_for("welcome", lambda m: m.get("type") == "welcome", args.step_timeout)
        result["peer_id"] = welcome["peerId"]

        # Declare: a listener (told when producers come and go) and, in PoseCast's
        # extra fields, an expert of the room.
        status = {"type": "setPeerStatus", "roles": ["listener"], "meta": {"name": "aiortc-subscriber"},
                  "room": args.room, "role": args.role}
        if args.token is not None:
            status["token"] = args.token
        await signaling.send(status)

        # The publisher: from `list`, else from a later peerStatusChanged.
        await signaling.send({"type": "list"})
        listing = await signaling.wait_for("list", lambda m: m.get("type") == "list", args.step_timeout)
        producers = [p["id"] for p in listing.get("producers", [])]
        if producers:
            producer = producers[0]
        else:
            log("no publisher yet; waiting for one to appear")
            changed = await signaling.wait_for(
                "a publisher (peerStatusChanged with role producer)",
                lambda m: m.get("type") == "peerStatusChanged" and "producer" in m.get("roles", []),
                args.timeout)
            producer = changed["peerId"]
        result["producer"] = producer

        await signaling.send({"type": "startSession", "peerId": producer})
        started = await signaling.wait_for("sessionStarted", lambda m: m.get("type") == "sessionStarted",
                                           args.step_timeout)
        session = started["sessionId"]
        in_session = lambda m: m.get("sessionId") == session

        is_offer = lambda m: m.get("type") == "peer" and in_session(m) and isinstance(m.get("sdp"), dict)
        offer = (await signaling.wait_for("the publisher's offer", is_offer, args.step_timeout))["sdp"]
        # A peer cannot use a candidate before the description it belongs to: the
        # publisher must trickle its candidates after the offer.
        offer_at = next(i for i, m in enumerate(signaling.received) if is_offer(m))
        early = [m for m in signaling.received[:offer_at] if m.get("type") == "peer" and in_session(m) and "ice" in m]
        result["ice_before_offer"] = len(early)
        if early:
            result["errors"].append(f"{len(early)} ICE candidates arrived before the offer")
        if offer.get("type") != "offer":
            raise CheckFailed(f"expected an offer from the publisher, got {offer.get('type')}")
        offer_sdp = offer["sdp"]
        mids = mids_in_order(offer_sdp)
        result["offer"] = {"video_codecs": video_codecs(offer_sdp), "extmaps": extmaps(offer_sdp),
                           "mids": mids}
        if args.expect_codec and args.expect_codec.upper() not in result["offer"]["video_codecs"]:
            raise CheckFailed(f"offer carries {result['offer']['video_codecs']}, expected {args.expect_codec}")
        pose_id = re.search(r"^a=extmap:(\d+)(?:/\w+)? " + re.escape(POSE_EXTENSION_URI), offer_sdp, re.MULTILINE)
        watch.extension_id = int(pose_id.group(1)) if pose_id else None
        watch.payload_types = video_payload_types(offer_sdp)

        pc = RTCPeerConnection()

        @pc.on("track")
        def on_track(track):
            log(f"track: {track.kind}")
            if track.kind == "video":
                video.start(track, args.frames)

        @pc.on("datachannel")
        def on_datachannel(channel):
            if channel.label == "control":
                control.attach(channel)
            else:
                result["errors"].append(f"unexpected data channel '{channel.label}'")

        @pc.on("connectionstatechange")
        def on_state():
            log(f"connection state: {pc.connectionState}")
            if pc.connectionState == "failed":
                control.failed.set()

        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer_sdp, type="offer"))
        stray = {"video": args.stray_video, "audio": args.stray_audio}
        for transceiver in pc.getTransceivers():
            if stray.get(transceiver.kind):
                # Send a stream the publisher never asked for (its offer is send-only for
                # this m-line): aiortc is told the offer allowed it, so its sender starts.
                transceiver.direction = "sendrecv"
                transceiver._offerDirection = "sendrecv"
                transceiver.sender.replaceTrack(VideoStreamTrack() if transceiver.kind == "video" else AudioStreamTrack())
        missing = [kind for kind, mode in stray.items() if mode and not any(t.kind == kind for t in pc.getTransceivers())]
        if missing:
            raise CheckFailed(f"the offer has no {' or '.join(missing)} m-line to send a stray stream on")
        # Candidates the publisher trickled so far; later ones are added as they come.
        remote_candidates = 0
        for message in signaling.take_all(lambda m: m.get("type") == "peer" and in_session(m) and "ice" in m):
            await add_remote_candidate(pc, message["ice"], mids)
            remote_candidates += 1

        answer = await pc.createAnswer()
        await pc.setLocalDescription(answer)          # aiortc gathers every candidate here
        local = pc.localDescription
        sent = forge_fingerprints(local.sdp) if args.forge_fingerprint else local.sdp
        for kind, mode in stray.items():
            if mode == "regardless":
                # The answer says what the offer allows (receive only); we send all the same.
                sent = answer_direction(sent, kind, "recvonly")
        result["stray_video"] = args.stray_video
        result["stray_audio"] = args.stray_audio
        await signaling.send({"type": "peer", "sessionId": session,
                              "sdp": {"type": "answer", "sdp": sent}})
        result["answer"] = {"video_codecs": video_codecs(local.sdp), "extmaps": extmaps(local.sdp)}

        # Trickle our candidates too (they are also inside the answer), per m-line.
        local_candidates = 0
        for transceiver in pc.getTransceivers():
            gatherer = transceiver.receiver.transport.transport.iceGatherer
            for candidate in gatherer.getLocalCandidates():
                index = mids.index(transceiver.mid) if transceiver.mid in mids else 0
                await signaling.send({"type": "peer", "sessionId": session, "ice": {
                    "candidate": "candidate:" + candidate_to_sdp(candidate), "sdpMLineIndex": index}})
                local_candidates += 1

        async def keep_adding_candidates():
            nonlocal remote_candidates
            while True:
                try:
                    message = await signaling.wait_for(
                        "ICE", lambda m: m.get("type") == "peer" and in_session(m) and "ice" in m, 3600)
                except CheckFailed:
                    return   # the connection ended or the server refused something: the main checks report it
                await add_remote_candidate(pc, message["ice"], mids)
                remote_candidates += 1

        trickle = asyncio.create_task(keep_adding_candidates())
        try:
            if args.forge_fingerprint:
                await expect_rejection(args, result, pc, signaling, session, video, control)
            else:
                await exercise(args, result, pc, signaling, session, video, control, watch)
        finally:
            trickle.cancel()
            result["ice"] = {"remote_candidates": remote_candidates, "local_candidates": local_candidates}
            ended = signaling.take_all(lambda m: m.get("type") == "endSession")
            if ended and not args.forge_fingerprint:
                result["errors"].append(f"the session was ended early: {ended}")
            try:
                await signaling.send({"type": "endSession", "sessionId": session})
            except Exception:
                pass
            await pc.close()
            if video.task:
                video.task.cancel()


def answer_direction(sdp, kind, direction):
    """`sdp` with the direction of its `kind` (audio, video) m-sections set to `direction`."""
    sections = sdp.split("\r\nm=")
    for i, section in enumerate(sections):
        if i > 0 and section.startswith(kind + " "):
            sections[i] = re.sub(r"a=(sendrecv|sendonly|recvonly|inactive)", "a=" + direction, section)
    return "\r\nm=".join(sections)


async def wait_for_dtls(pc, timeout):
    """Waits until `pc` is connected (ICE and DTLS done); its time.monotonic(), or
    CheckFailed naming the state it reached instead."""
    settled = asyncio.Event()
    pc.on("connectionstatechange", lambda: settled.set() if pc.connectionState in ("connected", "failed", "closed") else None)
    if pc.connectionState != "connected":
        try:
            await asyncio.wait_for(settled.wait(), timeout)
        except asyncio.TimeoutError:
            raise CheckFailed(f"DTLS did not complete within {timeout:.0f} s (connection {pc.connectionState})")
    if pc.connectionState != "connected":
        raise CheckFailed(f"the connection {pc.connectionState} before DTLS completed")
    return time.monotonic()


async def expect_rejection(args, result, pc, signaling, session, video, control):
    """With forged fingerprints: DTLS completes (we check the publisher's certificate,
    it cannot check ours by webrtcbin alone), then the publisher must end the session
    within 1 s, and nothing may reach us: no decoded frame, no control message."""
    dtls_at = await wait_for_dtls(pc, args.step_timeout)
    result["dtls_connected_seconds"] = round(dtls_at - START, 3)
    try:
        ended = await signaling.wait_for("endSession from the publisher",
                                         lambda m: m.get("type") == "endSession" and m.get("sessionId") == session,
                                         args.step_timeout)
        result["ended_after_dtls_seconds"] = round(time.monotonic() - dtls_at, 3)
        log(f"session ended {result['ended_after_dtls_seconds']} s after DTLS: {ended}")
    except CheckFailed as error:
        result["errors"].append(f"the publisher did not end the session: {error}")
    # Anything sent to us before or just after the end would arrive within this.
    await asyncio.sleep(1.5)
    result["control_messages"] = len(control.messages)
    result["control_channel_opened"] = control.opened.is_set()
    ended_in = result.get("ended_after_dtls_seconds")
    if ended_in is not None and ended_in > 1.0:
        result["errors"].append(f"the session ended {ended_in} s after DTLS completed (at most 1 s)")
    if video.frames:
        result["errors"].append(f"{video.frames} video frames decoded from a session with a forged certificate")
    if control.messages:
        result["errors"].append(f"{len(control.messages)} control messages received: {control.messages[:3]}")


async def exercise(args, result, pc, signaling, session, video, control, watch):
    deadline = START + args.timeout

    def left():
        return max(0.5, deadline - time.monotonic())

    # Connection and the control channel.
    opened = asyncio.ensure_future(control.opened.wait())
    failed = asyncio.ensure_future(control.failed.wait())
    await asyncio.wait([opened, failed], timeout=min(args.step_timeout * 2, left()),
                       return_when=asyncio.FIRST_COMPLETED)
    opened.cancel(); failed.cancel()
    if not control.opened.is_set():
        raise CheckFailed(f"the control data channel did not open (connection {pc.connectionState}; "
                          "--verbose shows the ICE/DTLS reason)")
    replies = result["control_replies"]

    annotations, _ = await control.wait_for("annotations list", lambda m: m["type"] == "annotations",
                                            min(args.step_timeout, left()))
    if not isinstance(annotations.get("annotations"), list):
        raise CheckFailed(f"`annotations` without a list: {annotations}")
    result["annotations_at_open"] = len(annotations["annotations"])

    status = None
    if args.expect_scene_status:
        status, _ = await control.wait_for("sceneStatus", lambda m: m["type"] == "sceneStatus",
                                           min(args.step_timeout, left()))
        for field in ("frameId", "focusMode", "meteringMode", "region", "routines"):
            if field not in status:
                raise CheckFailed(f"sceneStatus without `{field}`: {status}")

    if args.role == "viewer":
        await viewer_requests(args, result, control, left)
        await wait_for_frames(args, pc, video, watch, left)
        result["errors"].extend(control.problems)
        return

    # annotate, placed by us in the world (the publisher has no way to check where we
    # tapped; it must store and echo the point).
    frame_id = status["frameId"] if status else 1
    mark = len(control.messages)
    position = {"x": 0.25, "y": 0.0, "z": -1.5}
    control.send(json.dumps({"type": "annotate", "id": "interop-annotate", "frameId": frame_id,
                             "tap": {"x": 0.5, "y": 0.6}, "placement": "world", "position": position,
                             "kind": "label", "label": "aiortc", "color": "#20C040"}))
    ack, _ = await control.wait_for("reply to annotate", lambda m: m.get("id") == "interop-annotate",
                                    min(args.step_timeout, left()), after=mark)
    replies.append({"request": "annotate", "reply": ack})
    if ack["type"] != "ack" or not isinstance(ack.get("annotationId"), str) or not ack["annotationId"]:
        raise CheckFailed(f"annotate was not acknowledged with an annotationId: {ack}")
    annotation_id = ack["annotationId"]
    listed, _ = await control.wait_for(
        "annotations list holding the new annotation",
        lambda m: m["type"] == "annotations" and any(a.get("id") == annotation_id for a in m.get("annotations", [])),
        min(args.step_timeout, left()), after=mark)
    stored = next(a for a in listed["annotations"] if a.get("id") == annotation_id)
    for axis, value in position.items():
        if abs(stored.get("position", {}).get(axis, float("nan")) - value) > 1e-6:
            raise CheckFailed(f"annotation stored at {stored.get('position')}, sent {position}")
    if stored.get("label") != "aiortc" or stored.get("kind") != "label":
        raise CheckFailed(f"annotation stored as {stored}")

    # focus: ack when the camera has focus control, `error unsupported` otherwise.
    mark = len(control.messages)
    control.send(json.dumps({"type": "focus", "id": "interop-focus", "point": {"x": 0.5, "y": 0.55},
                             "mode": "tapToAutoFocus"}))
    focus, _ = await control.wait_for("reply to focus", lambda m: m.get("id") == "interop-focus",
                                      min(args.step_timeout, left()), after=mark)
    replies.append({"request": "focus", "reply": focus})
    focus_kind = "ack" if focus["type"] == "ack" else (
        "unsupported" if focus["type"] == "error" and focus.get("code") == "unsupported" else "other")
    if focus_kind == "other" or (args.expect_focus != "any" and focus_kind != args.expect_focus):
        raise CheckFailed(f"focus answered {focus}, expected {args.expect_focus}")

    # Malformed requests: a known type with a bad field (its id is readable), and text
    # that is not JSON at all (no id to answer with). Both must be refused, in order,
    # without ending the session.
    mark = len(control.messages)
    control.send(json.dumps({"type": "annotate", "id": "interop-bad-tap", "frameId": frame_id,
                             "tap": {"x": 7.5, "y": 0.5}, "placement": "world", "position": position}))
    bad_tap, _ = await control.wait_for("reply to the out-of-range tap", lambda m: m.get("id") == "interop-bad-tap",
                                        min(args.step_timeout, left()), after=mark)
    replies.append({"request": "annotate with tap.x = 7.5", "reply": bad_tap})
    if bad_tap["type"] != "error" or bad_tap.get("code") != "invalidValue":
        raise CheckFailed(f"an out-of-range tap was answered {bad_tap}, expected error invalidValue")

    mark = len(control.messages)
    control.send('{"type": "annotate", "id": ')
    garbled, _ = await control.wait_for("reply to text that is not JSON",
                                        lambda m: m["type"] in ("error", "ack"), min(args.step_timeout, left()),
                                        after=mark)
    replies.append({"request": "text that is not JSON", "reply": garbled})
    if garbled["type"] != "error" or garbled.get("code") != "malformed" or "id" in garbled:
        raise CheckFailed(f"text that is not JSON was answered {garbled}, expected error malformed without id")

    await wait_for_frames(args, pc, video, watch, left)

    # Tidy up after ourselves: remove the annotation again.
    mark = len(control.messages)
    control.send(json.dumps({"type": "removeAnnotation", "id": "interop-remove", "annotationId": annotation_id}))
    removed, _ = await control.wait_for("reply to removeAnnotation", lambda m: m.get("id") == "interop-remove",
                                        min(args.step_timeout, left()), after=mark)
    replies.append({"request": "removeAnnotation", "reply": removed})
    if removed["type"] != "ack":
        raise CheckFailed(f"removeAnnotation answered {removed}")
    result["scene_status_messages"] = sum(1 for m in control.messages if m["type"] == "sceneStatus")
    if args.expect_scene_status and result["scene_status_messages"] < 2:
        raise CheckFailed(f"only {result['scene_status_messages']} sceneStatus messages (five a second expected)")
    result["errors"].extend(control.problems)


async def wait_for_frames(args, pc, video, watch, left):
    """The video: enough decoded frames, and the session still alive after all that."""
    try:
        await asyncio.wait_for(video.enough.wait(), left())
    except asyncio.TimeoutError:
        pass
    if video.error and video.frames < args.frames:
        raise CheckFailed(video.error)
    if video.frames < args.frames:
        transport = [s for s in (await pc.getStats()).values() if s.type == "transport"]
        received = ", ".join(f"{s.packetsReceived} datagrams received" for s in transport) or "no transport stats"
        drops = "; ".join(f"{count}× {first}" for first, count in TRANSPORT_LOG.drops.values()) or "no drops logged"
        raise CheckFailed(f"only {video.frames} frames decoded within {args.timeout:.0f} s (wanted {args.frames}; "
                          f"video track {'received' if video.task else 'never announced'}, "
                          f"{watch.packets} video RTP packets, {received}, {drops}, connection {pc.connectionState})")


async def viewer_requests(args, result, control, left):
    """A viewer's control channel: a camera request is refused for its role and text that
    is not JSON is answered malformed, each with a reply (the publisher reads it)."""
    replies = result["control_replies"]
    mark = len(control.messages)
    control.send(json.dumps({"type": "focus", "id": "viewer-focus", "point": {"x": 0.5, "y": 0.5},
                             "mode": "tapToAutoFocus"}))
    focus, _ = await control.wait_for("reply to a viewer's focus", lambda m: m.get("id") == "viewer-focus",
                                      min(args.step_timeout, left()), after=mark)
    replies.append({"request": "focus (viewer)", "reply": focus})
    if focus["type"] != "error":
        raise CheckFailed(f"a viewer's focus was answered {focus}, expected a refusal")
    mark = len(control.messages)
    control.send('{"type": "focus", "id": ')
    garbled, _ = await control.wait_for("reply to text that is not JSON", lambda m: m["type"] in ("error", "ack"),
                                        min(args.step_timeout, left()), after=mark)
    replies.append({"request": "text that is not JSON", "reply": garbled})
    if garbled["type"] != "error" or garbled.get("code") != "malformed":
        raise CheckFailed(f"text that is not JSON was answered {garbled}, expected error malformed")


def run_checks(coroutine, timeout, errors):
    """Runs a peer's whole conversation with a time limit; what stopped it goes to `errors`."""
    try:
        asyncio.run(asyncio.wait_for(coroutine, timeout))
    except CheckFailed as error:
        errors.append(str(error))
    except asyncio.TimeoutError:
        errors.append(f"the run did not finish within {timeout:.0f} s")
    except Exception as error:
        errors.append(f"{type(error).__name__}: {error}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signaling", required=True, help="signaling server URL, ws://HOST:PORT/")
    parser.add_argument("--room", default="default")
    parser.add_argument("--token", default=None)
    parser.add_argument("--frames", type=int, default=100, help="decoded frames required (default 100)")
    parser.add_argument("--timeout", type=float, default=60, help="limit for the whole run, seconds")
    parser.add_argument("--step-timeout", type=float, default=15, help="limit for each signaling/control step")
    parser.add_argument("--expect-focus", choices=["ack", "unsupported", "any"], default="any",
                        help="the publisher's answer to focus: ack (a camera with focus, e.g. synthetic), "
                             "unsupported (no focus control, e.g. videotestsrc) or any")
    parser.add_argument("--expect-codec", default=None, help="VP8 or H264: fail unless the offer carries it")
    parser.add_argument("--no-scene-status", dest="expect_scene_status", action="store_false",
                        help="do not require sceneStatus (publishers without camera control send none)")
    parser.add_argument("--forge-fingerprint", action="store_true",
                        help="answer with random certificate digests; pass only if the publisher ends the session "
                             "within 1 s of DTLS and nothing reaches us")
    parser.add_argument("--stray-video", choices=["forged", "regardless"], default=None,
                        help="send a video stream the publisher's send-only offer never asked for: with an answer "
                             "that claims sendrecv (forged) or that says recvonly (regardless); every other check "
                             "must still pass (the publisher discards the stream and the session goes on)")
    parser.add_argument("--stray-audio", choices=["forged", "regardless"], default=None,
                        help="the same with audio (as a viewer, whose audio m-line is send-only)")
    parser.add_argument("--role", choices=["expert", "viewer"], default="expert",
                        help="the role declared; a viewer checks only that its camera requests are refused")
    parser.add_argument("--verbose", action="store_true", help="aiortc/aioice debug logs on stderr")
    args = parser.parse_args()
    if args.verbose:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    global TRANSPORT_LOG
    TRANSPORT_LOG = TransportLog()
    TRANSPORT_LOG.install()

    result = {"ok": False, "frames_decoded": 0, "width": None, "height": None, "sizes": {},
              "control_replies": [], "errors": [], "seconds": 0.0}
    video, control, watch = Video(), Control(), PoseExtensionWatch()
    watch.install()
    run_checks(run(args, result, video, control, watch), args.timeout + 10, result["errors"])
    result["frames_decoded"] = video.frames
    result["sizes"] = video.sizes
    if video.sizes:
        largest = max(video.sizes, key=video.sizes.get)
        result["width"], result["height"] = (int(v) for v in largest.split("x"))
    result["first_frame_seconds"] = None if video.first_frame_at is None else round(video.first_frame_at, 3)
    result["rtp_packets"] = watch.packets
    result["rtp_packets_with_pose"] = watch.with_pose
    if watch.extension_id is not None and watch.packets and not watch.with_pose and not args.forge_fingerprint:
        result["errors"].append("the offer negotiates the pose extension but no video packet carried it")
    result["seconds"] = round(time.monotonic() - START, 3)
    if result["frames_decoded"] < args.frames and not result["errors"] and not args.forge_fingerprint:
        result["errors"].append(f"only {result['frames_decoded']} frames decoded (wanted {args.frames})")
    result["ok"] = not result["errors"]
    print(json.dumps(result, sort_keys=True), flush=True)
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
