"""Encoder search (issue 18): the Python half of scripts/bench-encoders.

Runs scripts/lib/bench_loopback.py once per encoder configuration (one subscriber, the
tuned profile, the same synthetic orbit, one at a time) and, with --burners N, again
under N busy-loop processes (the CPU contention that makes libvpx's worker threads
spin: a thread count above 1 must hold there). For each run it prints one JSON line
{"config", "burners", "codec", "encoder_options", "latency_ms_p50/p95/p99",
"encode_ms_p50", "decode_ms_p50", "fps_min", "pub_cpu_pct", "pub_encoder_cpu_pct",
"bitrate_kbps", "psnr_db_p50", "psnr_db_p5", "ssim_p50", "ssim_p5", "pose_pct",
"loadavg_1m"} and writes encoders.png (latency p50 against SSIM p50, one point per run)."""
import argparse, json, multiprocessing, os, subprocess, sys

sys.path.insert(0, os.path.dirname(__file__))
from plots import pyplot

# name: (codec, h264 encoder, encoder options). "x264" (veryfast) is the publisher's
# default, "vp8" the default before issue 18. Not here:
# H.264 in several slices (OpenH264 multi-thread=2 num-slices=2, x264 sliced-threads),
# which our subscriber's rtph264depay → openh264dec chain does not decode (0 frames;
# avdec_h264 does): docs/BENCHMARKS.md.
CONFIGS = {
    "vp8": ("vp8", None, []),
    "vp8-cpu12": ("vp8", None, ["cpu-used=12"]),
    "vp8-cpu14": ("vp8", None, ["cpu-used=14"]),
    "vp8-cpu16": ("vp8", None, ["cpu-used=16"]),
    "vp8-threads2": ("vp8", None, ["threads=2", "token-partitions=2"]),
    "openh264": ("h264", "openh264", []),
    "openh264-medium": ("h264", "openh264", ["complexity=medium"]),
    "openh264-qp36": ("h264", "openh264", ["qp-max=36"]),
    "x264": ("h264", "x264", []),
    "x264-ultrafast": ("h264", "x264", ["speed-preset=ultrafast"]),
    "x264-superfast": ("h264", "x264", ["speed-preset=superfast"]),
}


def burn(stop):
    while not stop.is_set():
        pass


def run(a, name, burners):
    codec, h264, options = CONFIGS[name]
    out = os.path.join(a.out, f"{name}-b{burners}")
    argv = [sys.executable, os.path.join(os.path.dirname(__file__), "bench_loopback.py"), "--bin", a.bin,
            "--out", out, "--subscribers", str(a.subscribers), "--no-baseline", "--seconds", str(a.seconds),
            "--width", str(a.width), "--height", str(a.height), "--codec", codec, "--bitrate", str(a.bitrate),
            "--quality-every", str(a.quality_every)]
    if h264:
        argv += ["--h264-encoder", h264]
    for o in options:
        argv += ["--encoder-option", o]
    stop = multiprocessing.Event()
    procs = [multiprocessing.Process(target=burn, args=(stop,), daemon=True) for _ in range(burners)]
    for p in procs:
        p.start()
    try:
        done = subprocess.run(argv, capture_output=True, text=True)
    finally:
        stop.set()
        for p in procs:
            p.join(2)
    if done.returncode != 0:
        print(f"bench-encoders: {name} (burners {burners}) failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    with open(os.path.join(out, "results.jsonl")) as f:
        r = json.loads(f.readline())
    keys = ("latency_ms_p50", "latency_ms_p95", "latency_ms_p99", "encode_ms_p50", "decode_ms_p50", "fps_min",
            "pub_cpu_pct", "pub_encoder_cpu_pct", "bitrate_kbps", "psnr_db_p50", "psnr_db_p5", "ssim_p50", "ssim_p5",
            "quality_frames", "pose_pct", "loadavg_1m")
    return {"config": name, "burners": burners, "width": a.width, "height": a.height, "subscribers": a.subscribers,
            "codec": codec, "encoder": h264 or "vp8enc", "encoder_options": options, **{k: r.get(k) for k in keys}}


def plot(rows, path, a):
    """Latency p50 against SSIM p50 and p5 (one panel each), a legend entry per run."""
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(13, 6), sharex=True)
    markers = "osD^v<>pPhX*"
    for i, r in enumerate(x for x in rows if x["latency_ms_p50"] is not None and x["ssim_p50"] is not None):
        label = r["config"] + (f" +{r['burners']} burners" if r["burners"] else "")
        color = f"C{i % 10}"
        # Beside busy loops: the same marker, hollow.
        style = dict(marker=markers[i % len(markers)], s=60, label=label, linewidths=1.5,
                     facecolors="none" if r["burners"] else color, edgecolors=color)
        for ax, key in zip(axes, ("ssim_p50", "ssim_p5")):
            ax.scatter(r["latency_ms_p50"], r[key], **style)
    for ax, what in zip(axes, ("median", "5th percentile")):
        ax.set_xscale("log")
        ax.set_xlabel("glass-to-glass latency p50 (ms, log scale)")
        ax.set_ylabel(f"SSIM, {what} (decoded against encoded luma)")
        ax.grid(True, alpha=0.3)
    axes[1].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"Encoders at {a.width}×{a.height}@30, {a.bitrate} kbit/s, {a.subscribers} subscriber(s)")
    fig.tight_layout()
    fig.savefig(path)
    print(f"bench-encoders: wrote {path}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bin", required=True)
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"of {', '.join(CONFIGS)}")
    p.add_argument("--burners", type=int, default=0, help="also run each config under N busy loops")
    p.add_argument("--burner-configs", default=None, help="only these under the burners (default: all)")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--bitrate", type=int, default=2000)
    p.add_argument("--subscribers", type=int, default=1)
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--quality-every", type=int, default=15, help="compare every Nth frame's picture")
    p.add_argument("--out", default="out/bench-encoders")
    a = p.parse_args()
    names = a.configs.split(",")
    for n in names:
        if n not in CONFIGS:
            sys.exit(f"bench-encoders: unknown config {n} (of {', '.join(CONFIGS)})")
    os.makedirs(a.out, exist_ok=True)
    plan = [(n, 0) for n in names]
    if a.burners:
        plan += [(n, a.burners) for n in (a.burner_configs.split(",") if a.burner_configs else names)]
    rows = []
    for name, burners in plan:
        print(f"bench-encoders: {name}, {burners} burner(s)", file=sys.stderr)
        r = run(a, name, burners)
        if r:
            print(json.dumps(r), flush=True)
            rows.append(r)
    plot(rows, os.path.join(a.out, "encoders.png"), a)


if __name__ == "__main__":
    main()
