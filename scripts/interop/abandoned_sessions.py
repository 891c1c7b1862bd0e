#!/usr/bin/env python3
"""Strangers who start sessions with a publisher and abandon them (issue 13).

Each stranger is its own signaling connection: it joins the room as a viewer, asks the
publisher for a session, and abandons it in one of four ways, taken in turn:

  dropped    closes its signaling connection right after `startSession`;
  silent     never answers the offer;
  no-ice     answers (our codec, random ICE credentials and fingerprint, no candidate),
             so ICE can never connect;
  no-dtls    answers with the credentials and candidates of a real ICE agent (aioice),
             completes ICE, and never sends a DTLS ClientHello (a=setup:active).

One more way, only when asked for (`--ways sfu`, against a publisher with `--sfu`):

  sfu        asks for its sessions through the SFU (`via: sfu`: no peer, control over
             signaling) and never subscribes in Janus; every other one guesses a
             `receiving` proof (a frame id and a capture time it cannot know).
             `--per-stranger N` sessions each (the publisher allows 4 per consumer).

Strangers are started evenly over --over seconds; each keeps its connection until the
publisher ends its session (or the server refuses it), at most --hold seconds. Prints
one JSON line: per way, how many were started, refused (by code), admitted
(`sessionStarted`), offered, ICE-connected, and ended by the publisher (with the
longest time from `sessionStarted` to that end).

    python3 scripts/interop/abandoned_sessions.py --signaling ws://127.0.0.1:8443/ \\
        [--room default] [--sessions 200] [--over 20] [--hold 40] [--ways dropped,silent,no-ice,no-dtls]
        [--per-stranger 1]
"""

import argparse
import asyncio
import json
import secrets
import sys
import time

try:
    import websockets
    from aioice import Candidate, Connection
except ImportError as error:  # pragma: no cover - depends on the machine
    print(json.dumps({"ok": False, "errors": [f"missing Python package: {error} (run scripts/interop-setup)"]}))
    sys.exit(2)

WAYS = ["dropped", "silent", "no-ice", "no-dtls"]
ALL_WAYS = WAYS + ["sfu"]
START = time.monotonic()


def log(message):
    print(f"[strangers {time.monotonic() - START:6.2f}s] {message}", file=sys.stderr, flush=True)


def random_fingerprint():
    return ":".join(f"{b:02X}" for b in secrets.token_bytes(32))


def answer_for(offer, ufrag, pwd, candidates=()):
    """An answer to `offer` that accepts its first video codec and its data channel,
    as DTLS client (a=setup:active) with these ICE credentials and candidates."""
    sections, current = [], None
    for line in offer.splitlines():
        if line.startswith("m="):
            current = {"m": line, "lines": []}
            sections.append(current)
        elif current is not None:
            current["lines"].append(line)
    mids = [next((l[6:] for l in s["lines"] if l.startswith("a=mid:")), str(i)) for i, s in enumerate(sections)]
    fingerprint = random_fingerprint()   # one certificate for every m-line
    out = ["v=0", f"o=- {secrets.randbelow(1 << 31)} 2 IN IP4 127.0.0.1", "s=-", "t=0 0",
           "a=group:BUNDLE " + " ".join(mids), "a=msid-semantic: WMS"]
    for index, section in enumerate(sections):
        kind = section["m"][2:].split(" ", 1)[0]
        common = ["c=IN IP4 0.0.0.0", f"a=mid:{mids[index]}", f"a=ice-ufrag:{ufrag}", f"a=ice-pwd:{pwd}",
                  f"a=fingerprint:sha-256 {fingerprint}", "a=setup:active"]
        if index == 0:
            common += [f"a=candidate:{c.to_sdp()}" for c in candidates]
            if candidates:
                common.append("a=end-of-candidates")
        if kind == "video":
            rtpmaps = [l for l in section["lines"] if l.startswith("a=rtpmap:") and "rtx/" not in l.lower()]
            payload = rtpmaps[0].split(":", 1)[1].split(" ", 1)[0]
            out += [f"m=video 9 UDP/TLS/RTP/SAVPF {payload}"] + common + [rtpmaps[0], "a=recvonly", "a=rtcp-mux"]
        elif kind == "application":
            out += ["m=application 9 UDP/DTLS/SCTP webrtc-datachannel"] + common + ["a=sctp-port:5000"]
        else:
            out += [f"m={kind} 0 UDP/TLS/RTP/SAVPF 0", f"a=mid:{mids[index]}", "a=inactive"]
    return "\r\n".join(out) + "\r\n"


