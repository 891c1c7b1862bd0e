"""The Python half of scripts/bench-annotation (the annotation placement benchmark; its
header has the details), one subcommand per step:

    bench_annotation.py free-port                      a free TCP port on 127.0.0.1
    bench_annotation.py taps FEATURES_JSONL TAPS       the subscriber's command script
    bench_annotation.py enough SUBSCRIBER_JSONL TAPS   1 when both methods have TAPS placements, else 0
    bench_annotation.py summary OUT DELAYS TAPS POSE   one JSON line per delay, and OUT/bench-annotation-POSE.png
"""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plots import pyplot  # noqa: E402
from procs import free_port, load_jsonl  # noqa: E402
from stats import percentile  # noqa: E402
from events import EVENT


def taps_script(features_path, taps):
    """The commands for posecast-subscriber --script: taps on the ground features, each
    frame-synced (world point) and naive (screen coordinates) in turn."""
    # Ground features only (disc centres): both methods place on the ground plane, so the
    # comparison is of the pose each one uses, nothing else.
    features = [f for f in load_jsonl(features_path, strict=True) if f["kind"] == "discCenter"]
    print("sleep 4")          # connect and settle
    print("clear")            # start from an empty board (64 annotations at most)
    # Each feature is tried in turn; out-of-view ones are refused by the subscriber and
    # the next is tried, so keep going until well past the number of taps wanted.
    lines = []
    for i in range(taps * 6):
        f = features[i % len(features)]
        x, y, z = f["position"]
        lines.append(f"tapworld {x} {y} {z} {f['name']}")
        lines.append(f"tapworld {x} {y} {z} naive {f['name']}")
        lines.append("sleep 0.25")
    print("\n".join(lines))
    print("sleep 1.5")        # the last replies (delayed) come back


def placements(path):
    """The subscriber's placement events, in order."""
    return [e for e in load_jsonl(path) if e.get("event") == EVENT.placement]


def enough(subscriber_path, taps):
    c = {"world": 0, "screen": 0}
    for e in placements(subscriber_path):
        c[e["placement"]] = c.get(e["placement"], 0) + 1
    print(1 if min(c.values()) >= taps else 0)


def summary(out, delays, taps, pose):
    def pct(values, p):
        return percentile(values, p, digits=3)

    results = []
    for d in delays:
        px = {"world": [], "screen": []}
        cm = {"world": [], "screen": []}
        for e in placements(os.path.join(out, f"subscriber-{d}.jsonl")):
            m = e["placement"]
            if len(cm[m]) >= taps:
                continue
            cm[m].append(e["error_cm"])
            if e.get("error_px") is not None:
                px[m].append(e["error_px"])
        results.append({"delay_ms": d, "pose": pose, "taps": min(len(cm["world"]), len(cm["screen"])),
                        "synced_px_p50": pct(px["world"], 50), "synced_px_p95": pct(px["world"], 95),
                        "naive_px_p50": pct(px["screen"], 50), "naive_px_p95": pct(px["screen"], 95),
                        "synced_cm_p50": pct(cm["world"], 50), "synced_cm_p95": pct(cm["world"], 95),
                        "naive_cm_p50": pct(cm["screen"], 50), "naive_cm_p95": pct(cm["screen"], 95)})
    plot(out, results, pose)
    for r in results:
        print(json.dumps(r))


def plot(out, results, pose):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ds = [r["delay_ms"] for r in results]
    for key, label, style in [("synced", "frame-synced (ours)", "o-"), ("naive", "naive screen coordinates", "s--")]:
        ax[0].plot(ds, [r[f"{key}_px_p50"] for r in results], style, label=f"{label} p50")
        ax[0].plot(ds, [r[f"{key}_px_p95"] for r in results], style, alpha=0.4, label=f"{label} p95")
        ax[1].plot(ds, [r[f"{key}_cm_p50"] for r in results], style, label=f"{label} p50")
        ax[1].plot(ds, [r[f"{key}_cm_p95"] for r in results], style, alpha=0.4, label=f"{label} p95")
    ax[0].set(xlabel="control-channel delay (ms)", ylabel="placement error (px, reprojected)", title="pixels")
    ax[1].set(xlabel="control-channel delay (ms)", ylabel="placement error (cm)", title="world")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    fig.suptitle(f"Annotation placement, camera turning at 30°/s ({pose}; synthetic scene, loopback)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"bench-annotation-{pose}.png"), dpi=110)
    print(f"plot: {os.path.join(out, f'bench-annotation-{pose}.png')}", file=sys.stderr)


def main():
    command, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if command == "free-port" and not args:
        print(free_port())
    elif command == "taps" and len(args) == 2:
        taps_script(args[0], int(args[1]))
    elif command == "enough" and len(args) == 2:
        enough(args[0], int(args[1]))
    elif command == "summary" and len(args) == 4:
        summary(args[0], [int(d) for d in args[1].split(",")], int(args[2]), args[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
