"""Congestion control on a stepped link (issue 17): the Python half of scripts/bench-network.

For each mode (adapt: congestion control on, the default; fullsize: the same without the
resolution step, --max-downscale 1; fixed: --disable-adapt-bitrate)
runs posecast-signaling, posecast-publisher (synthetic camera, --link with the first
step) and one headless posecast-subscriber (--frame-log), changes the link on the
publisher's stdin (`link SPEC`) at each step of the schedule, counted from the
subscriber's first shown frame, and reads:
  * the encoded bitrate the publisher sends (its status `kbps`, once a second) and, with
    congestion control, its estimate (`congestion` events);
  * per shown frame (the subscriber's frame log): capture → shown latency, whether it
    carried its own pose, the gaps between shown frames (a freeze: a gap over 1 s).
Prints one JSON line per mode and second ({"mode","t","link","sent_kbps","estimate_kbps",
"encoded","fps","latency_ms_p50","latency_ms_p95","pose_pct"}), one per mode and step (the same,
over the step, after its first `--settle` seconds) and a summary line; writes
bench-network.png (bitrate, latency and fps over time, both modes)."""
import argparse, json, os, sys, tempfile, time

sys.path.insert(0, os.path.dirname(__file__))
from procs import Proc, ProcessGroup, frame_log_has_frame, load_jsonl, wait_until
from stats import percentile, rnd
from plots import pyplot


def parse_schedule(text):
    """'0:rate=3000,loss=2;20:rate=600' → [(0.0, 'rate=3000,loss=2'), (20.0, 'rate=600')]."""
    steps = []
    for part in text.split(";"):
        at, spec = part.split(":", 1)
        steps.append((float(at), spec))
    return sorted(steps)


def run_mode(a, url, mode, outdir):
    schedule = parse_schedule(a.schedule)
    pub_args = [os.path.join(a.bin, "posecast-publisher"), "--source", "synthetic", "--json",
                "--signaling", url, "--link", schedule[0][1], "--bitrate", str(a.bitrate),
                "--frame-log", os.path.join(outdir, f"{mode}-sent.jsonl")]
    if mode == "fixed":
        pub_args.append("--disable-adapt-bitrate")
    elif mode == "fullsize":
        pub_args += ["--max-downscale", "1"]
    elif mode != "adapt":
        raise SystemExit(f"bench-network: unknown mode {mode} (adapt, fullsize, fixed)")
    publisher = Proc(f"{mode}-publisher", pub_args, outdir, stdin=True)
    frame_log = os.path.join(outdir, f"{mode}-frames.jsonl")
    subscriber = Proc(f"{mode}-subscriber", [os.path.join(a.bin, "posecast-subscriber"), "--headless", "--json",
                                              "--signaling", url, "--frame-log", frame_log,
                                              *(["--jitter-latency", str(a.jitter_latency)] if a.jitter_latency else [])],
                      outdir, stdin=True)
    try:
        # Without congestion control the first keyframe may never arrive whole on a slow
        # first step: start the clock at the connection then.
        wait_until(lambda: frame_log_has_frame(frame_log) or subscriber.events("connected"), 60, f"{mode}: a connection")
        start = time.time_ns()
        for at, spec in schedule:
            delay = start / 1e9 + at - time.time()
            if delay > 0:
                time.sleep(delay)
            publisher.send(f"link {spec}")
        delay = start / 1e9 + a.duration - time.time()
        if delay > 0:
            time.sleep(delay)
    finally:
        subscriber.stop("quit")
        publisher.stop()
    return start, publisher, load_jsonl(frame_log)


