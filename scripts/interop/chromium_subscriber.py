#!/usr/bin/env python3
"""A PoseCast expert inside real Chromium, for interoperability and network tests.

Starts Debian's Chromium (/usr/bin/chromium) headless with a temporary profile, opens
chromium_subscriber.html (next to this file) and drives it over the Chrome DevTools
Protocol (`websockets`; Runtime.evaluate with awaitPromise/returnByValue). The page
itself joins the signaling server as an expert (docs/SIGNALING.md, the same steps as
aiortc_subscriber.py), answers the publisher's offer with RTCPeerConnection (recvonly
video, the publisher's data channel) and samples pc.getStats() every 500 ms.

Stdout: one JSON line per sample (t, inbound_kbps, wire_kbps, fps, frames_decoded,
packets_lost, nack_count, pli_count, freeze_count, total_freezes_duration,
jitter_buffer_delay_ms, rtt_ms, selected_pair), `t` counting from the first decoded
frame (`"since": "first_frame"`) or, before it, from the connection (`"since":
"connect"`); then one summary line {"summary": true, "ok", "frames_decoded",
"duration_s", "reasons", "remb_negotiated", "answer_rtcp_fb", ...}. Progress on
stderr. Exit 0 only when ok: connected, at least --min-frames decoded, sampled for
--duration seconds after the first frame, no failure. Chromium is killed and its
profile removed on every way out (Ctrl-C, SIGTERM, --timeout included).

ICE on one machine (checked with Chromium 156, Debian 12). Chromium never offers a
loopback host candidate, and by default hides its host addresses behind mDNS names
(`….local`) that libnice cannot resolve; this script launches it with
--disable-features=WebRtcHideLocalIpsWithMdns, so its host candidate is the default
route's address as an IP (here 192.0.2.2, and fd00::2 for IPv6). Without a media
permission Chromium binds its ICE UDP sockets to the wildcard address (0.0.0.0 / ::),
so they also reach 127.0.0.1. Three configurations carry media:

1. Default (publisher gathers on all interfaces): the pair is Chromium's host
   192.0.2.2 (or fd00::2) <-> the publisher's host 192.0.2.2 (or fd00::2). Packets
   between two addresses of this host go through the kernel's local route (lo) and
   never leave the machine.
2. Publisher restricted with `--ice-address 127.0.0.1`: Chromium's wildcard socket
   answers the publisher's 127.0.0.1 host candidate; the pair is Chromium's
   peer-reflexive 127.0.0.1 <-> the publisher's host 127.0.0.1. Loopback only.
3. Chromium relay only through a coturn on 127.0.0.1 (--turn … --relay-only), with
   or without --ice-address 127.0.0.1 on the publisher: the pair is Chromium's relay
   127.0.0.1 <-> the publisher's host. coturn needs --allow-loopback-peers:

    turnserver -n --listening-ip=127.0.0.1 --relay-ip=127.0.0.1 --listening-port=3478 \
        --lt-cred-mech --user=u:p --realm=posecast --no-tls --no-dtls \
        --allow-loopback-peers --no-cli --log-file=stdout
    .build/interop-venv/bin/python3 scripts/interop/chromium_subscriber.py \
        --signaling ws://127.0.0.1:PORT/ --turn 'turn:127.0.0.1:3478?transport=udp' \
        --turn-user u --turn-password p --relay-only

What Chromium negotiates (PoseCast's offer: H.264 or VP8 with nack, nack pli, ccm fir,
transport-cc and goog-remb, the pose extmap and the transport-wide-cc extmap): its
answer keeps the feedback types and the transport-wide-cc extmap and drops the pose
extmap (unknown to it), so it sends transport-wide feedback for every packet and no
REMB (libwebrtc estimates on the sending side once transport-cc is there). With
`posecast-publisher --disable-transport-cc` the offer has no transport-wide extmap and
Chromium sends REMB instead. The summary reports remb_negotiated,
transport_cc_negotiated (rtcp-fb and the extmap), the rtcp-fb lines of both sides and
the extmaps.

The page is opened from a file, so its WebSocket carries `Origin: null`: the signaling
server must allow it (`posecast-signaling --allow-origin null`, or the publisher's
embedded server with `--allow-origin null`); otherwise it refuses the upgrade (docs/SECURITY.md).

Usage:
    .build/interop-venv/bin/python3 scripts/interop/chromium_subscriber.py \
        --signaling ws://127.0.0.1:PORT/ [--room default] [--token T] [--duration 20] \
        [--timeout 60] [--min-frames 30] [--turn URL --turn-user U --turn-password P \
        [--relay-only]] [--sdp-out FILE] [--verbose]
"""

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

