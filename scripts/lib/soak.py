"""Soak: a long call, watched for leaks (scripts/soak parses and checks the options,
builds, and has the details in its header).

    python3 scripts/lib/soak.py BIN QUICK OUT MINUTES INTERVAL CONTROL_EVERY WIDTH HEIGHT FPS

Runs posecast-signaling, a posecast-publisher on the synthetic camera and two headless
subscribers (an expert sending control requests, a viewer) from BIN; prints
one JSON line per sample of every process's RSS, fds and threads and a summary line;
writes OUT/samples.jsonl, every process's output and OUT/soak.png. Exit 1 on a leak, a
dead process or a stalled video, 2 on bad arguments. QUICK 1 (scripts/soak --quick):
too short to judge a leak, so only a dead process or a stalled video fails; the summary
says leak_judged false."""
import json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plots import pyplot  # noqa: E402
from procs import ProcessGroup, Tail, sample  # noqa: E402
from events import EVENT

# The expert's control traffic: annotations made and cleared, focus, metering.
COMMANDS = ["tap 0.5 0.6 soak-a", "focus 0.5 0.5 tapToAutoFocus", "tap 0.3 0.7 soak-b", "meter 0.4 0.5 1",
            "tapworld 0 0 0 origin", "clear", "focus 0.6 0.4 auto", "status"]


def run(group, out, duration, interval, control_every, width, height, fps):
    """The call: samples, the subscribers' last status, the expert's counts and a failure
    (None when the call went through). Exits 1 when the set-up does not come up."""
    def wait_for(name, predicate, seconds, what):
        try:
            return group.wait_event(name, predicate, seconds, what)
        except TimeoutError:
            print(f"soak: {name}: no {what} within {seconds} s (see {out}/{name}.err)", file=sys.stderr)
            group.stop_all()
            sys.exit(1)

    samples, failure = [], None
    counts = {"requests": 0, "acks": 0, "errors": 0, "sessions_ended": 0}
    # The signaling server on a free port, then the publisher, then the two subscribers.
    try:
        url = group.start_signaling()
    except TimeoutError:
        print("soak: the signaling server did not start", file=sys.stderr)
        group.stop_all()
        sys.exit(1)
    group.start("publisher", ["posecast-publisher", "--source", "synthetic", "--pose", "orbit", "--width", width,
                              "--height", height, "--fps", fps, "--signaling", url, "--json"])
    wait_for("publisher", lambda e: e.get("event") == EVENT.signalingConnected, 30, "registration")
    expert = group.start("expert", ["posecast-subscriber", "--headless", "--json", "--signaling", url,
                                    "--role", "expert"], stdin=subprocess.PIPE)
    group.start("viewer", ["posecast-subscriber", "--headless", "--json", "--signaling", url, "--role", "viewer"],
                stdin=subprocess.PIPE)
    for name in ("expert", "viewer"):
        wait_for(name, lambda e: e.get("event") == EVENT.status and e.get("frames_with_pose", 0) > 0, 30, "decoded frame")

    # Every line from the start: the counts include anything said while setting up.
    tails = {name: Tail(group.path(name, "jsonl")) for name in ("publisher", "expert", "viewer")}
    last_status = {"expert": {}, "viewer": {}, "publisher": {}}
    t0 = time.time()
    next_sample, next_command, command_index = t0, t0, 0
    while True:
        now = time.time()
        if now - t0 >= duration:
            break
        dead = [n for n, p in group.procs.items() if p.poll() is not None]
        if dead:
            failure = f"process(es) exited: {', '.join(dead)}"
            break
        if now >= next_command:
            expert.stdin.write((COMMANDS[command_index % len(COMMANDS)] + "\n").encode())
            expert.stdin.flush()
            command_index += 1
            next_command += control_every
        if now >= next_sample:
            for name, tail in tails.items():
                for e in tail.lines():
                    kind = e.get("event")
                    if kind == EVENT.status:
                        last_status[name] = e
                    elif name == "expert" and kind == EVENT.requestSent:
                        counts["requests"] += 1
                    elif name == "expert" and kind == EVENT.ack:
                        counts["acks"] += 1
                    elif name == "expert" and kind in (EVENT.error, EVENT.commandError):
                        counts["errors"] += 1
                    elif name != "publisher" and kind == EVENT.sessionEnded:
                        counts["sessions_ended"] += 1
            try:
                resources = {n: sample(p.pid) for n, p in group.procs.items()}
            except (FileNotFoundError, ProcessLookupError, StopIteration):
                continue   # a process is exiting: the next loop names it
            row = {"t_s": round(now - t0, 1), "processes": resources,
                   "frames": {n: last_status[n].get("frames_with_pose", 0) for n in ("expert", "viewer")},
                   "fps": {n: last_status[n].get("fps", 0) for n in ("expert", "viewer")}, **counts}
            samples.append(row)
            print(json.dumps(row), flush=True)
            next_sample += interval
        time.sleep(min(0.2, max(0.01, min(next_sample, next_command) - time.time())))
    final = {n: dict(last_status[n]) for n in ("expert", "viewer")}
    return samples, final, counts, failure


