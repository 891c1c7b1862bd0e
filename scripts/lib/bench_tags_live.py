"""The live part of scripts/bench-tags: glass-to-glass latency with AprilTag tracking off
and on, in one invocation. Each side is one bench-loopback run (scripts/lib/bench_loopback.py:
posecast-signaling, posecast-publisher on the synthetic camera, one headless
posecast-subscriber, frame logs joined by frame id), the publisher painting the scene's
tag field in both (`--scene-tags field`); "on" adds `--pose apriltag`, so each frame's
pose is the one its own tags give. Prints one JSON line.

    python3 scripts/lib/bench_tags_live.py --bin DIR --out DIR [--seconds 20]
"""
import argparse, json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procs import load_jsonl  # noqa: E402


def run(a, name, publisher_args):
    out = os.path.join(a.out, name)
    argv = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_loopback.py"),
            "--bin", a.bin, "--subscribers", "1", "--no-baseline", "--seconds", str(a.seconds), "--out", out]
    argv += [f"--publisher-arg={x}" for x in publisher_args]
    done = subprocess.run(argv, capture_output=True, text=True)
    with open(os.path.join(a.out, f"{name}.err"), "w") as f:
        f.write(done.stderr)
    if done.returncode != 0:
        sys.exit(f"bench-tags: the {name} loopback run failed ({done.returncode}); see {a.out}/{name}.err")
    line = json.loads([l for l in done.stdout.splitlines() if l.startswith("{")][0])
    # The publisher's own count of frames its tags gave a pose (status lines).
    status = [o for o in load_jsonl(os.path.join(out, "publisher-tuned-1.jsonl")) if o.get("event") == "status"]
    return line, (status[-1] if status else {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    off, _ = run(a, "tracking-off", ["--scene-tags", "field"])
    on, status = run(a, "tracking-on", ["--scene-tags", "field", "--pose", "apriltag"])
    result = {"live": True, "seconds": a.seconds, "width": off.get("width"), "height": off.get("height")}
    for key in ("latency_ms_p50", "latency_ms_p95", "latency_ms_p99", "fps_min", "pose_pct", "wrong_poses",
                "pub_cpu_pct", "loadavg_1m"):
        result[f"{key}_tracking_off"] = off.get(key)
        result[f"{key}_tracking_on"] = on.get(key)
    frames, posed = status.get("tag_frames"), status.get("tag_frames_with_pose")
    result["tag_frames"] = frames
    result["tag_frames_with_pose_pct"] = round(100 * posed / frames, 1) if frames else None
    result["tag_ms"] = status.get("tag_ms")
    if off.get("latency_ms_p50") and on.get("latency_ms_p50"):
        result["latency_ms_p50_added"] = round(on["latency_ms_p50"] - off["latency_ms_p50"], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