try:
    import websockets
except ImportError as error:  # pragma: no cover - depends on the machine
    print(json.dumps({"summary": True, "ok": False,
                      "reasons": [f"missing Python package: {error} (run scripts/interop-setup and use "
                                  ".build/interop-venv/bin/python3)"]}), flush=True)
    sys.exit(2)

CHROMIUM = os.environ.get("POSECAST_CHROMIUM", "/usr/bin/chromium")
PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chromium_subscriber.html")
START = time.monotonic()


def log(message):
    print(f"[chromium-subscriber {time.monotonic() - START:6.2f}s] {message}", file=sys.stderr, flush=True)


class Failure(Exception):
    """The run cannot go on; the message is the summary's reason."""


class Interrupted(BaseException):
    """SIGTERM / SIGHUP: leave as after Ctrl-C, cleaning up on the way."""


# ---------------------------------------------------------------- Chromium


class Chromium:
    """A headless Chromium in its own process group with a temporary profile; stop()
    kills the whole group and removes the profile, whatever state it is in."""

    def __init__(self, verbose, extra_arguments=()):
        self.verbose = verbose
        self.extra_arguments = list(extra_arguments)   # more flags (chromium_console.py --audio: a fake microphone)
        self.profile = tempfile.mkdtemp(prefix="posecast-chromium-")
        self.process = None
        self.stderr_path = os.path.join(self.profile, "chromium-stderr.log")

    def start(self):
        arguments = [
            CHROMIUM,
            "--headless=new",
            f"--user-data-dir={self.profile}",
            "--remote-debugging-port=0",
            # Host candidates as IP addresses, not mDNS names libnice cannot resolve.
            "--disable-features=WebRtcHideLocalIpsWithMdns",
            "--autoplay-policy=no-user-gesture-required",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-extensions",
            "--disable-default-apps", "--disable-breakpad", "--disable-crash-reporter",
            "--disable-gpu", "--mute-audio", "--password-store=basic", "--use-mock-keychain",
            "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows",
            *self.extra_arguments,
            "about:blank",
        ]
        if os.geteuid() == 0:
            arguments.insert(1, "--no-sandbox")
        stderr = open(self.stderr_path, "wb")
        self.process = subprocess.Popen(arguments, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                        start_new_session=True, preexec_fn=die_with_parent)
        stderr.close()
        log(f"chromium pid {self.process.pid}, profile {self.profile}")

    async def devtools_port(self, timeout):
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise Failure(f"chromium exited with code {self.process.returncode} before DevTools was up: "
                              f"{self.stderr_tail()}")
            try:
                with open(path) as file:
                    lines = file.read().split("\n")
                if lines and lines[0].strip().isdigit():
                    return int(lines[0])
            except FileNotFoundError:
                pass
            await asyncio.sleep(0.1)
        raise Failure(f"no DevToolsActivePort within {timeout:.0f} s: {self.stderr_tail()}")

    def stderr_tail(self, lines=8):
        try:
            with open(self.stderr_path, errors="replace") as file:
                return " | ".join(file.read().strip().splitlines()[-lines:])
        except OSError:
            return "(no chromium stderr)"

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
                try:
                    os.killpg(self.process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.process is not None:
            # Helpers (renderer, GPU, zygote) that outlived the browser: same group.
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if self.process.poll() is None:
                try:
                    self.process.wait(2)
                except subprocess.TimeoutExpired:
                    pass
        shutil.rmtree(self.profile, ignore_errors=True)


def die_with_parent():
    """In the child before exec: SIGKILL when this script dies, even by SIGKILL (Linux)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except Exception:
        pass


# ---------------------------------------------------------------- DevTools protocol


class DevTools:
    """One page target's DevTools WebSocket: commands with ids, events to a callback."""

    def __init__(self, socket, on_event):
        self.socket = socket
        self.on_event = on_event
        self.next_id = 0
        self.waiting = {}
        self.closed = None
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        try:
            async for text in self.socket:
                message = json.loads(text)
                if "id" in message:
                    future = self.waiting.pop(message["id"], None)
                    if future and not future.done():
                        future.set_result(message)
                else:
                    self.on_event(message.get("method"), message.get("params", {}))
            self.closed = "the DevTools connection closed (chromium gone?)"
        except Exception as error:
            self.closed = f"the DevTools connection failed: {error!r}"
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(Failure(self.closed))
        self.waiting.clear()

    async def call(self, method, params=None, timeout=15):
        if self.closed:
            raise Failure(self.closed)
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        await self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params or {}}))
        try:
            reply = await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise Failure(f"DevTools {method} did not answer within {timeout:.0f} s")
        finally:
            self.waiting.pop(self.next_id, None)
        if "error" in reply:
            raise Failure(f"DevTools {method}: {reply['error'].get('message')}")
        return reply["result"]

    async def evaluate(self, expression, timeout=15):
        result = await self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                      "returnByValue": True}, timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise Failure(f"page evaluation of {expression!r} threw: {text}")
        return result["result"].get("value")