def summarize(samples, final, counts, failure, names, interval, fps, quick=False):
    """The summary line (growth per process after the warm-up, median of the first samples
    to median of the last), the warm-up in seconds, and whether the soak passed."""
    elapsed = samples[-1]["t_s"] if samples else 0
    warmup = max(0.1 * elapsed, min(60.0, 0.3 * elapsed)) if elapsed >= 300 else 0.3 * elapsed
    steady = [s for s in samples if s["t_s"] >= warmup]
    summary = {"minutes": round(elapsed / 60, 2), "interval_s": interval, "samples": len(samples),
               "warmup_s": round(warmup, 1)}
    per_process = {}
    if len(steady) >= 6:
        k = max(3, len(steady) // 10)
        head, tail = steady[:k], steady[-k:]
        for name in names:
            med = lambda rows, key: statistics.median(r["processes"][name][key] for r in rows)
            rss0, rss1 = med(head, "rss_kib"), med(tail, "rss_kib")
            per_process[name] = {"rss_kib_start": rss0, "rss_kib_end": rss1,
                                 "rss_growth_pct": round((rss1 - rss0) * 100 / rss0, 2) if rss0 else None,
                                 "fd_start": med(head, "fds"), "fd_end": med(tail, "fds"),
                                 "fd_growth": med(tail, "fds") - med(head, "fds"),
                                 "fd_max": max(r["processes"][name]["fds"] for r in steady),
                                 "threads_start": med(head, "threads"), "threads_end": med(tail, "threads")}
        summary["rss_growth_pct"] = max(p["rss_growth_pct"] for p in per_process.values())
        summary["fd_growth"] = max(p["fd_growth"] for p in per_process.values())
    else:
        failure = failure or f"too few samples after the warm-up ({len(steady)}): run longer or sample more often"
        summary["rss_growth_pct"] = None
        summary["fd_growth"] = None
    summary["per_process"] = per_process
    summary["frames"] = sum(final[n].get("frames_with_pose", 0) for n in final)
    summary["frames_per_subscriber"] = {n: final[n].get("frames", 0) for n in final}
    summary["pose_pct"] = min((final[n].get("pose_pct", 0) for n in final), default=0)
    summary["fps_end"] = {n: final[n].get("fps", 0) for n in final}
    summary.update(counts)
    expected = (elapsed - warmup) * float(fps) * 0.5
    if failure is None and any(final[n].get("frames", 0) < expected for n in final):
        failure = f"the video stalled: fewer than half the frames expected after the warm-up ({int(expected)})"
    summary["leak_judged"] = not quick
    ok = failure is None and (quick or (summary["rss_growth_pct"] < 5 and summary["fd_growth"] <= 0))
    summary["ok"] = ok
    if failure:
        summary["failure"] = failure
    return summary, warmup, ok


def plot(out, samples, names, warmup, summary, width, height, fps):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ts = [s["t_s"] / 60 for s in samples]
    for name in names:
        ax[0].plot(ts, [s["processes"][name]["rss_kib"] / 1024 for s in samples], label=name)
        ax[1].plot(ts, [s["processes"][name]["fds"] for s in samples], label=name)
    for a, label in ((ax[0], "RSS (MiB)"), (ax[1], "open file descriptors")):
        a.axvline(warmup / 60, color="grey", linestyle=":", label="end of warm-up")
        a.set(xlabel="minutes", ylabel=label)
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    fig.suptitle(f"Soak: publisher (synthetic {width}x{height}@{fps}) + 2 subscribers, loopback; "
                 f"RSS growth {summary['rss_growth_pct']}%, fd growth {summary['fd_growth']}")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "soak.png"), dpi=110)
    print(f"plot: {os.path.join(out, 'soak.png')}", file=sys.stderr)


def main():
    if len(sys.argv) != 10:
        sys.exit(__doc__)
    bin_dir, quick = sys.argv[1], sys.argv[2] == "1"
    out, minutes, interval, control_every = sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    width, height, fps = sys.argv[7], sys.argv[8], sys.argv[9]
    if minutes <= 0 or interval <= 0 or control_every <= 0:
        print("soak: --minutes, --interval and --control-every must be positive", file=sys.stderr)
        sys.exit(2)
    group = ProcessGroup(bin_dir, out)
    try:
        samples, final, counts, failure = run(group, out, minutes * 60, interval, control_every, width, height, fps)
    finally:
        group.stop_all()

    with open(os.path.join(out, "samples.jsonl"), "w") as f:
        for row in samples:
            f.write(json.dumps(row) + "\n")
    names = list(group.procs)
    summary, warmup, ok = summarize(samples, final, counts, failure, names, interval, fps, quick)
    plot(out, samples, names, warmup, summary, width, height, fps)
    print(json.dumps(summary), flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