def offer_credentials(offer):
    ufrag = next(l.split(":", 1)[1] for l in offer.splitlines() if l.startswith("a=ice-ufrag:"))
    pwd = next(l.split(":", 1)[1] for l in offer.splitlines() if l.startswith("a=ice-pwd:"))
    return ufrag.strip(), pwd.strip()


class Tally:
    def __init__(self, ways):
        self.ways = {way: {"started": 0, "refused": {}, "admitted": 0, "offered": 0, "ice_connected": 0,
                           "ended_by_publisher": 0, "longest_life_s": 0.0, "held_to_the_end": 0,
                           "guesses": 0, "guesses_refused": {}, "failures": []} for way in ways}


async def sfu_stranger(args, number, socket, receive, producer, t):
    """`--per-stranger` sessions through the SFU, never subscribed; every other stranger
    guesses a proof of reception on each. Held until the publisher ends each one."""
    sessions = {}

    def note(message):
        """A session's end, or the refusal of a guess, whenever it comes."""
        if message["type"] == "endSession" and message.get("sessionId") in sessions:
            admitted_at = sessions.pop(message["sessionId"])
            t["ended_by_publisher"] += 1
            t["longest_life_s"] = max(t["longest_life_s"], round(time.monotonic() - admitted_at, 2))
        elif message["type"] == "peer" and isinstance(message.get("control"), str):
            reply = json.loads(message["control"])
            if reply.get("type") == "error" and str(reply.get("id", "")).startswith("rx"):
                code = reply.get("code", "?")
                t["guesses_refused"][code] = t["guesses_refused"].get(code, 0) + 1

    for _ in range(args.per_stranger):
        await socket.send(json.dumps({"type": "startSession", "peerId": producer}))
        while True:
            started = await receive({"sessionStarted", "error", "peer", "endSession"}, 10)
            if started and started["type"] in ("peer", "endSession"):
                note(started)
                continue
            break
        if not started or started.get("type") == "error":
            code = (started or {}).get("code", "no reply")
            t["refused"][code] = t["refused"].get(code, 0) + 1
            continue
        t["admitted"] += 1
        sessions[started["sessionId"]] = time.monotonic()
        if number % 2 == 1:
            t["guesses"] += 1
            guess = {"type": "receiving", "id": f"rx{len(sessions)}", "frameId": secrets.randbelow(3000),
                     "captureTimeNs": str(time.time_ns())}
            await socket.send(json.dumps({"type": "peer", "sessionId": started["sessionId"], "control": json.dumps(guess)}))
    deadline = time.monotonic() + args.hold
    while sessions and time.monotonic() < deadline:
        message = await receive({"peer", "endSession"}, deadline - time.monotonic())
        if message is None:
            break
        note(message)
    t["held_to_the_end"] += len(sessions)


