"""Start-up check: N consecutive starts of the soak set-up (signaling, a publisher on the
synthetic camera, an expert and a viewer joining at once); each start passes when both
subscribers report a decoded frame with its pose within --deadline seconds of joining.
On a failed start the publisher's threads are dumped with gdb (`thread apply all bt`)
into OUT/startN-publisher.bt, so a stall can be named, not guessed at.
Prints one JSON line per start and a summary line; exit 1 when any start failed."""
import argparse, json, os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paths import RELEASE_BIN  # noqa: E402
from procs import ProcessGroup  # noqa: E402
from stats import percentile  # noqa: E402
from events import EVENT


def one_start(args, index):
    out = os.path.join(args.out, f"start{index}")
    os.makedirs(out, exist_ok=True)
    group = ProcessGroup(args.bin, out)
    row = {"start": index}
    try:
        url = group.start_signaling()
        joining = (("expert", "expert"), ("viewer", "viewer"))[:args.subscribers]

        def publisher():
            group.start("publisher", ["posecast-publisher", "--source", args.source, "--pose", "orbit",
                                      "--signaling", url, "--json"])
            group.wait_event("publisher", lambda e: e.get("event") == EVENT.signalingConnected, 30, "registration")

        def subscribers():
            for name, role in joining:
                group.start(name, ["posecast-subscriber", "--headless", "--json", "--signaling", url, "--role", role],
                            stdin=subprocess.PIPE)

        if args.subscribers_first:
            # Subscribers already waiting: their sessions are built while the publisher's
            # first frames flow (a restarted publisher, as FaultSystemTests has it).
            subscribers()
            for name, _ in joining:
                group.wait_event(name, lambda e: e.get("event") == EVENT.signalingConnected, 30, "registration")
            t0 = time.time()
            publisher()
        else:
            publisher()
            t0 = time.time()
            subscribers()
        for name, _ in joining:
            group.wait_event(name, lambda e: e.get("event") == EVENT.status and e.get("frames_with_pose", 0) > 0,
                             args.deadline - (time.time() - t0), "decoded frame with pose")
            row[f"{name}_first_frame_s"] = round(time.time() - t0, 2)
        row["ok"] = True
    except TimeoutError as error:
        row["ok"] = False
        row["failure"] = str(error)
        # Late or stalled? The publisher's frames with pose, now and two seconds on.
        def tagged():
            rows = [json.loads(l) for l in open(group.path("publisher", "jsonl")) if l.startswith("{")]
            return max([r.get("frames_with_pose", -1) for r in rows if r.get("event") == EVENT.status] or [-1])
        before = tagged(); time.sleep(2.5); after = tagged()
        row["publisher_frames_with_pose"] = [before, after]
        row["stalled"] = before == after
        pub = group.procs.get("publisher")
        if pub and pub.poll() is None and shutil.which("gdb"):
            bt = os.path.join(out, "publisher.bt")
            with open(bt, "w") as f:
                subprocess.run(["gdb", "-p", str(pub.pid), "-batch", "-ex", "thread apply all bt"],
                               stdout=f, stderr=subprocess.STDOUT, timeout=120)
            row["backtrace"] = bt
    finally:
        group.stop_all()
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--starts", type=int, default=50)
    p.add_argument("--deadline", type=float, default=5.0)
    p.add_argument("--bin", default=RELEASE_BIN)
    p.add_argument("--out", default="out/startup-check")
    p.add_argument("--keep-going", action="store_true", help="go on after a failed start")
    p.add_argument("--source", default="synthetic", choices=["synthetic", "test"], help="the publisher's source")
    p.add_argument("--subscribers-first", action="store_true",
                   help="start the subscribers first, so they join while the publisher starts")
    p.add_argument("--subscribers", type=int, default=2, choices=[1, 2], help="an expert, and a viewer with 2")
    args = p.parse_args()
    failures, rows = 0, []
    for i in range(1, args.starts + 1):
        row = one_start(args, i)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if not row["ok"]:
            failures += 1
            if not args.keep_going:
                break
    firsts = sorted(r[k] for r in rows for k in ("expert_first_frame_s", "viewer_first_frame_s") if k in r)
    print(json.dumps({"starts": len(rows), "failed": failures, "ok": failures == 0,
                      "first_frame_s_max": firsts[-1] if firsts else None,
                      "first_frame_s_p50": percentile(firsts, 50, method="higher")}), flush=True)
    sys.exit(0 if failures == 0 else 1)


if __name__ == "__main__":
    main()
