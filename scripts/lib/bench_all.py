"""The Python half of scripts/bench-all.

  names                          the scripts bench-all runs by default, in order, one a line
  run OUT NAME -- CMD…           runs CMD with stdout to OUT/NAME.jsonl and stderr to OUT/NAME.err,
                                 appends its record to OUT/runs.jsonl; exits with CMD's status
  docs RUNS_JSONL DOCS_FILE      rewrites the generated region of DOCS_FILE from RUNS_JSONL

A record: {"name", "command", "started" (UTC, ISO), "seconds", "load_before", "load_after"
(1-min load average), "exit", "lines" (the JSON objects of its stdout), "stdout", "stderr",
"plots" (PNG paths its stderr names; the docs show copies under images/), "last_stderr" (its last stderr line), "machine"}."""
import datetime, json, os, platform, re, shlex, shutil, subprocess, sys, time

# Cheap ones first: a failure or a hang late in the run costs the least there.
ORDER = ["bench-render", "bench-tags", "bench-focus", "bench-trailer", "bench-window", "bench-window-cpu", "bench-loss", "bench-annotation",
         "bench-av", "bench-voice", "bench-network", "bench-paths", "bench-chromium-load", "bench-effects", "bench-people", "bench-loopback", "bench-sfu", "bench-encoders",
         "hostile", "soak"]

# The columns of each script's tables, in this order (a table shows those its lines have).
KEYS = {
    "bench-render": ["width", "height", "frames", "ms_p50", "ms_p95", "fps"],
    "bench-tags": ["path", "width", "height", "decimate", "in_view_with_pose_pct", "poses_without_tag_in_view", "wrong_poses",
                   "error_cm_p95", "error_deg_p95", "ms_p50", "ms_p95"],
    "bench-focus": ["frames_p50", "frames_p95", "frames_max", "taps", "converged", "within_15_frames",
                    "peak_ratio_min", "peak_ratio_p50", "process_us_p50"],
    "bench-trailer": ["measure", "extension", "trailer", "packets_per_frame", "kbps", "publisher", "frames",
                      "subscriber", "chromium", "chromium_malformed", "seconds", "presented_with_pose"],
    "bench-window": ["display", "run", "latency_ms_p50", "latency_ms_p95", "latency_ms_p99", "max_first_second",
                     "frames_shown", "pose_pct", "p95_no_window_worst", "p95_window_worst", "p95_difference_ms",
                     "target_ms"],
    "bench-window-cpu": ["way", "subscriber_cpu_pct", "xvfb_cpu_pct", "fps", "load", "burners", "size",
                         "window_over_headless_pct", "sink_over_headless_pct"],
    "bench-loss": ["loss_pct", "frames_lost", "decoded_fps_during_loss", "pose_pct", "wrong_poses", "rtx_delivered",
                   "nack_sent", "keyframe_requests", "recovery_ms", "latency_p50_ms", "latency_p95_ms"],
    "bench-annotation": ["delay_ms", "taps", "synced_px_p50", "synced_px_p95", "synced_cm_p50", "synced_in_front",
                         "ground_px_p95", "ground_cm_p95", "naive_px_p50", "naive_px_p95", "naive_cm_p95",
                         "naive_over_synced_px_p95"],
    "bench-voice": ["direction", "stoi", "mouth_to_ear_ms", "frames_lost_pct", "switch_worst_ms", "switch_missed",
                    "muted_kbps", "room_ms_asked", "room_ms_measured", "erle_db", "load"],
    "bench-av": ["run", "publisher_cpu_pct", "expert_cpu_pct", "voice_cpu_pct_publisher", "voice_cpu_pct_expert",
                 "av_offset_ms_p50", "av_offset_ms_p95", "field_to_expert_ms_p50", "field_to_expert_ms_p95",
                 "expert_to_field_ms_p50", "expert_to_field_ms_p95"],
    # Per step, then per mode; the per-second lines are too many for the page.
    "bench-network": ["mode", "step", "link", "sent_kbps_mean", "fps_mean", "fps_min", "encoded_sizes",
                      "latency_ms_p95_median", "seconds_without_frames", "frames_shown", "pose_pct",
                      "freezes_over_1s", "longest_freeze_ms"],
    "bench-paths": ["scenario", "codec", "met", "fps_mean", "sent_kbps_mean", "latency_ms_p95_median",
                    "longest_freeze_ms", "own_pose_pct_min", "keyframe_requests_per_min", "queueing_cuts", "sizes",
                    "load_1m_before"],
    "bench-chromium-load": ["mode", "burners", "load_after", "estimate_kbps_median", "estimate_kbps_min",
                            "sent_kbps_median", "remb_kbps_min", "transport_feedback", "chromium_fps_mean", "sizes",
                            "freezes", "met"],
    "bench-people": ["picture", "size", "decoded", "person_kept_pct", "background_replaced_pct", "halo_levels", "foreground_pct", "meets"],
    "bench-effects": ["size", "effect", "ms_per_frame", "cpu_pct", "added_cpu_pct", "stream_thread_cpu_pct",
                      "added_stream_cpu_pct", "fps", "segmentations_per_s"],
    "bench-loopback": ["subscribers", "latency_ms_p50", "latency_ms_p95", "latency_ms_p99", "codec_ms_p50", "fps_min",
                       "pose_pct", "pub_cpu_pct", "sub_cpu_pct_mean", "bitrate_kbps", "baseline_latency_ms_p50",
                       "tap_round_trip_ms_p50"],
    "bench-sfu": ["path", "subscribers", "publisher_cpu_pct", "publisher_upload_kbps", "janus_cpu_pct", "fps_min",
                  "latency_ms_p50", "latency_ms_p95", "latency_ms_p95_worst", "own_pose_pct"],
    "bench-encoders": ["config", "burners", "latency_ms_p50", "latency_ms_p95", "encode_ms_p50", "fps_min",
                       "pub_cpu_pct", "bitrate_kbps", "psnr_db_p50", "ssim_p50", "ssim_p5", "pose_pct"],
    "hostile": ["case", "codec", "ok", "observed", "error", "cases", "passed", "failed", "seconds"],
    "soak": ["minutes", "samples", "rss_growth_pct", "fd_growth", "frames", "pose_pct", "requests", "acks", "errors",
             "ok", "failure"],
}
FALLBACK_COLUMNS = 10
NESTED_CHARS = 40
MAX_ROWS = 30

