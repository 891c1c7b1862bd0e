"""The Python half of scripts/bench-annotation (the annotation placement benchmark; its
header has the details), one subcommand per step:

    bench_annotation.py free-port                      a free TCP port on 127.0.0.1
    bench_annotation.py taps FEATURES_JSONL TAPS SETTLE  the subscriber's command script (SETTLE: seconds to connect)
    bench_annotation.py enough SUBSCRIBER_JSONL TAPS   1 when every method has TAPS placements, else 0
    bench_annotation.py summary OUT DELAYS TAPS POSE   one JSON line per delay, and OUT/bench-annotation-POSE.png
"""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plots import pyplot  # noqa: E402
from procs import free_port, load_jsonl  # noqa: E402
from stats import percentile  # noqa: E402
from events import EVENT


# The three ways a tap becomes an annotation, as the subscriber reports each placement:
# (name in the JSON, the subscriber's tapworld word, its placement event's "placement", label).
METHODS = [
    ("synced", "", "publisherDepth", "frame-synced, the product's default (auto: the publisher's depth of the tapped frame)"),
    ("ground", "ground", "world", "frame-synced on the ground plane (the expert's own placement)"),
    ("naive", "naive", "screen", "naive screen coordinates (the publisher's newest pose at arrival)"),
]


def taps_script(features_path, taps, settle):
    """The commands for posecast-subscriber --script: taps on the ground features, each
    placed in turn by every method of METHODS."""
    # Ground features only (disc centres): the ground-plane method is exact there, so
    # the comparison is of the pose each method uses, nothing else.
    features = [f for f in load_jsonl(features_path, strict=True) if f["kind"] == "discCenter"]
    print(f"sleep {settle}")  # connect and settle
    print("clear")            # start from an empty board (64 annotations at most)
    # Each feature is tried in turn; out-of-view ones are refused by the subscriber and
    # the next is tried, so keep going until well past the number of taps wanted.
    lines = []
    for i in range(taps * 6):
        f = features[i % len(features)]
        x, y, z = f["position"]
        for _, word, _, _ in METHODS:
            lines.append(" ".join(["tapworld", str(x), str(y), str(z)] + ([word] if word else []) + [f["name"]]))
        lines.append("sleep 0.25")
    print("\n".join(lines))
    print("sleep 1.5")        # the last replies (delayed) come back


def placements(path):
    """The subscriber's placement events, in order."""
    return [e for e in load_jsonl(path) if e.get("event") == EVENT.placement]


def counts(subscriber_path):
    """Placements per method name of METHODS (placements of any other kind raise: the
    summary would otherwise silently leave them out)."""
    by_placement = {placement: name for name, _, placement, _ in METHODS}
    c = {name: 0 for name, _, _, _ in METHODS}
    for e in placements(subscriber_path):
        if e["placement"] not in by_placement:
            raise SystemExit(f"bench-annotation: a placement of kind {e['placement']!r}, which no method asked for "
                             f"(methods: {', '.join(by_placement)})")
        c[by_placement[e["placement"]]] += 1
    return c


def enough(subscriber_path, taps):
    print(1 if min(counts(subscriber_path).values()) >= taps else 0)


def summary(out, delays, taps, pose):
    def pct(values, p):
        return percentile(values, p, digits=3)

    by_placement = {placement: name for name, _, placement, _ in METHODS}
    counts_per_delay = {}
    results = []
    for d in delays:
        path = os.path.join(out, f"subscriber-{d}.jsonl")
        counts_per_delay[d] = counts(path)
        px = {name: [] for name, _, _, _ in METHODS}
        cm = {name: [] for name, _, _, _ in METHODS}
        in_front = {name: 0 for name, _, _, _ in METHODS}
        for e in placements(path):
            m = by_placement[e["placement"]]
            if len(cm[m]) >= taps:
                continue
            cm[m].append(e["error_cm"])
            if e.get("error_px") is not None:
                px[m].append(e["error_px"])
                # On the feature's line of sight but far from it: the publisher's depth found
                # a surface in front of it (the feature was hidden on the tapped frame).
                in_front[m] += e["error_px"] <= 1 and e["error_cm"] >= 10
        r = {"delay_ms": d, "pose": pose, "taps": min(len(v) for v in cm.values()),
             "methods": {name: {"placement": placement, "label": label} for name, _, placement, label in METHODS}}
        for name, _, _, _ in METHODS:
            r.update({f"{name}_px_p50": pct(px[name], 50), f"{name}_px_p95": pct(px[name], 95),
                      f"{name}_cm_p50": pct(cm[name], 50), f"{name}_cm_p95": pct(cm[name], 95),
                      f"{name}_in_front": in_front[name]})
        r["naive_over_synced_px_p95"] = (round(r["naive_px_p95"] / max(r["synced_px_p95"], 1e-3), 1)
                                         if r["naive_px_p95"] is not None and r["synced_px_p95"] is not None else None)
        results.append(r)
    plot(out, results, pose)
    for r in results:
        print(json.dumps(r))


def plot(out, results, pose):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    ds = [r["delay_ms"] for r in results]
    styles = {"synced": "o-", "ground": "^-", "naive": "s--"}
    for name, _, _, label in METHODS:
        for i, unit in enumerate(("px", "cm")):
            line, = ax[i].plot(ds, [r[f"{name}_{unit}_p50"] for r in results], styles[name], label=f"{label} p50")
            ax[i].plot(ds, [r[f"{name}_{unit}_p95"] for r in results], styles[name], color=line.get_color(), alpha=0.4,
                       label=f"{name} p95")
    ax[0].set(xlabel="control-channel delay (ms)", ylabel="placement error (px, reprojected)", title="pixels (log)", yscale="log")
    ax[1].set(xlabel="control-channel delay (ms)", ylabel="placement error (cm)", title="world (log)", yscale="log")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=6)
    fig.suptitle(f"Annotation placement, camera turning at 30°/s ({pose}; synthetic scene, loopback)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"bench-annotation-{pose}.png"), dpi=110)
    print(f"plot: {os.path.join(out, f'bench-annotation-{pose}.png')}", file=sys.stderr)


def main():
    command, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if command == "free-port" and not args:
        print(free_port())
    elif command == "taps" and len(args) == 3:
        taps_script(args[0], int(args[1]), float(args[2]))
    elif command == "enough" and len(args) == 2:
        enough(args[0], int(args[1]))
    elif command == "summary" and len(args) == 4:
        summary(args[0], [int(d) for d in args[1].split(",")], int(args[2]), args[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
