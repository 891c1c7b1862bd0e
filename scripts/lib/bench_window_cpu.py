"""scripts/bench-window-cpu: the expert's window's CPU, three ways, under Xvfb + openbox."""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_window import start_xvfb  # noqa: E402
from plots import pyplot  # noqa: E402
from procs import CLK_TCK, ProcessGroup, Tail, cpu_ticks  # noqa: E402

WAYS = ["headless", "window", "sink"]


def measure(group, pids, seconds):
    """CPU of each pid over `seconds`, in % of one core."""
    before = {name: cpu_ticks(pid) for name, pid in pids.items()}
    time.sleep(seconds)
    return {name: round(100.0 * (cpu_ticks(pid) - before[name]) / CLK_TCK / seconds, 1) for name, pid in pids.items()}


def run_way(args, way, url, display, xvfb_pid):
    group = ProcessGroup(args.bin, os.path.join(args.out, way))
    env = dict(os.environ, DISPLAY=display)
    env.pop("POSECAST_WINDOW", None)
    if way == "sink":
        env["POSECAST_WINDOW"] = "sink"
    argv = ["posecast-subscriber", "--signaling", url, "--room", "default", "--json",
            "--microphone", "none", "--speaker", "none"] + (["--headless"] if way == "headless" else [])
    exe = os.path.join(args.bin, argv[0])
    out = open(group.path("subscriber", "jsonl"), "w")
    # stdin held open: a headless subscriber reads its commands there and quits at its end.
    proc = subprocess.Popen([exe] + argv[1:], env=env, stdin=subprocess.PIPE, stdout=out,
                            stderr=open(group.path("subscriber", "err"), "w"))
    group.procs["subscriber"] = proc
    group.tails["subscriber"] = Tail(group.path("subscriber", "jsonl"))
    try:
        group.wait_event("subscriber", lambda e: e.get("event") == "status" and e.get("frames_with_pose", 0) > 30, 40,
                         f"{way}: 30 posed frames")
        time.sleep(args.settle)
        load = os.getloadavg()[0]
        cpu = measure(group, {"subscriber": proc.pid, "xvfb": xvfb_pid}, args.seconds)
        statuses = [e for e in group.tails["subscriber"].lines() if e.get("event") == "status"]
        fps = statuses[-1].get("fps") if statuses else None
        return {"way": way, "subscriber_cpu_pct": cpu["subscriber"], "xvfb_cpu_pct": cpu["xvfb"],
                "fps": fps, "load": round(load, 2), "burners": args.burners, "size": args.size}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--settle", type=float, default=8)
    parser.add_argument("--burners", type=int, default=0)
    parser.add_argument("--size", default="640x480")
    parser.add_argument("--out", default="out/bench-window-cpu")
    args = parser.parse_args()
    width, height = args.size.split("x")
    os.makedirs(args.out, exist_ok=True)
    xvfb, display = start_xvfb()
    env = dict(os.environ, DISPLAY=display)
    openbox = subprocess.Popen(["openbox"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    group = ProcessGroup(args.bin, args.out)
    rows = []
    try:
        url = group.start_signaling()
        group.start("publisher", ["posecast-publisher", "--source", "synthetic", "--width", width, "--height", height,
                                  "--signaling", url, "--json", "--microphone", "none", "--speaker", "none"])
        group.wait_event("publisher", lambda e: e.get("event") == "signalingConnected", 30, "publisher registered")
        for way in WAYS:
            row = run_way(args, way, url, display, xvfb.pid)
            print(json.dumps(row), flush=True)
            rows.append(row)
            time.sleep(2)
    finally:
        for p in loops:
            p.kill()
        group.stop_all()
        openbox.terminate()
        xvfb.terminate()
        try:
            xvfb.wait(5)
        except subprocess.TimeoutExpired:
            xvfb.kill()
    by = {r["way"]: r for r in rows}
    summary = {"summary": True, "size": args.size, "burners": args.burners,
               "window_over_headless_pct": round(by["window"]["subscriber_cpu_pct"] - by["headless"]["subscriber_cpu_pct"], 1),
               "sink_over_headless_pct": round(by["sink"]["subscriber_cpu_pct"] - by["headless"]["subscriber_cpu_pct"], 1)}
    print(json.dumps(summary), flush=True)
    plt = pyplot()
    if plt:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["subscriber_cpu_pct"] for r in rows], 0.4, label="posecast-subscriber")
        ax.bar([x + 0.2 for x in xs], [r["xvfb_cpu_pct"] for r in rows], 0.4, label="Xvfb")
        ax.set_xticks(list(xs), [r["way"] for r in rows])
        ax.set_ylabel("% of one core")
        ax.set_title(f"the expert's window, {args.size}@30, {args.burners} busy loops")
        ax.legend()
        fig.tight_layout()
        path = os.path.join(args.out, "bench-window-cpu.png")
        fig.savefig(path, dpi=100)
        print(f"bench-window-cpu: wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
