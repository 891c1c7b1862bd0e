"""The summary of scripts/bench-focus (the autofocus benchmark; its header has the
details): reads OUT/taps.jsonl as the test `focusBenchmark` wrote it, prints one line per
tap to stderr, plots the first tap's trace to OUT/trace.png and prints the summary as one
JSON line.

    python3 scripts/lib/bench_focus.py OUT
"""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plots import pyplot  # noqa: E402
from procs import load_jsonl  # noqa: E402
from stats import percentile  # noqa: E402


def plot_trace(out, first, trace):
    """Sharpness and lens position against frame number for the first tap."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = [r["frame"] for r in trace]
    ax.plot(x, [r["sharpness"] for r in trace], "o-", color="tab:blue", label="sharpness (spot)")
    ax.axhline(trace[0]["peak_sharpness"], color="tab:blue", ls=":", lw=1, label="region peak (swept)")
    ax.axhline(0.95 * trace[0]["peak_sharpness"], color="tab:blue", ls="--", lw=0.8, label="95% of peak")
    ax.set_xlabel("frame after the tap")
    ax.set_ylabel("sharpness", color="tab:blue")
    lens = ax.twinx()
    lens.plot(x, [r["lens_position"] for r in trace], "s-", color="tab:orange", label="lens position of the frame")
    lens.axhline(first["truth_lens"], color="tab:orange", ls=":", lw=1, label="true depth")
    lens.set_ylabel("lens position (0 = ∞, 1 = 0.25 m)", color="tab:orange")
    lens.set_ylim(-0.02, 1.02)
    handles = ax.get_legend_handles_labels()[0] + lens.get_legend_handles_labels()[0]
    labels = ax.get_legend_handles_labels()[1] + lens.get_legend_handles_labels()[1]
    ax.legend(handles, labels, loc="center right", fontsize=8)
    ax.set_title(f'tap-to-lock-focus on {first["object"]} at {first["depth"]:.2f} m, from lens {first["start_lens"]:.0f}')
    fig.tight_layout()
    fig.savefig(f"{out}/trace.png", dpi=120)
    print(f"wrote {out}/trace.png", file=sys.stderr)


def main():
    # matplotlib is required here (scripts/bench-focus installs it): fail before reading.
    import matplotlib  # noqa: F401

    out = sys.argv[1]
    rows = load_jsonl(f"{out}/taps.jsonl", strict=True)
    taps = [r for r in rows if r["type"] == "tap"]
    trace = [r for r in rows if r["type"] == "trace"]
    timing = {r["mode"]: r for r in rows if r["type"] == "timing"}

    frames = [t["frames_to_converge"] for t in taps if t["frames_to_converge"] is not None]
    ratios = [t["peak_ratio"] for t in taps]
    for t in taps:
        f = t["frames_to_converge"]
        print(f'tap {t["tap"]:2d} {t["object"]:8s} {t["depth"]:6.2f} m  lens {t["truth_lens"]:.3f}'
              f'  from {t["start_lens"]:.0f}: {"—" if f is None else f:>2} frames, '
              f'{100 * t["peak_ratio"]:5.1f}% of peak', file=sys.stderr)

    if trace:
        plot_trace(out, taps[0], trace)

    summary = {
        "frames_p50": percentile(frames, 50),
        "frames_p95": percentile(frames, 95),
        "frames_max": max(frames) if frames else None,
        "taps": len(taps),
        "converged": len(frames),
        "within_15_frames": sum(1 for f in frames if f <= 15),
        "peak_ratio_min": round(min(ratios), 4) if ratios else None,
        "peak_ratio_p50": round(percentile(ratios, 50), 4) if ratios else None,
        "depth_range_m": [round(min(t["depth"] for t in taps), 2), round(max(t["depth"] for t in taps), 2)] if taps else None,
        "process_us_p50": {m: round(t["process_us_p50"], 1) for m, t in timing.items()},
        "process_us_p95": {m: round(t["process_us_p95"], 1) for m, t in timing.items()},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