def console_printer(verbose):
    def on_event(method, params):
        if not verbose:
            return
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            log(f"console.{params.get('type')}: {text}")
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            log(f"chromium {entry.get('source')}/{entry.get('level')}: {entry.get('text')}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            log(f"page exception: {details.get('exception', {}).get('description') or details.get('text')}")
    return on_event


def page_target(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=5) as reply:
        targets = json.load(reply)
    pages = [t for t in targets if t.get("type") == "page" and t.get("webSocketDebuggerUrl")]
    if not pages:
        raise Failure(f"no page target among {len(targets)} DevTools targets")
    return pages[0]["webSocketDebuggerUrl"]


@contextlib.asynccontextmanager
async def opened_page(url, verbose=False):
    """A headless Chromium with its page at `url` (Page domain enabled), for the scripts
    that only read a page (benchmarks): yields (browser, devtools); Chromium is stopped
    and its profile removed on the way out."""
    browser = Chromium(verbose)
    try:
        browser.start()
        port = await browser.devtools_port(30)
        async with websockets.connect(page_target(port), max_size=None) as socket:
            devtools = DevTools(socket, console_printer(verbose))
            await devtools.call("Page.enable")
            await devtools.call("Page.navigate", {"url": url})
            yield browser, devtools
    finally:
        browser.stop()


# ---------------------------------------------------------------- SDP


def video_section(sdp):
    lines, inside = [], False
    for line in (sdp or "").splitlines():
        if line.startswith("m="):
            inside = line.startswith("m=video")
        if inside:
            lines.append(line)
    return lines


def video_payloads(section):
    """The video m-line's payload types that are codecs, not RTX/RED/FEC repair."""
    types = []
    for line in section:
        match = re.match(r"a=rtpmap:(\d+) ([^/]+)/", line)
        if match and match.group(2).lower() not in ("rtx", "red", "ulpfec", "flexfec-03"):
            types.append(match.group(1))
    return types


def rtcp_fb(section, payloads):
    return [line for line in section
            if line.startswith("a=rtcp-fb:") and line[len("a=rtcp-fb:"):].split(" ", 1)[0] in payloads + ["*"]]


def describe_sdp(offer, answer):
    offer_video, answer_video = video_section(offer), video_section(answer)
    answer_payloads = video_payloads(answer_video)
    answer_fb = rtcp_fb(answer_video, answer_payloads)
    extmap = lambda section: [l.split(" ", 1)[1] for l in section if l.startswith("a=extmap:") and " " in l]
    return {
        "remb_negotiated": any("goog-remb" in line for line in answer_fb),
        "transport_cc_negotiated": any("transport-cc" in line for line in answer_fb)
                                   and any("transport-wide-cc" in uri for uri in extmap(answer_video)),
        "answer_rtcp_fb": answer_fb,
        "offer_rtcp_fb": rtcp_fb(offer_video, video_payloads(offer_video)),
        "answer_codecs": [l.split(" ", 1)[1] for l in answer_video
                          if l.startswith("a=rtpmap:") and l.split(":", 1)[1].split(" ")[0] in answer_payloads],
        "answer_extmaps": extmap(answer_video),
        "offer_extmaps": extmap(offer_video),
    }


# ---------------------------------------------------------------- samples


def candidate_text(candidate):
    if not candidate:
        return None
    text = f"{candidate.get('candidateType')} {candidate.get('address')}:{candidate.get('port')}"
    if candidate.get("protocol"):
        text += f" {candidate['protocol']}"
    if candidate.get("relayProtocol"):
        text += f" (relay over {candidate['relayProtocol']})"
    return text


class Samples:
    """Turns the page's raw statistics into the output lines (rates from deltas)."""

    def __init__(self):
        self.previous = None
        self.last = None
        self.lines = 0
        self.max_fps = 0.0

    def line(self, raw, first_frame_at, connected_at):
        inbound = raw.get("inbound") or {}
        previous = (self.previous or {}).get("inbound") or {}
        seconds = ((raw["timestamp"] - self.previous["timestamp"]) / 1000.0) if self.previous else 0.0
        self.previous = raw

        def delta(field):
            if field not in inbound or field not in previous:
                return None
            return inbound[field] - previous[field]

        def rate(field, scale=1.0):
            d = delta(field)
            return None if d is None or seconds <= 0 else round(d * scale / seconds, 1)

        if first_frame_at is not None:
            since, origin = "first_frame", first_frame_at
        else:
            since, origin = "connect", connected_at if connected_at is not None else raw["timestamp"]
        fps = inbound.get("framesPerSecond")
        if fps is None:
            fps = rate("framesDecoded")
        buffered, emitted = delta("jitterBufferDelay"), delta("jitterBufferEmittedCount")
        pair = raw.get("pair") or {}
        rtt = pair.get("currentRoundTripTime")
        if rtt is None:
            rtt = raw.get("remoteOutboundRtt")
        wire = None
        if delta("bytesReceived") is not None and delta("headerBytesReceived") is not None and seconds > 0:
            wire = round((delta("bytesReceived") + delta("headerBytesReceived")) * 8 / 1000 / seconds, 1)
        line = {
            "t": round((raw["timestamp"] - origin) / 1000.0, 2),
            "since": since,
            "inbound_kbps": rate("bytesReceived", 8 / 1000),
            "wire_kbps": wire,
            "fps": None if fps is None else round(fps, 1),
            "frames_decoded": inbound.get("framesDecoded", 0),
            "packets_lost": inbound.get("packetsLost"),
            "nack_count": inbound.get("nackCount"),
            "pli_count": inbound.get("pliCount"),
            "freeze_count": inbound.get("freezeCount"),
            "total_freezes_duration": inbound.get("totalFreezesDuration"),
            "jitter_buffer_delay_ms": round(buffered / emitted * 1000, 1) if buffered is not None and emitted else None,
            "rtt_ms": None if rtt is None else round(rtt * 1000, 1),
            "selected_pair": {"local": candidate_text(pair.get("local")), "remote": candidate_text(pair.get("remote"))}
                             if pair else None,
            "size": f"{inbound['frameWidth']}x{inbound['frameHeight']}" if "frameWidth" in inbound else None,
            "connection": raw.get("connectionState"),
        }
        if line["since"] == "first_frame" and line["fps"]:
            self.max_fps = max(self.max_fps, line["fps"])
        self.last = line
        self.lines += 1
        return line


# ---------------------------------------------------------------- the run


def page_url(args):
    query = {"signaling": args.signaling, "room": args.room}
    if args.token is not None:
        query["token"] = args.token
    if args.turn:
        query["turn"] = args.turn
        if args.turn_user is not None:
            query["turnUser"] = args.turn_user
        if args.turn_password is not None:
            query["turnPassword"] = args.turn_password
    if args.relay_only:
        query["relayOnly"] = "1"
    return "file://" + urllib.parse.quote(PAGE) + "?" + urllib.parse.urlencode(query)


async def drive(args, chromium, result):
    chromium.start()
    port = await chromium.devtools_port(30)
    log(f"DevTools on 127.0.0.1:{port}")
    target = page_target(port)
    async with websockets.connect(target, max_size=None, open_timeout=15, ping_interval=None) as socket:
        devtools = DevTools(socket, console_printer(args.verbose))
        result["devtools"] = devtools
        await devtools.call("Runtime.enable")
        await devtools.call("Log.enable")
        await devtools.call("Page.enable")
        url = page_url(args)
        log(f"opening {PAGE} (signaling {args.signaling}, room {args.room}"
            f"{', relay only via ' + args.turn if args.relay_only else ''})")
        navigation = await devtools.call("Page.navigate", {"url": url})
        if navigation.get("errorText"):
            raise Failure(f"cannot open the page: {navigation['errorText']}")
        for _ in range(100):
            if await devtools.evaluate("typeof window.posecastDrain === 'function'"):
                break
            await asyncio.sleep(0.1)
        else:
            raise Failure("the page did not define posecastDrain within 10 s")

        samples = Samples()
        result["samples"] = samples
        described = False
        while True:
            state = await devtools.evaluate("window.posecastDrain()")
            result["state"] = state
            for event in state.get("events", []):
                log(f"page: {event['text']}")
            if state.get("haveAnswer") and not described:
                descriptions = await devtools.evaluate("window.posecastDescriptions()")
                result["sdp"] = describe_sdp(descriptions["offer"], descriptions["answer"])
                if args.sdp_out:
                    with open(args.sdp_out, "w") as file:
                        json.dump(descriptions, file, indent=1)
                log(f"answer video rtcp-fb: {result['sdp']['answer_rtcp_fb']}")
                described = True
            for raw in state.get("samples", []):
                line = samples.line(raw, state.get("firstFrameAt"), state.get("connectedAt"))
                if state.get("connectedAt") is not None or state.get("firstFrameAt") is not None:
                    print(json.dumps(line), flush=True)   # nothing flows before the connection: no line
            if state.get("failure"):
                raise Failure(state["failure"])
            last = samples.last
            if last and last["since"] == "first_frame" and last["t"] >= args.duration:
                result["completed"] = True
                return
            await asyncio.sleep(0.25)


async def stop_page(result):
    """Best effort: the page ends its session (endSession) and reports its last sample."""
    devtools = result.get("devtools")
    if devtools is None or devtools.closed:
        return
    try:
        state = await devtools.evaluate("window.posecastStop()", timeout=3)
    except Exception as error:
        log(f"could not stop the page cleanly: {error}")
        return
    samples = result.get("samples")
    if samples and state:
        for event in state.get("events", []):
            log(f"page: {event['text']}")
        result["state"] = dict(result.get("state") or {}, **{k: v for k, v in state.items() if k not in ("events", "samples")})


async def run(args, chromium, result):
    # Ctrl-C, SIGTERM and SIGHUP cancel the run, so the page can still end its session
    # before Chromium is killed (main's finally does that on every path).
    loop, task, received = asyncio.get_running_loop(), asyncio.current_task(), []

    def interrupt(number):
        received.append(signal.Signals(number).name)
        task.cancel()

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(number, interrupt, number)
    try:
        await asyncio.wait_for(drive(args, chromium, result), args.timeout)
    except asyncio.TimeoutError:
        result["reasons"].append(f"timeout: the run did not finish within {args.timeout:.0f} s")
    except asyncio.CancelledError:
        if not received:
            raise
        result["reasons"].append(f"interrupted ({received[0]})")
    except Failure as error:
        result["reasons"].append(str(error))
    finally:
        await stop_page(result)


def summary(args, result):
    state = result.get("state") or {}
    samples = result.get("samples")
    last = samples.last if samples else None
    frames = (last or {}).get("frames_decoded") or 0
    reasons = list(result["reasons"])
    if not result.get("completed") and not reasons:
        reasons.append("stopped before the sampling period ended")
    if state.get("connectedAt") is None and state and not state.get("haveAnswer"):
        reasons.append(f"never connected: no session with a publisher (page phase {state.get('phase')}, "
                       f"publisher {state.get('producer')})")
    elif state.get("connectedAt") is None and state:
        reasons.append(f"never connected (ICE {state.get('iceConnectionState')}, connection "
                       f"{state.get('connectionState')}; local candidates {state.get('localCandidates')}, "
                       f"{state.get('remoteCandidates')} remote; candidate errors {state.get('candidateErrors')})")
    if frames < args.min_frames:
        reasons.append(f"only {frames} frames decoded (wanted at least {args.min_frames})")
    sdp = result.get("sdp") or {}
    out = {
        "summary": True,
        "ok": not reasons,
        "frames_decoded": frames,
        "duration_s": last["t"] if last and last["since"] == "first_frame" else 0.0,
        "reasons": reasons,
        "remb_negotiated": sdp.get("remb_negotiated"),
        "answer_rtcp_fb": sdp.get("answer_rtcp_fb"),
        "transport_cc_negotiated": sdp.get("transport_cc_negotiated"),
        "offer_rtcp_fb": sdp.get("offer_rtcp_fb"),
        "answer_codecs": sdp.get("answer_codecs"),
        "answer_extmaps": sdp.get("answer_extmaps"),
        "offer_extmaps": sdp.get("offer_extmaps"),
        "first_frame_size": state.get("firstFrameSize"),
        "max_fps": samples.max_fps if samples else None,
        "selected_pair": (last or {}).get("selected_pair"),
        "data_channel": state.get("dataChannel"),
        "local_candidates": state.get("localCandidates"),
        "seconds": round(time.monotonic() - START, 2),
    }
    if last:
        for field in ("packets_lost", "nack_count", "pli_count", "freeze_count", "total_freezes_duration"):
            out[field] = last.get(field)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signaling", required=True, help="signaling server URL, ws://HOST:PORT/")
    parser.add_argument("--room", default="default")
    parser.add_argument("--token", default=None)
    parser.add_argument("--duration", type=float, default=20,
                        help="seconds to sample after the first decoded frame (default 20)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="limit for the whole run, seconds (default: duration + 45)")
    parser.add_argument("--min-frames", type=int, default=30, help="decoded frames needed for ok (default 30)")
    parser.add_argument("--turn", default=None, help="TURN server for Chromium, turn:HOST:PORT?transport=udp")
    parser.add_argument("--turn-user", default=None)
    parser.add_argument("--turn-password", default=None)
    parser.add_argument("--relay-only", action="store_true", help="iceTransportPolicy relay (needs --turn)")
    parser.add_argument("--sdp-out", default=None, metavar="FILE",
                        help="write the offer and Chromium's answer to FILE as JSON {offer, answer}")
    parser.add_argument("--verbose", action="store_true", help="Chromium console and log messages on stderr")
    args = parser.parse_args()
    if args.relay_only and not args.turn:
        parser.error("--relay-only needs --turn")
    if args.timeout is None:
        args.timeout = args.duration + 45
    if not os.path.exists(CHROMIUM):
        print(json.dumps({"summary": True, "ok": False, "reasons": [f"{CHROMIUM} is not installed "
                                                                    "(apt-get install chromium)"]}), flush=True)
        sys.exit(2)

    def terminate(number, _frame):
        raise Interrupted(signal.Signals(number).name)

    # Outside the event loop (start-up): an exception, so the finally below still runs.
    # SIGINT explicitly too: a shell's background job inherits it ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGHUP, terminate)

    result = {"reasons": []}
    chromium = Chromium(args.verbose)
    try:
        asyncio.run(run(args, chromium, result))
    except KeyboardInterrupt:
        result["reasons"].append("interrupted (SIGINT)")
    except Interrupted as interruption:
        result["reasons"].append(f"interrupted ({interruption})")
    except Exception as error:
        result["reasons"].append(f"{type(error).__name__}: {error}")
    finally:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)   # the clean-up itself is not interrupted
        chromium.stop()
    out = summary(args, result)
    print(json.dumps(out), flush=True)
    log(f"{'ok' if out['ok'] else 'FAILED'}: {out['frames_decoded']} frames in {out['duration_s']} s"
        + ("" if out["ok"] else f"; {'; '.join(out['reasons'])}"))
    sys.exit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
