"""A cascade of Janus servers (scripts/bench-sfu --edges N): publisher → origin → N edges → subscribers.

Every part has a network namespace of its own, joined by one bridge in a hub namespace
(one veth each): the publisher (10.78.K.2), the origin Janus (.10), edge i (.10+i), the
origin's own subscribers (.50: one hop after the publisher's) and the edges' subscribers
(.60, each on its edge). Each namespace's veth counters are its own traffic: the
publisher's upload, the origin's upload (to the edges plus its own subscribers, whose
download is counted apart), each edge's download (from the origin) and upload.
posecast-cascade (in the origin's namespace) relays the room to every edge.

After every subscriber shows frames, for --seconds: each subscriber's fps and
capture-to-shown latency (its --frame-log), the share of its frames with their own pose
(the publisher's frame log), the CPU of the publisher and of each Janus, and the bytes
each node sent and received. The added latency of a hop is the edge subscribers'
latency percentile minus the origin subscribers' (same publisher, same frames, same
machine). --restart-edge then kills edge 1's Janus, starts it again 1 s later and times
until its subscribers show frames again (the cascade relays to it again)."""
import json, os, random, shutil, subprocess, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from plots import pyplot
from procs import Proc, cpu_ticks, CLK_TCK, wait_until, load_jsonl
from stats import percentile


def ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


class Star:
    """Namespaces on one bridge; removed by close()."""

    def __init__(self, nodes):
        k = random.randint(10, 250)
        self.tag = f"posecast-casc-{os.getpid()}"
        self.hub = f"{self.tag}-hub"
        self.spaces, self.address = {}, {}
        made = [self.hub]
        try:
            ip("netns", "add", self.hub)
            ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
            ip("-n", self.hub, "link", "set", "br0", "up")
            for i, (node, host) in enumerate(nodes.items()):
                space = f"{self.tag}-{node}"
                ip("netns", "add", space)
                made.append(space)
                port = f"p{i}"
                for step in (["-n", space, "link", "set", "lo", "up"],
                             ["-n", self.hub, "link", "add", port, "type", "veth", "peer", "name", "eth0"],
                             ["-n", self.hub, "link", "set", "eth0", "netns", space],
                             ["-n", self.hub, "link", "set", port, "master", "br0"],
                             ["-n", self.hub, "link", "set", port, "up"],
                             ["-n", space, "addr", "add", f"10.78.{k}.{host}/24", "dev", "eth0"],
                             ["-n", space, "link", "set", "eth0", "up"]):
                    ip(*step)
                self.spaces[node], self.address[node] = space, f"10.78.{k}.{host}"
        except subprocess.CalledProcessError as error:
            self.spaces = {n: n for n in made}
            self.close()
            sys.exit(f"bench-sfu: network namespaces are refused here (`ip {' '.join(error.cmd[1:])}`: {error.stderr.strip()})")

    def argv(self, node, argv):
        return ["ip", "netns", "exec", self.spaces[node]] + argv

    def counters(self, node):
        """(bytes sent, bytes received) on the node's veth."""
        read = lambda what: int(subprocess.run(["ip", "netns", "exec", self.spaces[node], "cat",
                                                f"/sys/class/net/eth0/statistics/{what}_bytes"],
                                               check=True, capture_output=True, text=True).stdout)
        return read("tx"), read("rx")

    def close(self):
        for space in list(self.spaces.values()) + [self.hub]:
            ip("netns", "delete", space, check=False)


def last_status(proc):
    statuses = proc.events("status")
    return statuses[-1][1] if statuses else {}


def start_janus(star, node, out):
    return Proc(f"janus-{node}", star.argv(node, ["/bin/bash", "scripts/sfu", "--port", "8188",
                                                  "--config-dir", os.path.join(os.path.abspath(out), f"janus-{node}")]), out)


def frames_in(path, t0, t1):
    return [f for f in load_jsonl(path) if t0 <= f.get("shownNs", 0) <= t1]


