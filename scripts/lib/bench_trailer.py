"""The pose trailer's cost (scripts/bench-trailer): bytes per frame against the header
extension, and CPU per frame to add it (publisher) and strip it (our subscriber,
Chromium's worker), from their own counters over one run."""
import argparse, asyncio, json, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
from procs import ProcessGroup   # noqa: E402
from events import EVENT   # noqa: E402
import plots   # noqa: E402
import chromium_subscriber as chromium   # noqa: E402

EXTENSION_BYTES = 4 + 2 + 58   # extension header, element header, pose (per packet)


async def console_counts(url, seconds):
    """Opens the console in headless Chromium for `seconds`; its worker's counters."""
    async with chromium.opened_page(url) as (_, devtools):
        await asyncio.sleep(seconds)
        return await devtools.evaluate("(() => { const s = posecastConsole.state;"
                                       " return {worker: s.worker, presented: s.presented}; })()")


def last_status(group, name):
    status = None
    for event in group.tails[name].lines():
        if event.get("event") == EVENT.status:
            status = event
    return status


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    out = tempfile.mkdtemp(prefix="posecast-bench-trailer-")
    group = ProcessGroup(args.bin, out)
    try:
        group.start("publisher", ["posecast-publisher", "--source", "synthetic", "--listen", "127.0.0.1:0", "--json",
                                  "--ice-address", "127.0.0.1", "--allow-origin", "null"])   # the Chromium driver's page is a file
        url = group.wait_event("publisher", lambda e: e.get("event") == EVENT.listening, 30, "listening")["url"]
        for name, extra in (("extension", []), ("trailer", ["--pose-transport", "trailer"])):
            # On loopback as the publisher (see docs/NETWORK.md, ICE-TCP).
            group.start(name, ["posecast-subscriber", "--headless", "--json", "--signaling", url, "--role", "viewer",
                               "--ice-address", "127.0.0.1", *extra],
                        stdin=subprocess.PIPE)
        browser = asyncio.run(console_counts(url.replace("ws://", "http://") + "?role=viewer", args.seconds))
        publisher = group.wait_event("publisher", lambda e: e.get("event") == EVENT.status and e.get("trailer_frames"), 5,
                                     "a status with trailer figures")
        time.sleep(1.2)
        publisher = last_status(group, "publisher") or publisher
        trailer_sub = last_status(group, "trailer") or {}
    finally:
        group.stop_all()
    frames = publisher["frames_with_pose"]
    packets_per_frame = publisher["pose_extension_packets"] / max(frames, 1)
    worker = browser["worker"]
    rows = [
        {"measure": "bytes_per_frame", "extension": round(packets_per_frame * EXTENSION_BYTES, 1),
         "trailer": publisher["trailer_bytes_per_frame"], "packets_per_frame": round(packets_per_frame, 2),
         "kbps": publisher["kbps"]},
        {"measure": "add_us_per_frame", "publisher": publisher["trailer_add_us"], "frames": publisher["trailer_frames"]},
        {"measure": "strip_us_per_frame", "subscriber": trailer_sub.get("trailer_strip_us"),
         "subscriber_frames": trailer_sub.get("trailer_frames"),
         "chromium": round(worker["stripNanos"] / max(worker["withTrailer"], 1) / 1000, 1),
         "chromium_frames": worker["withTrailer"], "chromium_malformed": worker["malformed"]},
    ]
    for row in rows:
        print(json.dumps(row), flush=True)
    print(json.dumps({"summary": True, "seconds": args.seconds, "out": out,
                      "presented_with_pose": browser["presented"]}), flush=True)
    plt = plots.pyplot()
    if plt:
        figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
        left.bar(["extension\n(64 B × packets)", "trailer"], [rows[0]["extension"], rows[0]["trailer"]], color=["#888", "#2f8cff"])
        left.set_ylabel("bytes per frame")
        right.bar(["add\n(publisher)", "strip\n(GStreamer)", "strip\n(Chromium)"],
                  [rows[1]["publisher"], rows[2]["subscriber"] or 0, rows[2]["chromium"]], color="#2f8cff")
        right.set_ylabel("µs of CPU per frame")
        figure.suptitle("pose trailer cost")
        figure.tight_layout()
        figure.savefig("bench-trailer.png", dpi=100)


if __name__ == "__main__":
    main()
