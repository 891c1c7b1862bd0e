"""scripts/bench-window: posecast-loopback with and without its window, under Xvfb."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from plots import pyplot  # noqa: E402


def start_xvfb():
    """A private X server on a display it picks itself (-displayfd): (process, DISPLAY).
    A fixed or guessed number can meet a stale lock whose pid is alive again."""
    read_end, write_end = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write_end,))
    os.close(write_end)
    with os.fdopen(read_end) as numbers:
        number = numbers.readline().strip()
    if not number.isdigit():
        xvfb.kill()
        sys.exit("bench-window: Xvfb did not start (no display number from -displayfd)")
    return xvfb, f":{number}"


def run(binary, display, seconds, env):
    args = [os.path.join(binary, "posecast-loopback"), "--seconds", str(seconds)] + (["--display"] if display else [])
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        sys.exit(f"bench-window: posecast-loopback failed ({out.returncode}): {out.stderr[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    xvfb, display_name = start_xvfb()
    env = dict(os.environ, DISPLAY=display_name)
    results = {False: [], True: []}
    try:
        for n in range(args.runs):
            for display in (False, True):
                r = run(args.bin, display, args.seconds, env)
                line = {"display": display, "run": n + 1, "latency_ms_p50": r["latency_ms_p50"],
                        "latency_ms_p95": r["latency_ms_p95"], "latency_ms_p99": r["latency_ms_p99"],
                        "max_first_second": r["latency_ms_max_first_second"], "frames_shown": r["frames_shown"],
                        "pose_pct": r["pose_pct"], "first": r["latency_ms_first"]}
                results[display].append(line)
                print(json.dumps(line), flush=True)
    finally:
        # SIGTERM first, SIGKILL when Xvfb outlives it (seen when the script runs under
        # the Swift test runner: Xvfb was still there 5 s after SIGTERM).
        xvfb.terminate()
        try:
            xvfb.wait(timeout=5)
        except subprocess.TimeoutExpired:
            xvfb.kill()
            xvfb.wait()
    worst = {d: max(x["latency_ms_p95"] for x in results[d]) for d in results}
    print(json.dumps({"summary": True, "p95_no_window_worst": worst[False], "p95_window_worst": worst[True],
                      "p95_difference_ms": round(worst[True] - worst[False], 1), "target_ms": 20}))
    plt = pyplot()
    if plt:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for display, style in ((False, "-"), (True, "--")):
            for x in results[display]:
                ax.plot(range(1, len(x["first"]) + 1), x["first"], style, alpha=0.7,
                        label=f"{'window' if display else 'no window'} run {x['run']}")
        ax.set_xlabel("frame of the session")
        ax.set_ylabel("capture → shown (ms)")
        ax.set_title("posecast-loopback: the first frames, with and without the window")
        ax.legend(fontsize=7)
        fig.savefig("bench-window.png", dpi=110, bbox_inches="tight")
        print("bench-window: wrote bench-window.png", file=sys.stderr)


if __name__ == "__main__":
    main()
