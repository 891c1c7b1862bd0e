#!/usr/bin/env python3
"""The aiortc anchor of scripts/bench-loopback --anchors (issue 18): two aiortc peers in
one process on loopback, VP8, sending the synthetic camera's own frames (a raw I420
file from `posecast-scene frames`, the orbit at 1°/frame) at the given rate.

How latency is measured: each frame's index is painted into its top-left corner as 32
blocks of 8×8 luma (black 0, white 1; `stamp`) before it is handed to aiortc, and its
send instant is kept. The receiving track's frames are read back (`read_stamp`) the
moment aiortc hands them over, decoded: latency = that instant − the send instant, both
`time.monotonic_ns()` in one process. So it spans aiortc's encoder, packetiser, its
jitter buffer and its decoder, the same span as PoseCast's capture → decoded (the
publisher's capture is the moment the frame exists, its decode end the moment the
subscriber has the picture); neither counts a display.

CPU: the process's own CPU time over the measured window (both peers), in % of one
core. Prints one JSON line: {"anchor": "aiortc", "frames", "fps", "latency_ms_p50",
"p95", "p99", "cpu_pct", "lost_stamps", ...}. Needs aiortc and av (scripts/interop-setup).

Usage: python3 anchor_aiortc.py --frames-file orbit.i420 --width 640 --height 480
         [--fps 30] [--seconds 15] [--warmup 3]
"""
import argparse
import asyncio
import fractions
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import percentile   # noqa: E402
from aiortc import RTCPeerConnection, VideoStreamTrack
from aiortc.mediastreams import MediaStreamError
import av

BLOCK = 8
BITS = 32


def stamp(y_plane, width, index):
    """Writes `index` as BITS blocks of BLOCK×BLOCK luma in the first rows."""
    plane = bytearray(y_plane)
    for bit in range(BITS):
        value = 235 if (index >> bit) & 1 else 16
        x0 = bit * BLOCK
        for row in range(BLOCK):
            start = row * width + x0
            plane[start:start + BLOCK] = bytes([value]) * BLOCK
    return bytes(plane)


def read_stamp(y_plane, stride):
    """The index read back from the blocks' centres (threshold at mid-grey)."""
    index = 0
    for bit in range(BITS):
        centre = (BLOCK // 2) * stride + bit * BLOCK + BLOCK // 2
        if y_plane[centre] > 128:
            index |= 1 << bit
    return index


class FileTrack(VideoStreamTrack):
    """The raw I420 frames, looped, each stamped with its send index, at `fps`."""

    def __init__(self, path, width, height, fps, sent):
        super().__init__()
        size = width * height * 3 // 2
        with open(path, "rb") as file:
            data = file.read()
        self.frames = [data[i:i + size] for i in range(0, len(data) - size + 1, size)]
        if not self.frames:
            raise SystemExit(f"anchor_aiortc: no {width}x{height} I420 frame in {path}")
        self.width, self.height, self.fps, self.sent = width, height, fps, sent
        self.index = 0
        self.start = None

    async def recv(self):
        # Paced by the wall clock at `fps` (aiortc's own next_timestamp paces at 30 only).
        if self.start is None:
            self.start = time.monotonic()
        due = self.start + self.index / self.fps
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        raw = self.frames[self.index % len(self.frames)]
        w, h = self.width, self.height
        frame = av.VideoFrame(w, h, "yuv420p")
        y = stamp(raw[:w * h], w, self.index)
        u, v = raw[w * h:w * h + w * h // 4], raw[w * h + w * h // 4:]
        for plane, data, pw, ph in ((frame.planes[0], y, w, h), (frame.planes[1], u, w // 2, h // 2),
                                    (frame.planes[2], v, w // 2, h // 2)):
            if plane.line_size == pw:
                plane.update(data)
            else:
                padded = bytearray(plane.line_size * ph)
                for row in range(ph):
                    padded[row * plane.line_size:row * plane.line_size + pw] = data[row * pw:(row + 1) * pw]
                plane.update(bytes(padded))
        frame.pts = self.index * (90000 // self.fps)
        frame.time_base = fractions.Fraction(1, 90000)
        self.sent[self.index] = time.monotonic_ns()
        self.index += 1
        return frame


async def run(args):
    sent, latencies, stamps_lost = {}, [], 0
    sender, receiver = RTCPeerConnection(), RTCPeerConnection()
    track = FileTrack(args.frames_file, args.width, args.height, args.fps, sent)
    sender.addTrack(track)
    received = asyncio.get_running_loop().create_future()

    @receiver.on("track")
    def on_track(remote):
        if not received.done():
            received.set_result(remote)

    await sender.setLocalDescription(await sender.createOffer())
    await receiver.setRemoteDescription(sender.localDescription)
    await receiver.setLocalDescription(await receiver.createAnswer())
    await sender.setRemoteDescription(receiver.localDescription)
    remote = await asyncio.wait_for(received, 30)

    window = {"start": None, "end": None, "cpu": None, "frames": 0}
    began = time.monotonic()
    while True:
        try:
            frame = await asyncio.wait_for(remote.recv(), 5)
        except (MediaStreamError, asyncio.TimeoutError):
            break
        now_ns = time.monotonic_ns()
        elapsed = time.monotonic() - began
        if elapsed < args.warmup:
            continue
        if window["start"] is None:
            window["start"], window["cpu"] = time.monotonic(), sum(os.times()[:2])
        plane = frame.planes[0]
        index = read_stamp(bytes(plane), plane.line_size)
        if index in sent:
            latencies.append((now_ns - sent.pop(index)) / 1e6)
        else:
            stamps_lost += 1
        window["frames"] += 1
        if elapsed >= args.warmup + args.seconds:
            break
    window["end"] = time.monotonic()
    cpu = sum(os.times()[:2]) - (window["cpu"] or 0)
    await sender.close()
    await receiver.close()
    seconds = max(window["end"] - (window["start"] or window["end"]), 1e-6)
    return {
        "anchor": "aiortc", "version": __import__("aiortc").__version__, "codec": "vp8",
        "width": args.width, "height": args.height, "frames": window["frames"],
        "fps": round(window["frames"] / seconds, 1),
        "latency_ms_p50": percentile(latencies, 50, digits=1),
        "latency_ms_p95": percentile(latencies, 95, digits=1),
        "latency_ms_p99": percentile(latencies, 99, digits=1),
        "cpu_pct": round(100 * cpu / seconds, 1), "lost_stamps": stamps_lost,
        "measured": "capture (frame handed to aiortc) → decoded frame handed to the receiving track, one process",
        "latencies_ms": [round(v, 2) for v in latencies],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames-file", required=True)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--warmup", type=float, default=3)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))), flush=True)


if __name__ == "__main__":
    sys.exit(main())
