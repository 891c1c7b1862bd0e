"""Two-way voice on loopback: mouth-to-ear latency, A/V offset, CPU (scripts/bench-av)."""
import argparse, json, os, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from plots import pyplot
from procs import BusyLoops, Proc, cpu_ticks, CLK_TCK, wait_until
from stats import percentile


def run(a, voice):
    out = os.path.join(a.out, "voice" if voice else "no-voice")
    os.makedirs(out, exist_ok=True)
    signaling = Proc("signaling", [os.path.join(a.bin, "posecast-signaling"), "--port", "0"], out)
    wait_until(lambda: any(o.get("text", "").startswith("listening ") for _, o in signaling.events()), 20, "signaling")
    url = next(o["text"].split(" ", 1)[1] for _, o in signaling.events() if o.get("text", "").startswith("listening "))
    pub_voice = ["--microphone", "bursts=1000", "--speaker", "discard", "--detect-tones", "2000"] if voice \
        else ["--microphone", "none", "--speaker", "none"]
    sub_voice = ["--microphone", "bursts=2000", "--speaker", "discard", "--av-sync", "1000"] if voice \
        else ["--microphone", "none", "--speaker", "none"]
    publisher = Proc("publisher", [os.path.join(a.bin, "posecast-publisher"), "--source", "synthetic", "--flash",
                                   "--signaling", url, "--json"] + pub_voice, out)
    expert = None
    try:
        wait_until(lambda: publisher.events("signalingConnected"), 20, "publisher registered")
        expert = Proc("expert", [os.path.join(a.bin, "posecast-subscriber"), "--headless", "--json", "--signaling", url]
                      + sub_voice, out, stdin=True)
        wait_until(lambda: len(expert.events("status")) >= 3 and expert.events("connected"), 40, "expert connected")
        time.sleep(2)  # settle
        t0, n_pub, n_sub = time.monotonic(), len(publisher.events()), len(expert.events())
        c_pub, c_sub = cpu_ticks(publisher.pid), cpu_ticks(expert.pid)
        time.sleep(a.seconds)
        elapsed = time.monotonic() - t0
        pub_cpu = (cpu_ticks(publisher.pid) - c_pub) / CLK_TCK / elapsed * 100
        sub_cpu = (cpu_ticks(expert.pid) - c_sub) / CLK_TCK / elapsed * 100
        pub_events = [o for _, o in publisher.events()[n_pub:]]
        sub_events = [o for _, o in expert.events()[n_sub:]]
    finally:
        if expert:
            expert.stop("quit")
        publisher.stop()
        signaling.stop()
    row = {"run": "voice" if voice else "no-voice", "seconds": a.seconds, "burners": a.burners,
           "publisher_cpu_pct": round(pub_cpu, 1), "expert_cpu_pct": round(sub_cpu, 1)}
    if voice:
        pairs = [o for o in sub_events if o.get("event") == "avSync"]
        offsets = [o["offsetMs"] for o in pairs]
        to_expert = [o["audioMs"] for o in pairs]
        # The expert's bursts start at whole seconds of the wall clock: the onset where the field plays it, less that second.
        to_field = [(o["atNanos"] % 1_000_000_000) / 1e6 for o in pub_events
                    if o.get("event") == "tone" and o.get("started") and o.get("hertz") == 2000]
        to_field = [ms for ms in to_field if ms < 500]
        video = [o["videoMs"] for o in pairs]
        row.update({
            "pairs": len(pairs),
            "av_offset_ms_p50": percentile(offsets, 50, 1), "av_offset_ms_p95": percentile(offsets, 95, 1),
            "av_offset_abs_ms_max": round(max(map(abs, offsets)), 1) if offsets else None,
            "field_to_expert_ms_p50": percentile(to_expert, 50, 1), "field_to_expert_ms_p95": percentile(to_expert, 95, 1),
            "expert_to_field_ms_p50": percentile(to_field, 50, 1), "expert_to_field_ms_p95": percentile(to_field, 95, 1),
            "flash_video_ms_p50": percentile(video, 50, 1),
            "_offsets": offsets, "_to_expert": to_expert, "_to_field": to_field,
        })
    return row


def plot(row, path):
    plt = pyplot()
    if plt is None or "_offsets" not in row:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].plot(row["_offsets"], marker="o", linestyle="-", color="#4c72b0")
    for y in (45, -45):
        axes[0].axhline(y, color="#c44e52", linestyle="--")
    axes[0].set_ylabel("audio after video (ms)")
    axes[0].set_xlabel("flash-and-burst pair (one a second)")
    axes[0].set_title("A/V offset at the expert (±45 ms band)")
    axes[1].hist([row["_to_expert"], row["_to_field"]], bins=20, label=["field → expert", "expert → field"],
                 color=["#55a868", "#dd8452"])
    axes[1].set_xlabel("mouth-to-ear (ms)")
    axes[1].set_title("voice latency on loopback")
    axes[1].legend()
    fig.suptitle(f"Two-way voice, release build, {row['burners']} busy loops beside")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--burners", type=int, default=0)
    ap.add_argument("--out", default="out/bench-av")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with BusyLoops(a.burners):
        off = run(a, False)
        print(json.dumps(off), flush=True)
        on = run(a, True)
        on["voice_cpu_pct_publisher"] = round(on["publisher_cpu_pct"] - off["publisher_cpu_pct"], 1)
        on["voice_cpu_pct_expert"] = round(on["expert_cpu_pct"] - off["expert_cpu_pct"], 1)
        print(json.dumps({k: v for k, v in on.items() if not k.startswith("_")}), flush=True)
        plot(on, os.path.join(a.out, "av.png"))


if __name__ == "__main__":
    main()
