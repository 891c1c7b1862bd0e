"""The plot of scripts/bench-tags: each run's position and angle error along its path,
from OUT/*.jsonl as `posecast-scene tags --frames-out` wrote them; frames without a pose
are marked on the time axis.

    python3 scripts/lib/bench_tags.py OUT
"""
import glob, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plots import pyplot, save  # noqa: E402
from procs import load_jsonl  # noqa: E402


def main():
    out = sys.argv[1]
    runs = sorted(glob.glob(f"{out}/*.jsonl"))
    plt = pyplot()
    if plt is None or not runs:
        return
    fig, (cm, deg) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for path in runs:
        name = os.path.basename(path)[:-len(".jsonl")]
        rows = load_jsonl(path, strict=True)
        posed = [r for r in rows if "error_cm" in r]
        line, = cm.plot([r["t"] for r in posed], [r["error_cm"] for r in posed], lw=0.9, label=name)
        deg.plot([r["t"] for r in posed], [r["error_deg"] for r in posed], lw=0.9, color=line.get_color())
        lost = [r["t"] for r in rows if "error_cm" not in r]
        if lost:
            cm.plot(lost, [0] * len(lost), "x", color=line.get_color(), ms=4)
    cm.axhline(1, color="grey", ls="--", lw=0.8, label="target p95 1 cm")
    deg.axhline(0.5, color="grey", ls="--", lw=0.8)
    cm.set_ylabel("position error (cm)")
    deg.set_ylabel("orientation error (°)")
    deg.set_xlabel("seconds along the path (x: frame without a pose)")
    cm.legend(fontsize=8, ncol=2)
    cm.set_title("AprilTag tracking on the synthetic camera against ground truth")
    save(fig, f"{out}/errors.png")


if __name__ == "__main__":
    main()
