"""1 → N subscribers through Janus beside the direct path, in the same run (scripts/bench-sfu).

Two network namespaces joined by a veth pair, as in SFUSystemTests: the publisher alone in
one (10.77.K.2 on v1), Janus and the subscribers in the other (10.77.K.1 on v0). Everything
the publisher uploads crosses v1, so v1's byte counter is its real upload (media, RTCP and
signaling). For each subscriber count and each path (direct: one peer connection per
subscriber; sfu: one to Janus, which fans out), a fresh publisher and N headless
subscribers run until each shows frames, then for --seconds: the publisher's CPU and
upload, Janus's CPU, each subscriber's frames shown (fps) and its capture-to-shown latency
from its --frame-log (frames shown inside the window), and how many of those frames
carry their own pose (frame id and pose hash in the publisher's frame log). Also per run:
the subscribers' watchdog restarts ("no frames for …"), their longest gap between two
frames shown inside the window, and frames shown without a pose. --step forces the
publisher's resolution down and up inside the window (its simulated link at 500 kbit/s
from a third of the window for 15 s), to see that no frame crosses a step without its pose."""
import argparse, json, os, random, shutil, subprocess, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from plots import pyplot
from procs import Proc, cpu_ticks, CLK_TCK, wait_until, load_jsonl
from stats import percentile


def ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