def run(a):
    edges = [f"edge{i + 1}" for i in range(a.edges)]
    nodes = {"publisher": 2, "origin": 10, **{e: 11 + i for i, e in enumerate(edges)}, "near": 50, "far": 60}
    out = os.path.join(a.out, f"cascade-{a.edges}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    star = Star(nodes)
    room = str(random.randint(1000, 9999))
    janus = {}
    procs = []
    try:
        for node in ["origin"] + edges:
            janus[node] = start_janus(star, node, out)
        time.sleep(2)
        url = lambda node: f"ws://{star.address[node]}:8188/"
        cascade = Proc("cascade", star.argv("origin", [os.path.join(a.bin, "posecast-cascade"), "--json", "--origin", url("origin"),
                                                       "--room", room] + sum((["--edge", url(e)] for e in edges), [])), out)
        procs.append(cascade)
        quiet = ["--microphone", "none", "--speaker", "none"]
        pub_log = os.path.join(out, "publisher-frames.jsonl")
        publisher = Proc("publisher", star.argv("publisher", [
            os.path.join(a.bin, "posecast-publisher"), "--source", "synthetic", "--codec", a.codec, "--json",
            "--listen", f"{star.address['publisher']}:18000", "--frame-log", pub_log,
            "--sfu", f"janus:{url('origin')}", "--room", room] + quiet), out)
        procs.append(publisher)
        wait_until(lambda: publisher.events("listening"), 30, "the publisher's signaling")
        signaling = publisher.events("listening")[0][1]["url"]
        wait_until(lambda: len(cascade.events("relayStarted")) >= a.edges, 60, f"the cascade relaying to {a.edges} edges")
        subscribers = []  # (name, hop, edge or None, proc)
        plan = [("origin", None)] * a.origin_subscribers + [(e, e) for e in edges for _ in range(a.per_edge)]
        for i, (server, edge) in enumerate(plan):
            name = f"subscriber-{i}-{server}"
            proc = Proc(name, star.argv("near" if edge is None else "far", [
                os.path.join(a.bin, "posecast-subscriber"), "--headless", "--json", "--signaling", signaling,
                "--role", "expert" if i == 0 else "viewer", "--frame-log", os.path.join(out, f"{name}-frames.jsonl"),
                "--sfu", f"janus:{url(server)}", "--room", room] + quiet), out, stdin=True)
            subscribers.append((name, 1 if edge is None else 2, edge, proc))
            procs.append(proc)
        wait_until(lambda: all(last_status(p).get("frames", 0) >= 30 for *_, p in subscribers), 60 + 5 * len(plan),
                   f"{len(plan)} subscribers showing frames")
        time.sleep(2)
        t0 = time.time_ns()
        before = {n: star.counters(n) for n in nodes if n != "hub"}
        cpu0 = {n: cpu_ticks(p.pid) for n, p in janus.items()}
        cpu0["publisher"] = cpu_ticks(publisher.pid)
        time.sleep(a.seconds)
        t1 = time.time_ns()
        after = {n: star.counters(n) for n in before}
        seconds = (t1 - t0) / 1e9
        cpu = {n: round((cpu_ticks(p.pid) - cpu0[n]) / CLK_TCK / seconds * 100, 1) for n, p in list(janus.items()) + [("publisher", publisher)]}
        kbps = lambda node, i: round((after[node][i] - before[node][i]) * 8 / 1000 / seconds)
        restarts = sum(1 for *_, p in subscribers for _, e in p.events("sessionEnded") if "no frames" in e.get("reason", ""))
        recovery = restart_edge(a, star, janus, edges[0], subscribers, cascade, out) if a.restart_edge else None
    finally:
        for p in reversed(procs):
            p.stop("quit" if p.name.startswith("subscriber") else None)
        for p in janus.values():
            p.stop()
        star.close()
    sent = {f["frameId"]: f.get("poseHash") for f in load_jsonl(pub_log) if "frameId" in f}
    each, hop_latency = [], {1: [], 2: []}
    for name, hop, edge, _ in subscribers:
        frames = frames_in(os.path.join(out, f"{name}-frames.jsonl"), t0, t1)
        lat = [f["latencyMs"] for f in frames if f.get("latencyMs") is not None]
        hop_latency[hop] += lat
        own = sum(1 for f in frames if f.get("frameId") is not None and sent.get(f["frameId"]) == f.get("poseHash"))
        times = sorted(f["shownNs"] for f in frames)
        each.append({"server": edge or "origin", "fps": round(len(frames) / seconds, 1),
                     "own_pose_pct": round(100 * own / len(frames), 2) if frames else None,
                     "latency_ms_p50": percentile(lat, 50, 1), "latency_ms_p95": percentile(lat, 95, 1),
                     "longest_gap_ms": round(max((b - x for x, b in zip(times, times[1:])), default=0) / 1e6)})
    p = {hop: (percentile(v, 50, 1), percentile(v, 95, 1)) for hop, v in hop_latency.items()}
    added = lambda i: None if p[1][i] is None or p[2][i] is None else round(p[2][i] - p[1][i], 1)
    pub_up = kbps("publisher", 0)
    origin_to_edges = kbps("origin", 0) - kbps("near", 1)
    return {"mode": "cascade", "edges": a.edges, "codec": a.codec, "seconds": round(seconds, 1),
            "subscribers": {"origin": a.origin_subscribers, "per_edge": a.per_edge},
            "own_pose_pct_min": min((e["own_pose_pct"] or 0) for e in each),
            "fps_min": min(e["fps"] for e in each), "watchdog_restarts": restarts,
            "longest_gap_ms_worst": max(e["longest_gap_ms"] for e in each),
            "publisher_upload_kbps": pub_up, "encoder_kbps": last_status(publisher).get("encoder_kbps"),
            "origin_upload_kbps": kbps("origin", 0), "origin_to_edges_kbps": origin_to_edges,
            "origin_streams_per_edge": round(origin_to_edges / a.edges / pub_up, 2) if pub_up else None,
            "edge_download_kbps": {e: kbps(e, 1) for e in edges}, "edge_upload_kbps": {e: kbps(e, 0) for e in edges},
            "latency_ms_hop1": {"p50": p[1][0], "p95": p[1][1]}, "latency_ms_hop2": {"p50": p[2][0], "p95": p[2][1]},
            "added_latency_ms_per_hop": {"p50": added(0), "p95": added(1)},
            "cpu_pct": cpu, "edge_restart": recovery, "each": each}


def restart_edge(a, star, janus, edge, subscribers, cascade, out):
    """Kills an edge's Janus, starts it again 1 s later: seconds from the kill until each
    of its subscribers shows a new frame, and until the cascade relays to it again."""
    mine = [(name, p) for name, _, e, p in subscribers if e == edge]
    janus[edge].p.kill()
    janus[edge].p.wait()
    killed = time.time_ns()
    relays_before = len(cascade.events("relayStarted"))
    time.sleep(1)
    os.makedirs(os.path.join(out, "restarted"), exist_ok=True)
    janus[edge] = start_janus(star, edge, os.path.join(out, "restarted"))

    def shown_after(name):
        frames = [f for f in load_jsonl(os.path.join(out, f"{name}-frames.jsonl")) if f.get("shownNs", 0) > killed + 1_000_000_000]
        return frames[0]["shownNs"] if frames else None
    try:
        wait_until(lambda: all(shown_after(n) for n, _ in mine), 90, f"{edge}'s subscribers back after its restart")
    except TimeoutError as error:
        print(f"bench-sfu: {error}", file=sys.stderr)
    relayed = [t for t, _ in cascade.events("relayStarted")[relays_before:]]
    return {"edge": edge, "relayed_again_s": round((relayed[0] - killed) / 1e9, 2) if relayed else None,
            "subscribers_back_s": [round((shown_after(n) - killed) / 1e9, 2) if shown_after(n) else None for n, _ in mine]}


def plot(row, path):
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    names = ["publisher up", "origin → edges"] + [f"{e} up" for e in row["edge_upload_kbps"]]
    values = [row["publisher_upload_kbps"], row["origin_to_edges_kbps"]] + list(row["edge_upload_kbps"].values())
    axes[0].bar(names, values, color="#4c72b0")
    axes[0].set_title("upload per hop (kbit/s)")
    axes[0].tick_params(axis="x", rotation=30)
    hops = ["hop 1 (origin)", "hop 2 (edge)"]
    axes[1].bar([h + " p50" for h in hops], [row["latency_ms_hop1"]["p50"], row["latency_ms_hop2"]["p50"]], color="#55a868")
    axes[1].bar([h + " p95" for h in hops], [row["latency_ms_hop1"]["p95"], row["latency_ms_hop2"]["p95"]], color="#c44e52")
    axes[1].set_title("capture → shown latency (ms)")
    axes[1].tick_params(axis="x", rotation=30)
    axes[2].bar(list(row["cpu_pct"].keys()), list(row["cpu_pct"].values()), color="#8172b2")
    axes[2].set_title("CPU (% of a core)")
    fig.suptitle(f"publisher → origin Janus → {row['edges']} edges ({row['codec']}, {row['subscribers']['per_edge']} subscribers per edge, "
                 f"{row['subscribers']['origin']} on the origin; own pose ≥ {row['own_pose_pct_min']} %)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot: {path}", file=sys.stderr)


def main(a):
    if not shutil.which("janus"):
        sys.exit("bench-sfu: janus is not installed (bash scripts/setup installs Debian's janus)")
    os.makedirs(a.out, exist_ok=True)
    row = run(a)
    print(json.dumps(row), flush=True)
    plot(row, os.path.join(a.out, f"cascade-{a.edges}.png"))
