"""scripts/demo: the publisher (synthetic camera, embedded signaling server and console)
and a headless expert tapping the scene's discs while the camera orbits."""
import argparse, json, os, signal, socket, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procs import ProcessGroup   # noqa: E402
from events import EVENT   # noqa: E402

TAP_EVERY = 2.0   # seconds between taps


def port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the server binds: TIME_WAIT is no obstacle
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def discs(bin_dir):
    out = subprocess.run([os.path.join(bin_dir, "posecast-scene"), "features"], capture_output=True, text=True, check=True)
    found = []
    for line in out.stdout.splitlines():
        name, _, rest = line.split(None, 2)
        if name.startswith("disc."):
            found.append((name[len("disc."):], [float(v) for v in rest.strip("() ").split(",")]))
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--out", default="out/demo")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    port = args.port
    if not port_free(port):
        print(f"demo: port {port} is taken; using a free one", file=sys.stderr)
        port = 0
    targets = discs(args.bin)
    group = ProcessGroup(args.bin, os.path.join(args.out, "logs"))
    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        group.start("publisher", ["posecast-publisher", "--source", "synthetic", "--pose", "orbit",
                                  "--listen", f"127.0.0.1:{port}", "--json"])
        url = group.wait_event("publisher", lambda e: e.get("event") == EVENT.listening, 30, "its signaling server")["url"]
        console = url.replace("ws://", "http://")
        print(f"demo: publisher on the synthetic camera, orbiting at 30°/s; signaling {url}")
        print(f"demo: open the console in a browser: {console}")
        # The discs lie on the ground: each tap is placed on the ground plane from the pose
        # of the frame on screen (with the default `auto`, a disc hidden behind a sphere
        # at that moment would be placed on the sphere, where the publisher's depth is).
        expert = group.start("expert", ["posecast-subscriber", "--headless", "--json", "--signaling", url,
                                        "--snapshots", "--placement", "ground"], stdin=subprocess.PIPE)
        group.wait_event("expert", lambda e: e.get("event") == EVENT.controlOpen, 40, "its control channel")
        print("demo: the expert is connected; tapping a disc every 2 s where the frame on screen shows it "
              "(placed on the ground plane with that frame's pose)")
        started, next_tap, taps_sent = time.monotonic(), time.monotonic() + 1.0, 0
        placements, refusals, statuses, publisher_status, snapshot = [], [], [], {}, None
        # The annotations the video draws hidden (behind something nearer), as last told,
        # and as they were when the snapshot was written.
        hidden = {"now": [], "at_snapshot": None}
        labels = {}
        snapshot_path = os.path.abspath(os.path.join(args.out, "expert-view.png"))
        snapshot_asked = False

        def send(line):
            expert.stdin.write((line + "\n").encode())
            expert.stdin.flush()

        def drain():
            nonlocal publisher_status, snapshot
            for e in group.tails["expert"].lines():
                kind = e.get("event")
                if kind == EVENT.placement:
                    placements.append(e)
                    px = e.get("error_px")
                    print(f"  tap {e.get('annotationId')} ({e.get('placement')}): {e['error_cm']:.2f} cm"
                          + (f", {px:.2f} px" if px is not None else "") + " from the disc's centre")
                elif kind == EVENT.commandError:
                    refusals.append(e.get("message"))
                elif kind == EVENT.status:
                    statuses.append(e)
                elif kind == EVENT.snapshot:
                    snapshot = e
                    hidden["at_snapshot"] = list(hidden["now"])
                elif kind == EVENT.annotationVisibility:
                    hidden["now"] = e.get("hidden", [])
                elif kind == EVENT.annotations:
                    labels.update(dict(zip(e.get("ids", []), e.get("labels", []))))
            for e in group.tails["publisher"].lines():
                if e.get("event") == EVENT.status:
                    publisher_status = e

        last_print = 0
        while not stop["now"]:
            now = time.monotonic()
            if args.seconds > 0 and now - started >= args.seconds:
                break
            drain()
            if now >= next_tap and taps_sent < len(targets) * 2:
                name, (x, y, z) = targets[taps_sent % len(targets)]
                send(f"tapworld {x} {y} {z} {name}")
                taps_sent += 1
                next_tap = now + TAP_EVERY
            if not snapshot_asked and len(placements) >= 3:
                send(f"snapshot {snapshot_path}")
                snapshot_asked = True
            if now - last_print >= 1 and statuses:
                s, p = statuses[-1], publisher_status
                print(f"[{now - started:5.1f} s] publisher {p.get('fps', '–')} fps {p.get('kbps', '–')} kbit/s, "
                      f"{p.get('subscribers', '–')} expert(s) | expert {s.get('fps')} fps, latency p50 "
                      f"{s.get('latency_ms_p50')} ms, own pose {s.get('pose_pct')} %, focus {s.get('focus', '–')}", flush=True)
                last_print = now
            if expert.poll() is not None:
                print("demo: the expert exited early (see out/demo/logs/expert.err)", file=sys.stderr)
                break
            time.sleep(0.1)
        if not snapshot_asked:
            send(f"snapshot {snapshot_path}")
        deadline = time.monotonic() + 5
        while snapshot is None and time.monotonic() < deadline and expert.poll() is None:
            drain()
            time.sleep(0.1)
        drain()
    finally:
        group.stop_all()

    latencies = [s["latency_ms_p50"] for s in statuses if s.get("latency_ms_p50") is not None]
    last = statuses[-1] if statuses else {}
    cm = [p["error_cm"] for p in placements]
    px = [p["error_px"] for p in placements if p.get("error_px") is not None]
    summary = {
        "summary": True,
        "seconds": round(time.monotonic() - started, 1) if statuses else 0,
        "latency_ms_p50": round(statistics.median(latencies), 1) if latencies else None,
        "frames": last.get("frames"), "frames_with_own_pose_pct": last.get("pose_pct"),
        "taps": len(placements), "taps_refused": len(refusals),
        "error_cm_median": round(statistics.median(cm), 2) if cm else None, "error_cm_max": round(max(cm), 2) if cm else None,
        "error_px_median": round(statistics.median(px), 2) if px else None, "error_px_max": round(max(px), 2) if px else None,
        "snapshot": snapshot.get("path") if snapshot else None, "console": console,
        "hidden_in_snapshot": [labels.get(i, i) for i in (hidden["at_snapshot"] or [])],
    }
    print("demo summary:")
    print(f"  latency (capture to decoded, p50 of each second's p50): {summary['latency_ms_p50']} ms")
    print(f"  frames with their own pose: {summary['frames_with_own_pose_pct']} % of {summary['frames']}")
    print(f"  taps placed: {len(placements)} (refused while the disc was out of view: {len(refusals)}); "
          f"error median {summary['error_cm_median']} cm / {summary['error_px_median']} px, "
          f"worst {summary['error_cm_max']} cm / {summary['error_px_max']} px")
    print(f"  the expert's view: {summary['snapshot'] or 'not written'}"
          + (f" (drawn hidden, behind something nearer: {', '.join(summary['hidden_in_snapshot'])})"
             if summary["hidden_in_snapshot"] else ""))
    print(f"  console (while it runs: --seconds 0): {console}")
    print(json.dumps(summary), flush=True)
    return 0 if placements and snapshot else 1


if __name__ == "__main__":
    sys.exit(main())
