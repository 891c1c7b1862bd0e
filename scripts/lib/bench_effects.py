"""The video effects' cost per frame and CPU (scripts/bench-effects)."""
import argparse, json, os, statistics, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from plots import pyplot
from procs import Proc, cpu_ticks, thread_ticks, CLK_TCK, wait_until

PHOTO = os.path.join(".build", "effects", "photos", "coffee.png")

# name: (extra arguments, the baseline it is measured against, the status field of its time)
EFFECTS = {
    "none": ([], None, None),
    "blur-person": (["--background", "blur"], "none", "background_ms"),
    "image-person": (["--background", f"image={PHOTO}"], "none", "background_ms"),
    "blur-depth": (["--background", "blur,depth=3"], "none", "background_ms"),
    "image-depth": (["--background", f"image={PHOTO},depth=3"], "none", "background_ms"),
    "crop-still": (["--capture-size", "WIDE"], None, "framing_ms"),
    "framing-face": (["--capture-size", "WIDE", "--framing", "face"], "crop-still", "framing_ms"),
    "framing-person": (["--capture-size", "WIDE", "--framing", "person"], "crop-still", "framing_ms"),
}
WIDE = {"640x480": "1280x720", "1280x720": "1920x1080"}


def run(a, size, name):
    extra, _, field = EFFECTS[name]
    w, h = size.split("x")
    argv = [os.path.join(a.bin, "posecast-publisher"), "--source", "synthetic", "--pose", "orbit", "--listen", "127.0.0.1:0",
            "--json", "--width", w, "--height", h] + [WIDE[size] if x == "WIDE" else x for x in extra]
    out = os.path.join(a.out, f"{size}-{name}")
    os.makedirs(out, exist_ok=True)
    p = Proc("publisher", argv, out)
    try:
        wait_until(lambda: len(p.events("status")) >= 3, 30, f"{size} {name}: three status lines")
        t0, c0, n0 = time.monotonic(), cpu_ticks(p.pid), len(p.events("status"))
        th0 = thread_ticks(p.pid)
        time.sleep(a.seconds)
        elapsed = time.monotonic() - t0
        cpu = (cpu_ticks(p.pid) - c0) / CLK_TCK / elapsed * 100
        th1 = thread_ticks(p.pid)
        # The effects run on the source's streaming thread ("source:src"), with only the
        # pose attach, metering and overlay beside them, and their models on the analysis
        # thread ("posecast-analysis", 15 characters kept): their CPU is the effect's, less
        # noisy than the whole process's (the encoder, the renderer).
        src = [tid for tid, (name, _) in th1.items() if name.startswith("source:src") or name.startswith("posecast-analys")]
        stream = sum(th1[t][1] - th0.get(t, ("", 0))[1] for t in src) / CLK_TCK / elapsed * 100
        rows = [o for _, o in p.events("status")[n0:]]
        errors = [o for _, o in p.events("effectError")]
    finally:
        p.stop()
    if errors:
        raise SystemExit(f"{size} {name}: {errors[0].get('message')}")
    row = {"size": size, "effect": name, "cpu_pct": round(cpu, 1), "stream_thread_cpu_pct": round(stream, 1),
           "fps": round(statistics.median(o.get("fps", 0) for o in rows), 1) if rows else 0}
    if field:
        ms = [o[field] for o in rows if field in o]
        row["ms_per_frame"] = round(statistics.median(ms), 2) if ms else None
    seg = [o["segmentation_fps"] for o in rows if "segmentation_fps" in o]
    if seg:
        row["segmentations_per_s"] = round(statistics.median(seg), 1)
    if WIDE.get(size) and "--capture-size" in extra:
        row["capture"] = WIDE[size]
    return row


def plot(rows, path):
    plt = pyplot()
    if plt is None:
        return
    effects = [r for r in rows if "added_stream_cpu_pct" in r]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    labels = [f"{r['effect']}\n{r['size']}" for r in effects]
    axes[0].bar(range(len(effects)), [r["added_stream_cpu_pct"] for r in effects], color="#4c72b0")
    axes[0].axhline(25, color="#c44e52", linestyle="--", label="25 % of one core")
    axes[0].set_ylabel("CPU the effect adds to its thread, % of one core")
    axes[1].bar(range(len(effects)), [r.get("ms_per_frame") or 0 for r in effects], color="#55a868")
    axes[1].axhline(5, color="#c44e52", linestyle="--", label="framing target 5 ms")
    axes[1].set_ylabel("effect time per frame (ms, median of status)")
    for ax in axes:
        ax.set_xticks(range(len(effects)))
        ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        ax.legend(fontsize=8)
    fig.suptitle("Video effects: publisher, synthetic camera, release build, 30 fps")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--sizes", default="640x480,1280x720")
    ap.add_argument("--effects", default=",".join(EFFECTS))
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--out", default="out/bench-effects")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for size in a.sizes.split(","):
        done = {}
        for name in a.effects.split(","):
            base = EFFECTS[name][1]
            if base and base not in done:
                done[base] = run(a, size, base)
            row = run(a, size, name)
            if base:
                row["added_cpu_pct"] = round(row["cpu_pct"] - done[base]["cpu_pct"], 1)
                row["added_stream_cpu_pct"] = round(row["stream_thread_cpu_pct"] - done[base]["stream_thread_cpu_pct"], 1)
                row["baseline"] = base
            done[name] = row
            rows.append(row)
            print(json.dumps(row), flush=True)
    plot(rows, os.path.join(a.out, "effects.png"))


if __name__ == "__main__":
    main()
