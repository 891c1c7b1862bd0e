#!/usr/bin/env python3
"""The Chromium anchor of scripts/bench-loopback --anchors (issue 18): Debian's Chromium
headless, one page with two RTCPeerConnections on loopback (anchor_chromium.html says
how frames are sent and how latency is taken), fed the synthetic camera's own frames
from a raw I420 file through a local HTTP server on 127.0.0.1.

CPU: every process of Chromium's process group (browser, renderer, GPU, network,
utility) from /proc over the measured window, in % of one core: both peers and the
page's own I420 → RGB conversion of the source frames (as PoseCast's publisher CPU
includes rendering the synthetic camera).

Prints one JSON line {"anchor": "chromium", "latency_ms_p50/p95/p99" (decoded),
"presented_ms_p50/p95/p99", "fps", "cpu_pct", "codec", ...}. Needs websockets
(scripts/interop-setup) and /usr/bin/chromium.

Usage: anchor_chromium.py --frames-file orbit.i420 [--width 640 --height 480 --fps 30
         --codec vp8 --bitrate 2000 --seconds 15 --warmup 3]
"""
import argparse
import asyncio
import functools
import http.server
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
import chromium_subscriber as chromium   # noqa: E402
import procs   # noqa: E402
from stats import percentile as _percentile   # noqa: E402


def group_ticks(pgid):
    """CPU ticks of every process in the process group (Chromium's helpers included)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.getpgid(int(name)) == pgid:
                total += procs.cpu_ticks(int(name))
        except (ProcessLookupError, PermissionError, FileNotFoundError, OSError):
            continue
    return total


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


async def run(args):
    page_dir = HERE
    # One server for the page and the frames: the page's folder, the frames file linked in.
    link = os.path.join(page_dir, ".anchor-frames.i420")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.path.abspath(args.frames_file), link)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=page_dir))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = (f"http://127.0.0.1:{server.server_port}/anchor_chromium.html?frames=.anchor-frames.i420"
           f"&width={args.width}&height={args.height}&fps={args.fps}&codec={args.codec}&bitrate={args.bitrate}")
    try:
        async with chromium.opened_page(url) as (browser, devtools):
            await asyncio.sleep(args.warmup)
            state = await devtools.evaluate("window.anchorResult()")
            if state["phase"] != "running":
                raise SystemExit(f"anchor_chromium: the page is {state['phase']}: {state['error']}")
            await devtools.evaluate("window.anchorStartMeasuring()")
            first = await devtools.evaluate("window.anchorSample()")
            ticks, started = group_ticks(browser.process.pid), time.monotonic()
            await asyncio.sleep(args.seconds)
            result = await devtools.evaluate("window.anchorResult()")
            last = await devtools.evaluate("window.anchorSample()")
            seconds = time.monotonic() - started
            cpu = (group_ticks(browser.process.pid) - ticks) / procs.CLK_TCK
    finally:
        server.shutdown()
        os.unlink(link)
    decoded, presented = result["decoded"], result["presented"]
    percentile = lambda values, p: _percentile(values, p, digits=1)   # noqa: E731

    def mean_ms(total, count):
        d = last[count] - first[count]
        return round((last[total] - first[total]) / d * 1000, 2) if d > 0 else None
    return {
        "anchor": "chromium", "codec": result.get("codec"), "encoder": result.get("encoder"),
        "decoder": last.get("decoderImplementation"), "received_size": result.get("receivedSize"),
        "width": args.width, "height": args.height, "frames": result["frames"],
        "fps": round(result["frames"] / seconds, 1),
        "latency_ms_p50": percentile(presented, 50), "latency_ms_p95": percentile(presented, 95),
        "latency_ms_p99": percentile(presented, 99),
        "received_plus_decode_ms_p50": percentile(decoded, 50), "received_plus_decode_ms_p95": percentile(decoded, 95),
        "stages_ms_mean": {"encode": mean_ms("totalEncodeTime", "framesEncoded"),
                           "packet_send_delay": mean_ms("totalPacketSendDelay", "packetsSent"),
                           "jitter_buffer": mean_ms("jitterBufferDelay", "jitterBufferEmittedCount"),
                           "first_packet_to_decoded": mean_ms("totalProcessingDelay", "framesDecoded"),
                           "decode": mean_ms("totalDecodeTime", "framesDecoded")},
        "cpu_pct": round(100 * cpu / seconds, 1), "lost_stamps": result["lostStamps"],
        "measured": "canvas frame requested → presented (presentationTime, 60 Hz compositor), one page; "
                    "received_plus_decode: last packet in + decoder time (no jitter-buffer wait), a lower bound",
        "latencies_ms": [round(v, 2) for v in presented],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames-file", required=True)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--codec", default="vp8", choices=["vp8", "h264"])
    parser.add_argument("--bitrate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--warmup", type=float, default=3)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))), flush=True)


if __name__ == "__main__":
    sys.exit(main())