BEGIN = "<!-- bench-all: begin (generated by scripts/bench-all; do not edit by hand) -->"
END = "<!-- bench-all: end -->"
TITLE = "## Current figures (scripts/bench-all)"
INTRO = ("These figures are regenerated from the scripts' own JSON lines by `bash scripts/bench-all`; "
         "the dated sections below are the history of how they were reached.")
MACHINE = "Machine: "


# --- run --------------------------------------------------------------------------------

def load_1m():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def machine():
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                 platform.machine())
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return {"nproc": int(nproc) if nproc.isdigit() else os.cpu_count(), "cpu": model, "kernel": platform.release()}


def json_objects(text):
    """The JSON objects among the lines of text (other lines are the scripts' prose)."""
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("{"):
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if isinstance(o, dict):
                out.append(o)
    return out


def run(out, name, cmd):
    os.makedirs(out, exist_ok=True)
    stdout, stderr = os.path.join(out, f"{name}.jsonl"), os.path.join(out, f"{name}.err")
    record = {"name": name, "command": shlex.join(cmd),
              "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "load_before": load_1m()}
    print(f"bench-all: {name}: {record['command']} (stderr: {stderr})", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    with open(stdout, "w") as o, open(stderr, "w") as e:
        try:
            code = subprocess.run(cmd, stdout=o, stderr=e, stdin=subprocess.DEVNULL).returncode
        except OSError as error:   # not executable, not found: a failed script like any other
            print(f"bench-all: {error}", file=e)
            code = 127
    record["seconds"] = round(time.monotonic() - t0, 1)
    record["load_after"] = load_1m()
    record["exit"] = code
    with open(stdout) as f:
        record["lines"] = json_objects(f.read())
    with open(stderr, errors="replace") as f:
        err = f.read()
    record["stdout"], record["stderr"] = stdout, stderr
    record["plots"] = list(dict.fromkeys(re.findall(r"[\w./-]+\.png\b", err)))
    tail = [line for line in err.splitlines() if line.strip()]
    record["last_stderr"] = tail[-1].strip() if tail else None
    record["machine"] = machine()
    with open(os.path.join(out, "runs.jsonl"), "a") as f:
        f.write(json.dumps(record) + "\n")
    state = "ok" if code == 0 else f"FAILED (exit {code})"
    print(f"bench-all: {name}: {state} in {record['seconds']:g} s, {len(record['lines'])} JSON line(s)",
          file=sys.stderr, flush=True)
    return code


# --- docs -------------------------------------------------------------------------------

def cell(v):
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        s = f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) >= 1 or v == 0 else f"{v:.3g}"
        return s if s != "-0" else "0"
    if isinstance(v, (dict, list)):
        s = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
        v = s if len(s) <= NESTED_CHARS else s[:NESTED_CHARS - 1] + "…"
    return str(v).replace("\n", " ").replace("|", "\\|")


def groups(lines):
    """Lines of much the same keys together: a line joins the first group whose first line's
    keys are a subset or superset of its own or share 40 % of their union with it."""
    out = []
    for line in lines:
        keys = set(line)
        for g in out:
            first = set(g[0])
            if keys <= first or first <= keys or len(keys & first) >= 0.4 * len(keys | first):
                g.append(line)
                break
        else:
            out.append([line])
    return out


def columns(name, rows):
    present = set().union(*rows)
    chosen = [k for k in KEYS.get(name, []) if k in present]
    if chosen:
        return chosen
    scalar = []
    for r in rows:
        scalar += [k for k, v in r.items() if not isinstance(v, (dict, list)) and k not in scalar]
    return scalar[:FALLBACK_COLUMNS]


def table(cols, rows):
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(cell(r.get(c)) for c in cols) + " |" for r in rows]
    return out


