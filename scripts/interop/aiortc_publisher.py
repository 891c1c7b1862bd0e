#!/usr/bin/env python3
"""An independent publisher built on aiortc, for checks of posecast-subscriber.

Written against PoseCast's documented protocols (docs/SIGNALING.md,
docs/CONTROL_CHANNEL.md): it registers as the producer of a room, and for each
subscriber session offers a video track (a plain moving picture, no pose: aiortc knows
nothing of PoseCast's pose extension) and the "control" data channel, trickles ICE both
ways and counts what the subscriber sends on the channel.

With --forge-fingerprint its offers name three random certificate digests (sha-256,
sha-384, sha-512) in place of its own: the subscriber must end the session within 1 s
of DTLS completing and nothing may pass (docs/SECURITY.md). Without it the session must
stay up until --seconds have passed.

Prints exactly one JSON line on stdout when the first session is over (ended by the
subscriber, or --seconds after DTLS) and exits 0 only when its checks passed; progress
goes to stderr. Every wait has a time limit.

    python3 scripts/interop/aiortc_publisher.py --signaling ws://127.0.0.1:8443/ \\
        [--room default] [--token T] [--forge-fingerprint] [--seconds 5] [--timeout 60]
"""

import argparse
import asyncio
import json
import sys
import time

try:
    import websockets
    from aiortc import RTCPeerConnection, RTCSessionDescription, VideoStreamTrack
    from aiortc.sdp import candidate_from_sdp
    from av import VideoFrame
except ImportError as error:  # pragma: no cover - depends on the machine
    print(json.dumps({"ok": False, "errors": [f"missing Python package: {error} (run scripts/interop-setup)"]}))
    sys.exit(2)

from aiortc_subscriber import CheckFailed, Signaling, forge_fingerprints, mids_in_order, run_checks, wait_for_dtls

START = time.monotonic()


def log(message):
    print(f"[aiortc-publisher {time.monotonic() - START:6.2f}s] {message}", file=sys.stderr, flush=True)


class MovingBars(VideoStreamTrack):
    """640×480 frames at 30 fps whose grey level changes every frame (a live picture)."""

    def __init__(self):
        super().__init__()
        self.count = 0

    async def recv(self):
        pts, time_base = await self.next_timestamp()
        frame = VideoFrame(width=640, height=480, format="yuv420p")
        level = (self.count * 4) % 200 + 28
        for index, plane in enumerate(frame.planes):
            plane.update(bytes([level if index == 0 else 128]) * plane.buffer_size)
        frame.pts, frame.time_base = pts, time_base
        self.count += 1
        return frame


async def add_candidate(pc, ice, mids):
    text = ice.get("candidate", "")
    if not text:
        return
    text = text[2:] if text.startswith("a=") else text
    candidate = candidate_from_sdp(text.split(":", 1)[1])
    index = ice.get("sdpMLineIndex")
    candidate.sdpMLineIndex = index
    candidate.sdpMid = mids[index] if index is not None and index < len(mids) else None
    await pc.addIceCandidate(candidate)


async def serve(args, result):
    async with websockets.connect(args.signaling, max_size=1 << 20, open_timeout=15) as socket:
        signaling = Signaling(socket)
        await signaling.wait_for("welcome", lambda m: m.get("type") == "welcome", 15)
        status = {"type": "setPeerStatus", "roles": ["producer"], "meta": {"name": "aiortc-publisher"},
                  "room": args.room, "role": "publisher"}
        if args.token is not None:
            status["token"] = args.token
        await signaling.send(status)
        log("registered; waiting for a subscriber")
        start = await signaling.wait_for("startSession", lambda m: m.get("type") == "startSession", args.timeout)
        session = start["sessionId"]
        result["subscriber"] = start.get("peerId")
        in_session = lambda m: m.get("sessionId") == session

        pc = RTCPeerConnection()
        pc.addTrack(MovingBars())
        channel = pc.createDataChannel("control")
        received = []
        channel.on("message", lambda data: received.append(data if isinstance(data, str) else f"<{len(data)} bytes>"))
        pc.on("connectionstatechange", lambda: log(f"connection state: {pc.connectionState}"))

        offer = await pc.createOffer()
        await pc.setLocalDescription(offer)
        local = pc.localDescription.sdp
        mids = mids_in_order(local)
        sent = forge_fingerprints(local) if args.forge_fingerprint else local
        await signaling.send({"type": "peer", "sessionId": session, "sdp": {"type": "offer", "sdp": sent}})
        answer = await signaling.wait_for("the answer", lambda m: m.get("type") == "peer" and in_session(m)
                                          and isinstance(m.get("sdp"), dict), 15)
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"]["sdp"], type="answer"))

        async def trickle():
            while True:
                try:
                    message = await signaling.wait_for(
                        "ICE", lambda m: m.get("type") == "peer" and in_session(m) and "ice" in m, 3600)
                except CheckFailed:
                    return
                await add_candidate(pc, message["ice"], mids)

        trickling = asyncio.create_task(trickle())
        dtls_at = await wait_for_dtls(pc, 15)
        result["dtls_connected_seconds"] = round(dtls_at - START, 3)
        limit = 5.0 if args.forge_fingerprint else args.seconds
        try:
            await signaling.wait_for("endSession", lambda m: m.get("type") == "endSession" and in_session(m), limit)
            result["ended_after_dtls_seconds"] = round(time.monotonic() - dtls_at, 3)
            log(f"the subscriber ended the session {result['ended_after_dtls_seconds']} s after DTLS")
        except CheckFailed:
            result["ended_after_dtls_seconds"] = None
        await asyncio.sleep(1.0 if args.forge_fingerprint else 0)
        result["frames_sent"] = pc.getSenders()[0].track.count if pc.getSenders() else 0
        result["control_messages_received"] = len(received)
        result["control_sample"] = received[:3]
        trickling.cancel()
        await pc.close()

        ended = result["ended_after_dtls_seconds"]
        if args.forge_fingerprint:
            if ended is None:
                result["errors"].append("the subscriber did not end a session whose offer named forged fingerprints")
            elif ended > 1.0:
                result["errors"].append(f"the subscriber ended the session {ended} s after DTLS (at most 1 s)")
            if received:
                result["errors"].append(f"the subscriber sent {len(received)} control messages to a forged peer")
        elif ended is not None:
            result["errors"].append(f"the subscriber ended an honest session after {ended} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signaling", required=True)
    parser.add_argument("--room", default="default")
    parser.add_argument("--token", default=None)
    parser.add_argument("--forge-fingerprint", action="store_true")
    parser.add_argument("--seconds", type=float, default=5, help="how long an honest session must last")
    parser.add_argument("--timeout", type=float, default=60, help="limit for the whole run, seconds")
    args = parser.parse_args()
    result = {"ok": False, "errors": [], "forged": args.forge_fingerprint}
    run_checks(serve(args, result), args.timeout, result["errors"])
    result["seconds"] = round(time.monotonic() - START, 3)
    result["ok"] = not result["errors"]
    print(json.dumps(result, sort_keys=True), flush=True)
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