async def stranger(args, number, way, tally):
    t = tally.ways[way]
    t["started"] += 1
    agent = None
    try:
        async with websockets.connect(args.signaling, max_size=1 << 20, open_timeout=10) as socket:
            async def receive(types, timeout):
                deadline = time.monotonic() + timeout
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    try:
                        message = json.loads(await asyncio.wait_for(socket.recv(), remaining))
                    except asyncio.TimeoutError:
                        return None
                    if message.get("type") in types:
                        return message

            await receive({"welcome"}, 10)
            meta = {"name": f"stranger{number}"}
            if way == "sfu":
                meta["via"] = "sfu"
            await socket.send(json.dumps({"type": "setPeerStatus", "roles": ["consumer"], "room": args.room,
                                          "role": "viewer", "meta": meta}))
            await socket.send(json.dumps({"type": "list"}))
            listing = await receive({"list", "error"}, 10)
            if not listing or listing.get("type") == "error" or not listing.get("producers"):
                code = (listing or {}).get("code", "no publisher listed")
                t["refused"][code] = t["refused"].get(code, 0) + 1
                return
            if way == "sfu":
                await sfu_stranger(args, number, socket, receive, listing["producers"][0]["id"], t)
                return
            await socket.send(json.dumps({"type": "startSession", "peerId": listing["producers"][0]["id"]}))
            if way == "dropped":
                return   # the connection closes here, right after startSession
            started = await receive({"sessionStarted", "error"}, 10)
            if not started or started.get("type") == "error":
                code = (started or {}).get("code", "no reply")
                t["refused"][code] = t["refused"].get(code, 0) + 1
                return
            t["admitted"] += 1
            session, admitted_at = started["sessionId"], time.monotonic()
            offer = await receive({"peer", "endSession"}, 10)
            if offer and offer.get("type") == "peer" and isinstance(offer.get("sdp"), dict):
                t["offered"] += 1
                offer_sdp = offer["sdp"]["sdp"]
                if way == "no-ice":
                    answer = answer_for(offer_sdp, secrets.token_hex(4), secrets.token_hex(12))
                    await socket.send(json.dumps({"type": "peer", "sessionId": session,
                                                  "sdp": {"type": "answer", "sdp": answer}}))
                elif way == "no-dtls":
                    agent = Connection(ice_controlling=False, use_ipv6=False)
                    agent.remote_username, agent.remote_password = offer_credentials(offer_sdp)
                    await agent.gather_candidates()
                    answer = answer_for(offer_sdp, agent.local_username, agent.local_password, agent.local_candidates)
                    await socket.send(json.dumps({"type": "peer", "sessionId": session,
                                                  "sdp": {"type": "answer", "sdp": answer}}))
                    for line in offer_sdp.splitlines():
                        if line.startswith("a=candidate:"):
                            await agent.add_remote_candidate(Candidate.from_sdp(line[len("a=candidate:"):]))
            elif offer and offer.get("type") == "endSession":
                t["ended_by_publisher"] += 1
                return
            # Hold the session: take trickled candidates (no-dtls) and wait for its end.
            connecting = asyncio.ensure_future(agent.connect()) if agent else None
            deadline = admitted_at + args.hold
            while time.monotonic() < deadline:
                message = await receive({"peer", "endSession"}, deadline - time.monotonic())
                if message is None:
                    t["held_to_the_end"] += 1
                    break
                if message["type"] == "endSession":
                    t["ended_by_publisher"] += 1
                    t["longest_life_s"] = max(t["longest_life_s"], round(time.monotonic() - admitted_at, 2))
                    break
                ice = message.get("ice")
                if agent and ice and ice.get("candidate"):
                    text = ice["candidate"]
                    text = text[2:] if text.startswith("a=") else text
                    if "udp" in text.lower() and ":" not in text.split(" ")[4]:   # IPv4 UDP only
                        await agent.add_remote_candidate(Candidate.from_sdp(text.split(":", 1)[1]))
            if connecting:
                if connecting.done() and connecting.exception() is None:
                    t["ice_connected"] += 1
                connecting.cancel()
    except Exception as error:
        t["failures"].append(f"{type(error).__name__}: {error}"[:200])
    finally:
        if agent:
            await agent.close()


async def attack(args):
    tally = Tally(args.ways)
    tasks = []
    for number in range(args.sessions):
        at = START + number * args.over / args.sessions
        await asyncio.sleep(max(0, at - time.monotonic()))
        tasks.append(asyncio.create_task(stranger(args, number, args.ways[number % len(args.ways)], tally)))
    last_started = round(time.monotonic() - START, 2)
    log(f"{args.sessions} strangers started; waiting for their sessions to end")
    await asyncio.gather(*tasks)
    return tally, last_started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signaling", required=True)
    parser.add_argument("--room", default="default")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--over", type=float, default=20)
    parser.add_argument("--hold", type=float, default=40, help="longest a stranger holds its session, seconds")
    parser.add_argument("--ways", default=",".join(WAYS), help=f"comma-separated, of {', '.join(ALL_WAYS)}")
    parser.add_argument("--per-stranger", type=int, default=1, help="sessions each sfu stranger asks for")
    args = parser.parse_args()
    args.ways = [way.strip() for way in args.ways.split(",") if way.strip()]
    unknown = [way for way in args.ways if way not in ALL_WAYS]
    if unknown or not args.ways:
        parser.error(f"--ways: {', '.join(unknown) or 'none'}: each must be one of {', '.join(ALL_WAYS)}")
    tally, last_started = asyncio.run(attack(args))
    result = {"sessions": args.sessions, "over_s": args.over, "last_started_s": last_started,
              "seconds": round(time.monotonic() - START, 2), "ways": tally.ways,
              "failures": sum(len(w["failures"]) for w in tally.ways.values())}
    print(json.dumps(result, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