def subsection(r):
    exit_ = "exit 0" if r["exit"] == 0 else f"**FAILED** (exit {r['exit']})"
    out = [f"### {r['name']}", "",
           f"`{r['command']}` · {r['started']} · {r['seconds']:g} s · load {r['load_before']:g} → {r['load_after']:g}"
           f" · {exit_}", ""]
    if r["exit"] != 0 and r.get("last_stderr"):
        out += [f"Last line of `{r['stderr']}`: `{r['last_stderr'].replace('`', chr(39))}`", ""]
    if not r["lines"]:
        out += ["No JSON lines.", ""]
    for rows in groups(r["lines"]):
        cols = columns(r["name"], rows)
        if len(rows) > MAX_ROWS:
            keys = ", ".join(list(rows[0])[:4])
            out += [f"{len(rows)} per-second (or per-sample) lines ({keys}, …) in `{r['stdout']}`.", ""]
        else:
            out += table(cols, rows) + [""]
    for plot in r.get("pictures", []):
        out += [f"![{r['name']}: {os.path.basename(plot)}]({plot})", ""]
    return "\n".join(out).rstrip("\n")


def keep_pictures(record, docs_path):
    """Copies the run's plots beside the docs (images/bench-all-[NAME-]FILE.png, which git
    keeps) and notes their paths relative to the docs in record["pictures"]."""
    images = os.path.join(os.path.dirname(docs_path), "images")
    record["pictures"] = []
    for plot in record.get("plots", []):
        if not os.path.isfile(plot):
            continue
        os.makedirs(images, exist_ok=True)
        base = os.path.basename(plot)
        name = f"bench-all-{base}" if base.startswith(record["name"]) else f"bench-all-{record['name']}-{base}"
        shutil.copyfile(plot, os.path.join(images, name))
        record["pictures"].append(f"images/{name}")


def machine_line(m):
    return f"{MACHINE}{m['nproc']} cores (`nproc`), {m['cpu']}, kernel {m['kernel']}."


def parse_region(body):
    """(machine line or None, {name: subsection text}) of an existing generated region."""
    machine, subs, name = None, {}, None
    for line in body.split("\n"):
        if line.startswith("### "):
            name = line[4:].strip()
            subs[name] = [line]
        elif name is not None:
            subs[name].append(line)
        elif line.startswith(MACHINE):
            machine = line
    return machine, {n: "\n".join(ls).rstrip("\n") for n, ls in subs.items()}


def region(records, old_body):
    old_machine, old = parse_region(old_body)
    new = {r["name"]: subsection(r) for r in records}
    names = [n for n in ORDER if n in new or n in old]
    names += [n for n in list(old) + list(new) if n not in names and n not in ORDER]
    names = list(dict.fromkeys(names))
    m = machine_line(records[-1]["machine"]) if records and records[-1].get("machine") else old_machine
    parts = [TITLE, INTRO] + ([m] if m else []) + [new.get(n) or old[n] for n in names]
    return "\n\n".join(parts) + "\n\n"


def docs(runs_path, docs_path):
    records = {}
    with open(runs_path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                records[r["name"]] = r   # a name run twice: its last run
    for r in records.values():
        keep_pictures(r, docs_path)
    with open(docs_path) as f:
        text = f.read()
    if BEGIN in text and END in text.split(BEGIN, 1)[1]:
        head, rest = text.split(BEGIN, 1)
        body, tail = rest.split(END, 1)
        body = body.strip("\n")
        text = head + BEGIN + "\n" + region(list(records.values()), body) + END + tail
    else:
        # Before the first "## " heading after the title: right after the opening paragraph.
        match = re.search(r"^## ", text, flags=re.M)
        at = match.start() if match else len(text)
        gap = "" if match or not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
        text = text[:at] + gap + BEGIN + "\n" + region(list(records.values()), "") + END + ("\n\n" if match else "\n") + text[at:]
    with open(docs_path, "w") as f:
        f.write(text)
    print(f"bench-all: wrote the generated region of {docs_path} ({len(records)} script(s) from {runs_path})",
          file=sys.stderr)


def main():
    command, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if command == "names" and not args:
        print("\n".join(ORDER))
    elif command == "run" and len(args) >= 4 and args[2] == "--":
        sys.exit(run(args[0], args[1], args[3:]))
    elif command == "docs" and len(args) == 2:
        docs(args[0], args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