def seconds_table(mode, start, publisher, frames, a):
    schedule = parse_schedule(a.schedule)
    link_at = lambda t: [s for at, s in schedule if at <= t][-1]
    sent, width = {}, {}
    for t, o in publisher.events("status"):
        sec = int((t - start) // 1_000_000_000)
        if "kbps" in o:
            sent[sec] = o["kbps"]
        if "encoded_width" in o:
            width[sec] = f"{o['encoded_width']}x{o['encoded_height']}"
    estimate = {}
    for t, o in publisher.events("congestion"):
        estimate[int((t - start) // 1_000_000_000)] = o.get("estimateKbps")
    by_sec = {}
    shown_times = []
    for f in frames:
        shown = f.get("shownNs")
        if shown is None:
            continue
        # shownNs is the wall clock of the subscriber; start is this script's wall clock.
        sec = int((shown - start) // 1_000_000_000)
        by_sec.setdefault(sec, []).append(f)
        shown_times.append(shown)
    rows = []
    for sec in range(0, int(a.duration)):
        fs = by_sec.get(sec, [])
        lat = [f["latencyMs"] for f in fs if f.get("latencyMs") is not None]
        rows.append({"mode": mode, "t": sec, "link": link_at(sec), "sent_kbps": sent.get(sec),
                     "estimate_kbps": estimate.get(sec), "encoded": width.get(sec), "fps": len(fs),
                     "latency_ms_p50": percentile(lat, 50, 1) if lat else None,
                     "latency_ms_p95": percentile(lat, 95, 1) if lat else None,
                     "pose_pct": rnd(100 * sum(1 for f in fs if f.get("frameId") is not None) / len(fs)) if fs else None})
    shown_times.sort()
    freezes = [(b - a_) / 1e6 for a_, b in zip(shown_times, shown_times[1:]) if b - a_ > 1_000_000_000]
    return rows, freezes


def step_summaries(rows, freezes_all, a):
    schedule = parse_schedule(a.schedule)
    out = []
    bounds = [at for at, _ in schedule] + [a.duration]
    for i, (at, spec) in enumerate(schedule):
        sel = [r for r in rows if at + a.settle <= r["t"] < bounds[i + 1]]
        sent = [r["sent_kbps"] for r in sel if r["sent_kbps"] is not None]
        lat95 = [r["latency_ms_p95"] for r in sel if r["latency_ms_p95"] is not None]
        out.append({"step": i, "from_s": at, "link": spec, "settled_after_s": a.settle,
                    "sent_kbps_mean": rnd(sum(sent) / len(sent), 0) if sent else None,
                    "fps_mean": rnd(sum(r["fps"] for r in sel) / len(sel), 1) if sel else None,
                    "fps_min": min(r["fps"] for r in sel) if sel else None,
                    "encoded_sizes": sorted({r["encoded"] for r in sel if r["encoded"]}),
                    "latency_ms_p95_median": percentile(lat95, 50, 1) if lat95 else None,
                    "seconds_without_frames": sum(1 for r in sel if r["fps"] == 0)})
    return out


def plot(results, a):
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    for mode, (rows, _) in results.items():
        t = [r["t"] for r in rows]
        axes[0].plot(t, [r["sent_kbps"] for r in rows], label=f"{mode}: sent")
        if mode == "adapt":
            axes[0].plot(t, [r["estimate_kbps"] for r in rows], "--", label="adapt: estimate")
        axes[1].plot(t, [r["latency_ms_p95"] for r in rows], label=mode)
        axes[2].plot(t, [r["fps"] for r in rows], label=mode)
    caps = []
    for at, spec in parse_schedule(a.schedule):
        rate = dict(p.split("=") for p in spec.split(",")).get("rate")
        caps.append((at, float(rate) if rate else None))
    xs, ys = [], []
    for i, (at, rate) in enumerate(caps):
        end = caps[i + 1][0] if i + 1 < len(caps) else a.duration
        xs += [at, end]; ys += [rate, rate]
    axes[0].plot(xs, ys, "k:", label="link capacity")
    axes[0].set_ylabel("kbit/s"); axes[0].legend(loc="upper right")
    axes[1].set_ylabel("latency p95 (ms)"); axes[1].set_yscale("log"); axes[1].legend(loc="upper right")
    axes[2].set_ylabel("frames shown / s"); axes[2].set_xlabel("s"); axes[2].legend(loc="lower right")
    fig.suptitle(f"bench-network: {a.schedule}")
    fig.tight_layout()
    fig.savefig(a.plot)
    print(f"bench-network: wrote {a.plot}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bin", required=True)
    p.add_argument("--schedule", default="0:rate=3000,loss=2,delay=80;20:rate=600,loss=2,delay=80;40:rate=3000,loss=2,delay=80",
                   help="AT:LINK;AT:LINK… (seconds from the first frame; LINK as --link)")
    p.add_argument("--duration", type=float, default=60)
    p.add_argument("--settle", type=float, default=5, help="seconds of each step left out of its summary")
    p.add_argument("--bitrate", type=int, default=2000)
    p.add_argument("--modes", default="adapt,fixed", help="of adapt, fullsize (adapt without the resolution step), fixed")
    p.add_argument("--jitter-latency", type=int, default=None,
                   help="the subscriber's jitter buffer in ms (default: its tuned 50 ms; a retransmission over an "
                        "80 ms link needs more)")
    p.add_argument("--plot", default="bench-network.png")
    p.add_argument("--out", default=None, help="directory for the processes' logs (default: a temporary one)")
    a = p.parse_args()
    outdir = a.out or tempfile.mkdtemp(prefix="bench-network-")
    os.makedirs(outdir, exist_ok=True)
    group = ProcessGroup(a.bin, outdir)
    results = {}
    try:
        url = group.start_signaling()
        for mode in a.modes.split(","):
            start, publisher, frames = run_mode(a, url, mode, outdir)
            rows, freezes = seconds_table(mode, start, publisher, frames, a)
            for r in rows:
                print(json.dumps(r), flush=True)
            for s in step_summaries(rows, freezes, a):
                print(json.dumps({"mode": mode, **s}), flush=True)
            results[mode] = (rows, freezes)
            print(json.dumps({"mode": mode, "frames_shown": len(frames),
                              "pose_pct": rnd(100 * sum(1 for f in frames if f.get("frameId") is not None) / len(frames)) if frames else None,
                              "freezes_over_1s": len(freezes), "longest_freeze_ms": rnd(max(freezes), 0) if freezes else 0}), flush=True)
    finally:
        group.stop_all()
    print(f"bench-network: logs in {outdir}", file=sys.stderr)
    plot(results, a)


if __name__ == "__main__":
    main()