class Network:
    """The two namespaces; removed by close()."""

    def __init__(self):
        k = random.randint(10, 250)
        self.name, self.publisher = f"posecast-bench-sfu-{os.getpid()}", f"posecast-bench-sfu-{os.getpid()}-p"
        self.address, self.publisher_address = f"10.77.{k}.1", f"10.77.{k}.2"
        try:
            for step in (["netns", "add", self.name], ["netns", "add", self.publisher],
                         ["-n", self.name, "link", "set", "lo", "up"], ["-n", self.publisher, "link", "set", "lo", "up"],
                         ["-n", self.name, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
                         ["-n", self.name, "link", "set", "v1", "netns", self.publisher],
                         ["-n", self.name, "addr", "add", f"{self.address}/24", "dev", "v0"],
                         ["-n", self.publisher, "addr", "add", f"{self.publisher_address}/24", "dev", "v1"],
                         ["-n", self.name, "link", "set", "v0", "up"], ["-n", self.publisher, "link", "set", "v1", "up"]):
                ip(*step)
        except subprocess.CalledProcessError as error:
            self.close()
            sys.exit(f"bench-sfu: network namespaces are refused here (`ip {' '.join(error.cmd[1:])}`: {error.stderr.strip()})")

    def argv(self, namespace, argv):
        return ["ip", "netns", "exec", namespace] + argv

    def upload_bytes(self):
        out = subprocess.run(["ip", "netns", "exec", self.publisher, "cat", "/sys/class/net/v1/statistics/tx_bytes"],
                             check=True, capture_output=True, text=True).stdout
        return int(out)

    def close(self):
        ip("netns", "delete", self.name, check=False)
        ip("netns", "delete", self.publisher, check=False)


def last_status(proc):
    statuses = proc.events("status")
    return statuses[-1][1] if statuses else {}


def run(a, net, janus, path, count, port):
    out = os.path.join(a.out, f"{path}-{count}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    room = str(random.randint(1000, 9999))
    sfu = ["--sfu", f"janus:ws://{net.address}:8188/", "--room", room] if path == "sfu" else []
    quiet = ["--microphone", "none", "--speaker", "none"]
    pub_log = os.path.join(out, "publisher-frames.jsonl")
    step = ["--link", "none"] if a.step else []
    publisher = Proc("publisher", net.argv(net.publisher, [
        os.path.join(a.bin, "posecast-publisher"), "--source", "synthetic", "--codec", a.codec, "--json",
        "--listen", f"{net.publisher_address}:{port}", "--frame-log", pub_log] + sfu + quiet + step), out, stdin=a.step)
    subscribers = []
    try:
        wait_until(lambda: publisher.events("listening"), 30, "the publisher's signaling")
        url = publisher.events("listening")[0][1]["url"]
        if path == "sfu":
            wait_until(lambda: publisher.events("sfuConnected"), 60, "the publisher in Janus")
        for i in range(count):
            subscribers.append(Proc(f"subscriber-{i}", net.argv(net.name, [
                os.path.join(a.bin, "posecast-subscriber"), "--headless", "--json", "--signaling", url,
                "--role", "expert" if i == 0 else "viewer", "--frame-log", os.path.join(out, f"subscriber-{i}-frames.jsonl")]
                + sfu + quiet), out, stdin=True))
        wait_until(lambda: all(last_status(s).get("frames", 0) >= 30 for s in subscribers), 60 + 5 * count,
                   f"{count} subscribers showing frames ({path})")
        time.sleep(2)  # settle
        t0, up0 = time.time_ns(), net.upload_bytes()
        c_pub, c_janus = cpu_ticks(publisher.pid), cpu_ticks(janus.pid)
        c_subs = [cpu_ticks(s.pid) for s in subscribers]
        if a.step:
            time.sleep(a.seconds / 3)
            publisher.send("link rate=300")
            time.sleep(15)
            publisher.send("link none")
            time.sleep(max(0.0, a.seconds * 2 / 3 - 15))
        else:
            time.sleep(a.seconds)
        t1, up1 = time.time_ns(), net.upload_bytes()
        seconds = (t1 - t0) / 1e9
        cpu = lambda before, pid: (cpu_ticks(pid) - before) / CLK_TCK / seconds * 100
        pub_cpu, janus_cpu = cpu(c_pub, publisher.pid), cpu(c_janus, janus.pid)
        sub_cpu = sum(cpu(c, s.pid) for c, s in zip(c_subs, subscribers))
        encoder_kbps = last_status(publisher).get("encoder_kbps")
        steps = (last_status(publisher).get("resolution_steps_down"), last_status(publisher).get("resolution_steps_up"))
        restarts = sum(1 for s in subscribers for _, e in s.events("sessionEnded") if "no frames" in e.get("reason", ""))
    finally:
        for s in subscribers:
            s.stop("quit")
        publisher.stop()
    sent = {f["frameId"]: f.get("poseHash") for f in load_jsonl(pub_log) if "frameId" in f}
    fps, lat, own, shown, each, without_pose, gaps = [], [], 0, 0, [], 0, []
    for i in range(count):
        frames = [f for f in load_jsonl(os.path.join(out, f"subscriber-{i}-frames.jsonl")) if t0 <= f.get("shownNs", 0) <= t1]
        fps.append(len(frames) / seconds)
        mine = [f["latencyMs"] for f in frames if f.get("latencyMs") is not None]
        lat += mine
        each.append({"fps": round(fps[-1], 1), "latency_ms_p50": percentile(mine, 50, 1), "latency_ms_p95": percentile(mine, 95, 1)})
        shown += len(frames)
        without_pose += sum(1 for f in frames if f.get("frameId") is None or f.get("poseHash") is None)
        times = sorted(f["shownNs"] for f in frames)
        gaps.append(max((b - a for a, b in zip(times, times[1:])), default=0) / 1e6)
        each[-1]["longest_gap_ms"] = round(gaps[-1])
        own += sum(1 for f in frames if f.get("frameId") is not None and sent.get(f["frameId"]) == f.get("poseHash"))
    return {"path": path, "subscribers": count, "codec": a.codec, "seconds": round(seconds, 1),
            "publisher_cpu_pct": round(pub_cpu, 1), "publisher_upload_kbps": round((up1 - up0) * 8 / 1000 / seconds),
            "encoder_kbps": encoder_kbps, "janus_cpu_pct": round(janus_cpu, 1) if path == "sfu" else None,
            "subscribers_cpu_pct": round(sub_cpu, 1),
            "fps_min": round(min(fps), 1), "fps_mean": round(sum(fps) / count, 1),
            "latency_ms_p50": percentile(lat, 50, 1), "latency_ms_p95": percentile(lat, 95, 1),
            "latency_ms_p95_worst": max((e["latency_ms_p95"] or 0) for e in each),
            "own_pose_pct": round(100 * own / shown, 2) if shown else None,
            "frames_without_pose": without_pose, "watchdog_restarts": restarts,
            "longest_gap_ms_worst": round(max(gaps, default=0)),
            "resolution_steps": {"down": steps[0], "up": steps[1]} if a.step else None,
            # Each subscriber's own figures (the ones above pool them).
            "each": each}


def plot(rows, path):
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    panels = [("publisher_upload_kbps", "publisher upload (kbit/s; its encoder dashed)"), ("publisher_cpu_pct", "publisher CPU (% of a core)"),
              ("fps_min", "slowest subscriber (fps)"), ("latency_ms_p95", "latency p95, p50 dashed (ms)")]
    colours = {"direct": "#c44e52", "sfu": "#4c72b0"}
    for axis, (key, title) in zip(axes, panels):
        for p in ("direct", "sfu"):
            r = [x for x in rows if x["path"] == p]
            axis.plot([x["subscribers"] for x in r], [x[key] for x in r], marker="o", color=colours[p],
                      label="through Janus" if p == "sfu" else "direct")
            dashed = {"latency_ms_p95": "latency_ms_p50", "publisher_upload_kbps": "encoder_kbps"}.get(key)
            if dashed:
                axis.plot([x["subscribers"] for x in r], [x[dashed] or 0 for x in r], marker=".", linestyle="--",
                          color=colours[p])
        axis.set_xscale("log", base=2)
        axis.set_xticks(sorted({x["subscribers"] for x in rows}))
        axis.set_xticklabels([str(n) for n in sorted({x["subscribers"] for x in rows})])
        axis.set_xlabel("subscribers")
        axis.set_title(title)
        axis.set_ylim(bottom=0)
        axis.legend()
    fig.suptitle(f"1 → {max(x['subscribers'] for x in rows)} subscribers, direct and through Janus "
                 f"({rows[0]['codec']}, one 2-core machine: publisher, Janus and every subscriber share it)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot: {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--counts", default="1,2,4,8,16", help="subscriber counts, comma-separated")
    ap.add_argument("--paths", default="direct,sfu")
    ap.add_argument("--codec", default="h264", choices=["h264", "vp8"])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--out", default="out/bench-sfu")
    ap.add_argument("--step", action="store_true", help="force a resolution step down and up inside the window")
    ap.add_argument("--replot", help="only draw the plot again from a saved log of this script's JSON lines")
    ap.add_argument("--edges", type=int, default=0,
                    help="a cascade instead: publisher → origin Janus → this many edge Janus servers (scripts/lib/bench_cascade.py)")
    ap.add_argument("--per-edge", type=int, default=2, help="with --edges: subscribers on each edge")
    ap.add_argument("--origin-subscribers", type=int, default=1, help="with --edges: subscribers on the origin (the one-hop reference)")
    ap.add_argument("--restart-edge", action="store_true", help="with --edges: kill the first edge's Janus after the window and start it again")
    a = ap.parse_args()
    if a.edges:
        import bench_cascade
        return bench_cascade.main(a)
    if a.replot:
        with open(a.replot) as f:
            rows = [json.loads(line) for line in f if line.startswith("{")]
        os.makedirs(a.out, exist_ok=True)
        return plot(rows, os.path.join(a.out, "sfu.png"))
    if not shutil.which("janus"):
        sys.exit("bench-sfu: janus is not installed (bash scripts/setup installs Debian's janus)")
    os.makedirs(a.out, exist_ok=True)
    net = Network()
    janus = Proc("janus", net.argv(net.name, ["/bin/bash", "scripts/sfu", "--port", "8188",
                                              "--config-dir", os.path.join(os.path.abspath(a.out), "janus-config")]), a.out)
    rows = []
    try:
        time.sleep(2)
        port = 18000
        for count in [int(c) for c in a.counts.split(",")]:
            for path in a.paths.split(","):
                port += 1
                row = run(a, net, janus, path, count, port)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        janus.stop()
        net.close()
    if rows:
        plot(rows, os.path.join(a.out, "sfu.png"))


if __name__ == "__main__":
    main()
