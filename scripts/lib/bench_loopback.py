#!/usr/bin/env python3
"""Loopback benchmark (issue 6), driven by scripts/bench-loopback.

Starts the real release executables on 127.0.0.1: posecast-signaling (port 0), one
posecast-publisher on the synthetic camera and N headless posecast-subscribers, each
with --frame-log, for every subscriber count and for both latency profiles (tuned,
then webrtcbin's defaults as the baseline). After the peers connect and a warm-up, it
measures for --seconds:

  * capture -> shown latency per frame (capture time from the pose, shown time at the
    subscriber's sink, same host clock), with each stage from the two frame logs
    joined by frame id: capture -> encoder in (render, tag, overlay, clocksync, queue),
    encode, transport = encoder out -> decoder in (payload, tee, webrtcbin both ways,
    jitter buffer, depayload, and any wait behind a sink that blocks the receiving
    streaming thread), decode, decoded -> shown (the sink's clock wait);
  * frames shown per second per subscriber, frames carrying their own pose (same pose
    wire-byte hash and capture time as the publisher's record of that frame id),
    wrong poses;
  * CPU % and peak RSS of every process from /proc (the publisher per thread:
    `encqueue:src` runs the encoder, the busiest `…default-qos` thread renders the
    synthetic camera), bitrate (encoded bytes in the window; RTP kbit/s as the
    publisher reports it);
  * tap -> annotation visible round trips, when posecast-subscriber has
    --check-markers (one subscriber taps known scene features with `tapworld`).

Prints one JSON object per subscriber count as its last lines; writes frame logs,
process output and PNG plots under --out.

With --anchors (and --anchor-python, a Python with aiortc and websockets) it then runs,
on the same frames (the orbit rendered by `posecast-scene frames` at the same size,
1°/frame as the publisher's orbit), an aiortc pair (anchor_aiortc.py) and a headless
Chromium pair (anchor_chromium.py), each for --seconds after --warmup, one at a time,
and prints one {"anchor": …} line each; the first subscriber count's line gets their
p50s over PoseCast's (`anchors`). Each anchor's docstring says how its latency is taken.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procs import Proc, Sampler, load_jsonl, wait_until  # noqa: E402
from stats import percentile, rnd  # noqa: E402
from plots import pyplot  # noqa: E402
from events import EVENT


def pct(values, p):
    """Percentiles as this benchmark reports them: interpolated, 3 decimals."""
    return percentile(values, p, digits=3)


def run_config(a, bins, url, server, n, profile, outdir, features, markers):
    """One configuration: publisher + n subscribers, one latency profile."""
    tag = f"{profile}-{n}"
    room = f"bench-{tag}-{os.getpid()}"
    common = ["--latency-profile", profile]
    # Picture quality: the publisher writes every Nth frame's luma as the encoder gets
    # it, the first subscriber compares what it decodes (PSNR, SSIM; `quality` events).
    quality_dir = os.path.join(outdir, f"quality-{tag}")
    os.makedirs(quality_dir, exist_ok=True)
    for old in os.listdir(quality_dir):
        os.remove(os.path.join(quality_dir, old))
    pub = Proc(f"publisher-{tag}", [bins["publisher"], "--source", "synthetic", "--signaling", url, "--room", room,
                                    "--width", str(a.width), "--height", str(a.height), "--fps", str(a.fps),
                                    "--codec", a.codec, "--bitrate", str(a.bitrate), "--json",
                                    "--frame-log", os.path.join(outdir, f"frames-publisher-{tag}.jsonl"),
                                    "--quality-reference", quality_dir, "--quality-every", str(a.quality_every)]
               + common + a.encoder_option_args + a.publisher_arg, outdir)
    subs = []
    try:
        wait_until(lambda: pub.events(EVENT.signalingConnected) or pub.p.poll() is not None, 20, "the publisher to register")
        if pub.p.poll() is not None:
            raise RuntimeError(f"posecast-publisher exited ({pub.p.returncode}); see {pub.err.name}")
        for i in range(n):
            argv = [bins["subscriber"], "--signaling", url, "--room", room, "--headless", "--json",
                    "--frame-log", os.path.join(outdir, f"frames-subscriber-{tag}-{i}.jsonl")] + common
            if i == 0 and markers:
                argv.append("--check-markers")
            if i == 0:
                argv += ["--quality-reference", quality_dir, "--quality-every", str(a.quality_every)]
            subs.append(Proc(f"subscriber-{tag}-{i}", argv, outdir, stdin=True))

        def all_flowing():
            for s in subs:
                st = [o for _, o in s.events(EVENT.status)]
                if not st or not st[-1].get("connected") or st[-1].get("frames", 0) == 0:
                    return False
            return True
        wait_until(all_flowing, 30, f"{n} subscribers to connect and decode")
        time.sleep(a.warmup)

        procs = [pub, server] + subs
        sampler = Sampler(procs)
        t0 = time.time_ns()
        sampler.start()
        # Taps: one subscriber annotates a known feature every second (clear first, so
        # the publisher draws one annotation at a time).
        next_tap, k = time.monotonic() + 0.5, 0
        end = time.monotonic() + a.seconds
        while time.monotonic() < end:
            if markers and time.monotonic() >= next_tap:
                f = features[k % len(features)]
                x, y, z = f["position"]
                subs[0].send("clear")
                subs[0].send(f"tapworld {x} {y} {z} {f['name']}")
                k += 1
                next_tap += 1.0
            time.sleep(0.05)
        cpu, threads, rss = sampler.finish()
        # Other work on the machine shows in every figure here: note how busy it was.
        loadavg = float(open("/proc/loadavg").read().split()[0])
        t1 = time.time_ns()
        time.sleep(1.0)     # visibility events of the last taps
    finally:
        for s in subs:
            s.stop("quit")
        pub.stop()

    # --- analysis -------------------------------------------------------------
    window_s = (t1 - t0) / 1e9
    pub_frames = {f["frameId"]: f for f in load_jsonl(os.path.join(outdir, f"frames-publisher-{tag}.jsonl"))}
    lat, stages, codec, enc, dec, fps = [], {k: [] for k in ("capture_to_encoder", "encode", "transport", "decode", "decoded_to_shown")}, [], [], [], []
    own = wrong = unmatched = nopose = shown_total = 0
    whole = []      # (latency, stages) of every frame timed end to end
    for i in range(n):
        frames = load_jsonl(os.path.join(outdir, f"frames-subscriber-{tag}-{i}.jsonl"))
        in_window = [f for f in frames if t0 <= f["shownNs"] <= t1]
        fps.append(len(in_window) / window_s)
        for f in in_window:
            shown_total += 1
            fid = f.get("frameId")
            if fid is None:
                nopose += 1
                continue
            p = pub_frames.get(fid)
            if p is None:
                unmatched += 1
            elif p["poseHash"] == f["poseHash"] and p["captureNs"] == f["captureNs"]:
                own += 1
            else:
                wrong += 1
                continue
            if f.get("latencyMs") is not None:
                lat.append(f["latencyMs"])
            if f.get("decodeMs") is not None:
                dec.append(f["decodeMs"])
            if p is None:
                continue
            enc.append(p["encodeMs"])
            if f.get("decodeMs") is not None:
                codec.append(p["encodeMs"] + f["decodeMs"])
                stages["transport"].append((f["decodeInNs"] - p["encodeOutNs"]) / 1e6)
                stages["decode"].append(f["decodeMs"])
            stages["capture_to_encoder"].append((p["encodeInNs"] - p["captureNs"]) / 1e6)
            stages["encode"].append(p["encodeMs"])
            if f.get("decodedNs") is not None:
                stages["decoded_to_shown"].append((f["shownNs"] - f["decodedNs"]) / 1e6)
            if None not in (f.get("latencyMs"), f.get("decodeInNs"), f.get("decodedNs")):
                whole.append((f["latencyMs"], {
                    "capture_to_encoder": (p["encodeInNs"] - p["captureNs"]) / 1e6, "encode": p["encodeMs"],
                    "transport": (f["decodeInNs"] - p["encodeOutNs"]) / 1e6, "decode": f["decodeMs"],
                    "decoded_to_shown": (f["shownNs"] - f["decodedNs"]) / 1e6}))
    # Where the slowest 5% of frames lost their time (mean of each stage over them).
    whole.sort(key=lambda r: r[0])
    worst = whole[int(len(whole) * 0.95):]
    worst_stages = {k: round(statistics.mean(r[1][k] for r in worst), 2) for k in stages} if worst else {}
    pub_window = [f for f in pub_frames.values() if t0 <= f["encodeOutNs"] <= t1]
    bitrate = sum(f["encodedBytes"] for f in pub_window) * 8 / 1000 / window_s
    quality = [o for t, o in (subs[0].events(EVENT.quality) if subs else []) if t0 <= t <= t1]
    psnr, ssim = [o["psnrDb"] for o in quality], [o["ssim"] for o in quality]
    rtt = [o["round_trip_ms"] for _, o in (subs[0].events(EVENT.annotationVisible) if subs else [])
           if o.get("round_trip_ms") is not None]
    # The synthetic camera's render time (the publisher's status, once a second): part of
    # capture -> encoder in, since the capture time is taken before the frame is rendered.
    render = [o["render_ms"] for t, o in pub.events(EVENT.status) if t0 <= t <= t1 and o.get("render_ms") is not None]
    rtp_kbps = [o["kbps"] for t, o in pub.events(EVENT.status) if t0 <= t <= t1 and o.get("kbps") is not None]
    per_thread = threads.get(pub.name, [])
    pub_threads = {}
    for _, name, v in per_thread:
        pub_threads[name] = pub_threads.get(name, 0) + v
    # The encoder runs on the task behind the `encqueue` queue ("encqueue:src"). The
    # synthetic camera's render thread is "synthetic-render" when named; unnamed it
    # inherits its creator's name (a Dispatch worker, "…root.default-qos"), and it is
    # the busiest thread of that name.
    encoder = sum(v for _, name, v in per_thread if name.startswith("encqueue"))
    named = [v for _, name, v in per_thread if name.startswith("synthetic-rend")]
    render_cpu = sum(named) if named else max((v for _, name, v in per_thread if name.endswith("default-qos")), default=None)
    pub_cpu = cpu.get(pub.name)
    sub_cpu = [cpu[s.name] for s in subs if cpu.get(s.name) is not None]
    return {
        "profile": profile, "subscribers": n, "seconds": round(window_s, 1), "loadavg_1m": loadavg,
        "frames": shown_total, "latencies": lat,
        "latency_ms_p50": pct(lat, 50), "latency_ms_p95": pct(lat, 95), "latency_ms_p99": pct(lat, 99),
        "encode_ms_p50": pct(enc, 50), "decode_ms_p50": pct(dec, 50), "codec_ms_p50": pct(codec, 50),
        "stages_ms_p50": {k: pct(v, 50) for k, v in stages.items()}, "render_ms_p50": pct(render, 50),
        "stages_ms_worst5pct": worst_stages,
        "fps_min": rnd(min(fps) if fps else None, 1), "fps_mean": rnd(statistics.mean(fps) if fps else None, 1),
        "fps_per_subscriber": [round(x, 1) for x in fps],
        "pose_pct": rnd(own * 100 / shown_total if shown_total else None, 2),
        "wrong_poses": wrong, "frames_without_pose": nopose, "frames_unmatched": unmatched,
        "pub_cpu_pct": rnd(pub_cpu, 1), "pub_encoder_cpu_pct": rnd(encoder, 1),
        "pub_beyond_encoder_cpu_pct": rnd(pub_cpu - encoder if pub_cpu is not None else None, 1),
        "pub_render_cpu_pct": rnd(render_cpu, 1),
        "pub_beyond_encoder_and_render_cpu_pct": rnd(pub_cpu - encoder - render_cpu
                                                     if pub_cpu is not None and render_cpu is not None else None, 1),
        "pub_threads_cpu_pct": {k: round(v, 1) for k, v in sorted(pub_threads.items(), key=lambda kv: -kv[1]) if v >= 0.5},
        "pub_rss_mb": rnd(rss.get(pub.name), 1),
        "sub_cpu_pct_mean": rnd(statistics.mean(sub_cpu) if sub_cpu else None, 1),
        "sub_cpu_pct_max": rnd(max(sub_cpu) if sub_cpu else None, 1),
        "sub_rss_mb_max": rnd(max((rss[s.name] for s in subs), default=None), 1),
        "signaling_cpu_pct": rnd(cpu.get(server.name), 1), "signaling_rss_mb": rnd(rss.get(server.name), 1),
        "bitrate_kbps": round(bitrate), "rtp_kbps": rnd(statistics.median(rtp_kbps) if rtp_kbps else None, 0),
        "quality_frames": len(quality), "psnr_db_p50": pct(psnr, 50), "psnr_db_p5": pct(psnr, 5),
        "ssim_p50": pct(ssim, 50), "ssim_p5": pct(ssim, 5),
        "taps": len(rtt), "tap_round_trip_ms_p50": pct(rtt, 50), "tap_round_trip_ms_p95": pct(rtt, 95),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--codec", default="h264", choices=["vp8", "h264"])
    ap.add_argument("--bitrate", type=int, default=2000)
    ap.add_argument("--subscribers", default="1,2,4,8")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--out", default="out/bench-loopback")
    ap.add_argument("--quality-every", type=int, default=15, help="compare every Nth frame's picture (PSNR, SSIM)")
    ap.add_argument("--h264-encoder", default="x264", choices=["x264", "openh264"])
    ap.add_argument("--encoder-option", action="append", default=[], metavar="NAME=VALUE",
                    help="an encoder property for the publisher (repeatable)")
    ap.add_argument("--publisher-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for posecast-publisher (repeatable; e.g. --publisher-arg=--pose --publisher-arg=apriltag)")
    ap.add_argument("--anchors", action="store_true", help="also run the aiortc and Chromium anchors")
    ap.add_argument("--anchor-python", default=None, help="a Python with aiortc and websockets (scripts/interop-setup)")
    a = ap.parse_args()
    a.encoder_option_args = [x for o in a.encoder_option for x in ("--encoder-option", o)]
    if a.codec == "h264":
        a.encoder_option_args += ["--h264-encoder", a.h264_encoder]
    counts = [int(x) for x in a.subscribers.split(",")]
    if any(c < 1 or c > 16 for c in counts):
        sys.exit("bench-loopback: --subscribers takes counts in 1…16 (the server's default session limit)")
    os.makedirs(a.out, exist_ok=True)
    bins = {k: os.path.join(a.bin, f"posecast-{k}") for k in ("publisher", "subscriber", "signaling", "scene")}
    helptext = subprocess.run([bins["subscriber"], "--help"], capture_output=True, text=True).stdout
    markers = "--check-markers" in helptext
    if not markers:
        print("bench-loopback: posecast-subscriber has no --check-markers yet: no tap round trips", file=sys.stderr)
    features = [json.loads(l) for l in subprocess.run([bins["scene"], "features", "--json"], capture_output=True,
                                                       text=True, check=True).stdout.splitlines() if l.strip()]
    features = [f for f in features if f["kind"] == "discCenter"]

    server = Proc("signaling", [bins["signaling"], "--port", "0", "--log-level", "warning"], a.out)
    results = []
    try:
        wait_until(lambda: any("listening" in o.get("text", "") for _, o in server.events()), 15, "posecast-signaling")
        url = next(o["text"].split()[1] for _, o in server.events() if "listening" in o.get("text", ""))
        profiles = ["tuned"] + ([] if a.no_baseline else ["baseline"])
        for n in counts:
            row = {}
            for profile in profiles:
                print(f"bench-loopback: {profile}, {n} subscriber(s), {a.seconds:g} s", file=sys.stderr)
                row[profile] = run_config(a, bins, url, server, n, profile, a.out, features, markers)
            results.append(row)
    finally:
        server.stop()

    interval = 1000 / a.fps
    lines = []
    for row in results:
        t = row["tuned"]
        out = {"width": a.width, "height": a.height, "fps": a.fps, "codec": a.codec, "bitrate_target_kbps": a.bitrate,
               "encoder": (a.h264_encoder if a.codec == "h264" else "vp8enc"), "encoder_options": a.encoder_option}
        out.update({k: v for k, v in t.items() if k not in ("latencies", "profile")})
        b = row.get("baseline")
        if b:
            for k in ("latency_ms_p50", "latency_ms_p95", "latency_ms_p99", "codec_ms_p50", "fps_min", "pose_pct",
                      "wrong_poses", "pub_cpu_pct", "stages_ms_p50", "tap_round_trip_ms_p50", "tap_round_trip_ms_p95",
                      "loadavg_1m"):
                out["baseline_" + k] = b[k]
            if t["latency_ms_p50"] and b["latency_ms_p50"]:
                out["baseline_over_tuned_p50"] = round(b["latency_ms_p50"] / t["latency_ms_p50"], 2)
        lp50, cp50 = t["latency_ms_p50"], t["codec_ms_p50"]
        out["latency_over_codec_p50"] = round(lp50 / cp50, 2) if lp50 and cp50 else None
        # The same without the synthetic camera's render (a real camera's exposure and readout).
        r50 = t["render_ms_p50"]
        out["latency_minus_render_over_codec_p50"] = round((lp50 - r50) / cp50, 2) if lp50 and cp50 and r50 else None
        out["targets"] = {
            "p50_le_1_5x_codec": bool(lp50 and cp50 and lp50 <= 1.5 * cp50),
            "p50_3x_below_baseline": bool(out.get("baseline_over_tuned_p50") and out["baseline_over_tuned_p50"] >= 3),
            "p99_le_2_frames": bool(t["latency_ms_p99"] is not None and t["latency_ms_p99"] <= 2 * interval),
            "own_pose_100pct": t["pose_pct"] == 100.0 and t["wrong_poses"] == 0,
            "full_frame_rate": bool(t["fps_min"] and t["fps_min"] >= 0.95 * a.fps),
            "pub_beyond_encoder_le_30pct": bool(t["pub_beyond_encoder_cpu_pct"] is not None
                                                and t["pub_beyond_encoder_cpu_pct"] <= 30),
        }
        lines.append(out)
    anchors = run_anchors(a, bins) if a.anchors else []
    if anchors and lines:
        first = lines[0]
        ratios = {}
        for anchor in anchors:
            if anchor.get("latency_ms_p50") and first.get("latency_ms_p50"):
                ratios[f"{anchor['anchor']}_over_posecast_p50"] = round(anchor["latency_ms_p50"] / first["latency_ms_p50"], 2)
        first["anchors"] = ratios
        first["targets"]["p50_2x_below_every_anchor"] = bool(ratios) and len(ratios) == len(anchors) \
            and all(r >= 2 for r in ratios.values())
    with open(os.path.join(a.out, "results.jsonl"), "w") as f:
        for o in lines + anchors:
            f.write(json.dumps({k: v for k, v in o.items() if k != "latencies_ms"}) + "\n")
    plot(results, a, anchors)
    for o in lines:
        print(json.dumps(o))
    for o in anchors:
        print(json.dumps({k: v for k, v in o.items() if k != "latencies_ms"}))


def run_anchors(a, bins):
    """The aiortc and Chromium anchors on the synthetic camera's frames; an anchor that
    cannot run is reported as {"anchor", "skipped": why}."""
    frames = os.path.join(a.out, f"orbit-{a.width}x{a.height}.i420")
    if not os.path.exists(frames):
        subprocess.run([bins["scene"], "frames", "--out", frames, "--width", str(a.width), "--height", str(a.height),
                        "--frames", "120"], check=True)   # 4 s of orbit, looped: the page holds them all
    common = ["--frames-file", frames, "--width", str(a.width), "--height", str(a.height), "--fps", str(a.fps),
              "--seconds", str(a.seconds), "--warmup", str(a.warmup)]
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    for name, script, extra in (("aiortc", "anchor_aiortc.py", []),
                                ("chromium", "anchor_chromium.py", ["--codec", a.codec, "--bitrate", str(a.bitrate)])):
        if not a.anchor_python:
            out.append({"anchor": name, "skipped": "no Python with aiortc and websockets (scripts/interop-setup)"})
            continue
        if name == "chromium" and not os.path.exists("/usr/bin/chromium"):
            out.append({"anchor": name, "skipped": "no /usr/bin/chromium (apt install chromium)"})
            continue
        if name == "aiortc" and a.codec != "vp8":
            print("bench-loopback: the aiortc anchor sends VP8 whatever --codec says", file=sys.stderr)
        print(f"bench-loopback: anchor {name}, {a.seconds:g} s", file=sys.stderr)
        load = os.getloadavg()[0]
        run = subprocess.run([a.anchor_python, os.path.join(here, script)] + common + extra, capture_output=True, text=True,
                             timeout=a.seconds + a.warmup + 120)
        try:
            result = json.loads(run.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            result = {"anchor": name, "skipped": f"{script} failed ({run.returncode}): {run.stderr.strip()[-400:]}"}
        result["loadavg_1m_before"] = round(load, 2)
        out.append(result)
    return out


def plot(results, a, anchors=()):
    plt = pyplot("matplotlib missing: no plots written")
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for anchor, style in zip(anchors, ("-.", ":")):
        v = sorted(anchor.get("latencies_ms") or [])
        if v:
            ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], style,
                    label=f"anchor {anchor['anchor']} (p50 {anchor['latency_ms_p50']:.1f} ms)")
    for row in results:
        for profile, style in (("tuned", "-"), ("baseline", "--")):
            r = row.get(profile)
            if not r or not r["latencies"]:
                continue
            v = sorted(r["latencies"])
            ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], style,
                    label=f"{profile}, {r['subscribers']} sub (p50 {r['latency_ms_p50']:.1f} ms)")
    ax.axvline(2000 / a.fps, color="grey", lw=0.8, ls=":", label="2 frame intervals")
    ax.set(xscale="log", xlabel="capture → shown latency (ms, log)", ylabel="fraction of frames",
           title=f"Glass-to-glass latency, {a.width}×{a.height}@{a.fps} {a.codec.upper()} on loopback")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "latency.png"), dpi=110)

    ns = [row["tuned"]["subscribers"] for row in results]
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    t = [row["tuned"] for row in results]
    ax[0].plot(ns, [r["pub_cpu_pct"] for r in t], "o-", label="publisher total")
    ax[0].plot(ns, [r["pub_encoder_cpu_pct"] for r in t], "s--", label="publisher encoder thread")
    ax[0].plot(ns, [r["pub_beyond_encoder_cpu_pct"] for r in t], "^:", label="publisher beyond the encoder")
    ax[0].plot(ns, [r["pub_render_cpu_pct"] for r in t], "v:", label="publisher synthetic-camera render")
    ax[0].plot(ns, [r["sub_cpu_pct_mean"] for r in t], "d-", label="subscriber (mean)")
    ax[0].set(xlabel="subscribers", ylabel="CPU (% of one core)", title="CPU (tuned)", ylim=(0, None))
    ax[1].plot(ns, [r["fps_min"] for r in t], "o-", label="tuned, slowest subscriber")
    if all(row.get("baseline") for row in results):
        ax[1].plot(ns, [row["baseline"]["fps_min"] for row in results], "s--", label="baseline, slowest subscriber")
    ax[1].axhline(a.fps, color="grey", lw=0.8, ls=":")
    ax[1].set(xlabel="subscribers", ylabel="frames shown per second", title="Frame rate", ylim=(0, a.fps * 1.1))
    for x in ax:
        x.grid(alpha=0.3)
        x.legend(fontsize=7)
        x.set_xticks(ns)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "cpu-fps.png"), dpi=110)
    print(f"plots: {os.path.join(a.out, 'latency.png')}, {os.path.join(a.out, 'cpu-fps.png')}", file=sys.stderr)


if __name__ == "__main__":
    main()
