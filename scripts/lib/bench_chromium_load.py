"""Chromium as the expert on a busy machine (scripts/bench-chromium-load): for each
number of busy loops and each mode (transport-cc: the publisher estimates the path from
Chromium's transport-wide feedback; remb: --disable-transport-cc, Chromium's own
estimate caps the rate), one run on loopback with no cap: the publisher's allowed and
sent rate, and what Chromium presented (scripts/interop/chromium_subscriber.py)."""
import argparse, json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procs import ProcessGroup   # noqa: E402
from events import EVENT   # noqa: E402
import plots   # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = os.path.join(HERE, "..", "interop", "chromium_subscriber.py")
TARGET = "rate ≥ 1500 kbit/s, 640×480 held, 30 fps presented"


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(args, mode, burners):
    out = os.path.join(args.out, f"{mode}-{burners}")
    group = ProcessGroup(args.bin, out)
    loops = []
    try:
        extra = ["--disable-transport-cc"] if mode == "remb" else []
        group.start("publisher", ["posecast-publisher", "--source", "synthetic", "--listen", "127.0.0.1:0", "--json",
                                  "--ice-address", "127.0.0.1", "--microphone", "none",
                                  "--allow-origin", "null", *extra])   # the Chromium driver's page is a file
        url = group.wait_event("publisher", lambda e: e.get("event") == EVENT.listening, 30, "listening")["url"]
        loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)]
        time.sleep(args.settle)
        before = load()
        started = time.time()
        chromium = subprocess.run([args.python, CHROMIUM, "--signaling", url, "--duration", str(args.seconds),
                                   "--min-frames", "1", "--timeout", str(args.seconds + 60)],
                                  capture_output=True, text=True, timeout=args.seconds + 90)
        after = load()
    finally:
        for p in loops:
            p.kill()
            p.wait()
        group.stop_all()
    rows = []
    for line in chromium.stdout.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    summary = next((r for r in rows if r.get("summary")), None)
    if summary is None:
        raise SystemExit(f"bench-chromium-load: no summary from Chromium ({mode}, {burners} loops); stderr:\n"
                         + chromium.stderr[-2000:])
    samples = [r for r in rows if not r.get("summary") and r.get("since") == "first_frame" and r.get("t", 0) >= args.skip]
    congestion = [e for e in group.tails["publisher"].lines() if e.get("event") == EVENT.congestion]
    # The publisher's second-by-second figures, from the same moment on (one event a second).
    settled = congestion[int(args.skip):]
    estimates = [e["estimateKbps"] for e in settled]
    sent = [e["sentKbps"] for e in settled if e.get("sentKbps") is not None]
    rembs = [e["rembKbps"] for e in settled if e.get("rembKbps") is not None]
    fps = [s["fps"] for s in samples if s.get("fps") is not None]
    sizes = sorted({s["size"] for s in samples if s.get("size")})
    row = {"mode": mode, "burners": burners, "load_before": before, "load_after": after,
           "estimate_kbps_median": statistics.median(estimates) if estimates else None,
           "estimate_kbps_min": min(estimates) if estimates else None,
           "sent_kbps_median": statistics.median(sent) if sent else None,
           "remb_kbps_min": min(rembs) if rembs else None,
           "transport_feedback": congestion[-1].get("transportFeedback") if congestion else None,
           "chromium_fps_mean": round(statistics.mean(fps), 1) if fps else None,
           "sizes": sizes, "freezes": summary.get("freeze_count"), "freeze_s": summary.get("total_freezes_duration"),
           "frames_decoded": summary.get("frames_decoded"), "transport_cc": summary.get("transport_cc_negotiated"),
           "seconds": round(time.time() - started, 1), "target": TARGET}
    row["met"] = bool(estimates and statistics.median(estimates) >= 1500 and sizes == ["640x480"]
                      and fps and statistics.mean(fps) >= 28)
    print(json.dumps(row), flush=True)
    return row, [(i, e["estimateKbps"]) for i, e in enumerate(congestion)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--python", required=True, help="a Python with websockets (scripts/interop-setup)")
    parser.add_argument("--burners", default="0,2,6")
    parser.add_argument("--modes", default="transport-cc,remb")
    parser.add_argument("--seconds", type=float, default=25)
    parser.add_argument("--skip", type=float, default=5, help="seconds after the first frame left out of the figures")
    parser.add_argument("--settle", type=float, default=5, help="seconds the busy loops run before Chromium starts")
    parser.add_argument("--out", default="out/bench-chromium-load")
    args = parser.parse_args()
    if args.seconds <= args.skip:
        args.skip = 0
    os.makedirs(args.out, exist_ok=True)
    runs = []
    for burners in [int(b) for b in args.burners.split(",")]:
        for mode in args.modes.split(","):
            if mode not in ("transport-cc", "remb"):
                raise SystemExit(f"bench-chromium-load: unknown mode {mode!r} (transport-cc, remb)")
            runs.append(run(args, mode, burners))
    plt = plots.pyplot()
    if plt:
        figure, axis = plt.subplots(figsize=(8, 4))
        for row, series in runs:
            axis.plot([t for t, _ in series], [k for _, k in series],
                      label=f"{row['mode']}, {row['burners']} loops (load {row['load_after']})")
        axis.set_xlabel("s since the session's first congestion event")
        axis.set_ylabel("allowed rate, kbit/s")
        axis.set_ylim(0, 2200)
        axis.legend(fontsize=8)
        axis.set_title("Chromium expert on loopback, busy machine")
        figure.tight_layout()
        figure.savefig(os.path.join(args.out, "bench-chromium-load.png"), dpi=110)


if __name__ == "__main__":
    main()
