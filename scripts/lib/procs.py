"""Starting, watching and stopping the project's executables from the scripts, and what
/proc says about them.

Two ways to run them:
  * ProcessGroup: one process group per run, each process's stdout (JSON lines) and
    stderr in OUT/NAME.jsonl and OUT/NAME.err, read back with Tail;
  * Proc: one process whose stdout JSON lines a reader thread collects with their
    arrival time (and copies to OUT/NAME.jsonl), for figures taken within a time window.
Sampling: sample() (RSS, fds, threads now), cpu_ticks() and thread_ticks() (CPU so far,
per process and per thread, from /proc/PID/stat and /proc/PID/task/*/stat), and Sampler
(CPU over a window and peak RSS of several processes)."""
import json, os, signal, socket, subprocess, sys, threading, time
from events import check

CLK_TCK = os.sysconf("SC_CLK_TCK")


class Tail:
    """New complete JSON lines of a file that another process appends to."""

    def __init__(self, path):
        self.path, self.offset, self.partial = path, 0, ""

    def lines(self):
        try:
            with open(self.path) as f:
                f.seek(self.offset)
                text = f.read()
                self.offset = f.tell()
        except FileNotFoundError:
            return []
        parts = (self.partial + text).split("\n")
        self.partial = parts.pop()
        rows = []
        for line in parts:
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
        return rows


class ProcessGroup:
    def __init__(self, bin_dir, out):
        self.bin_dir, self.out, self.procs, self.tails = bin_dir, out, {}, {}
        os.makedirs(out, exist_ok=True)

    def path(self, name, ext):
        return os.path.join(self.out, f"{name}.{ext}")

    def start(self, name, argv, stdin=None):
        exe = argv[0] if os.sep in argv[0] else os.path.join(self.bin_dir, argv[0])
        p = subprocess.Popen([exe] + argv[1:], stdin=stdin, stdout=open(self.path(name, "jsonl"), "w"),
                             stderr=open(self.path(name, "err"), "w"))
        self.procs[name] = p
        self.tails[name] = Tail(self.path(name, "jsonl"))
        return p

    def start_signaling(self, name="signaling", extra=(), timeout=20):
        """posecast-signaling on a free port; returns its ws:// URL."""
        self.start(name, ["posecast-signaling", "--port", "0", *extra])
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(self.path(name, "jsonl")) as f:
                for line in f:
                    if line.startswith("listening "):
                        return line.split()[1]
            if self.procs[name].poll() is not None:
                break
            time.sleep(0.05)
        raise TimeoutError(f"{name}: not listening within {timeout} s (see {self.path(name, 'err')})")

    def wait_event(self, name, predicate, seconds, what):
        """The first JSON line of NAME matching predicate, or TimeoutError naming what."""
        deadline = time.time() + max(0.0, seconds)
        tail = self.tails[name]
        while True:
            for event in tail.lines():
                if predicate(event):
                    return event
            if self.procs[name].poll() is not None:
                raise TimeoutError(f"{name}: exited ({self.procs[name].returncode}) before {what}")
            if time.time() >= deadline:
                raise TimeoutError(f"{name}: no {what} within {seconds:.1f} s (see {self.path(name, 'err')})")
            time.sleep(0.05)

    def stop_all(self, timeout=15):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def sample(pid):
    """Resident memory (KiB), open file descriptors and threads of a live process."""
    with open(f"/proc/{pid}/status") as f:
        status = f.read()
    field = lambda key: int(next(l.split()[1] for l in status.splitlines() if l.startswith(key + ":")))
    return {"rss_kib": field("VmRSS"), "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": field("Threads")}


class Proc:
    """A started process whose stdout JSON lines are collected with their arrival time
    (time.time_ns()) by a reader thread; the raw lines go to OUTDIR/NAME.jsonl, stderr to
    OUTDIR/NAME.err. A line that is not JSON is kept as {"text": line}. `preexec` runs in
    the child before it executes (e.g. a resource limit)."""

    def __init__(self, name, argv, outdir, stdin=False, preexec=None):
        self.name = name
        self.lines = []
        self.lock = threading.Lock()
        self.err = open(os.path.join(outdir, f"{name}.err"), "w")
        self.raw = open(os.path.join(outdir, f"{name}.jsonl"), "w")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err,
                                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, text=True, bufsize=1,
                                  preexec_fn=preexec)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    @property
    def pid(self):
        return self.p.pid

    def _read(self):
        for line in self.p.stdout:
            self.raw.write(line)
            try:
                obj = json.loads(line)
            except ValueError:
                obj = {"text": line.rstrip("\n")}
            with self.lock:
                self.lines.append((time.time_ns(), obj))

    def events(self, kind=None):
        """[(arrival ns, object)] so far, only those whose "event" is kind when given
        (a name from events.py: an undefined one raises)."""
        if kind is not None:
            check(kind)
        with self.lock:
            return [(t, o) for t, o in self.lines if kind is None or o.get("event") == kind]

    def send(self, line):
        """One line to the process's stdin (started with stdin=True); ignored once it is gone."""
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError, AttributeError):
            pass

    def stop(self, quit_line=None, timeout=5):
        """quit_line on stdin first (2 s to exit), then SIGTERM, then SIGKILL after timeout."""
        if self.p.poll() is None and quit_line:
            self.send(quit_line)
            try:
                self.p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.reader.join(timeout=2)
        self.raw.close()
        self.err.close()


class BusyLoops:
    """`n` processes spinning on the CPU beside a benchmark (its --burners), from the
    `with` block's start to its end."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()
        return False


def wait_until(predicate, timeout, what, poll=0.2):
    """Polls predicate() until it is true, or raises TimeoutError naming what."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(poll)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


def frame_log_has_frame(path):
    """Whether a subscriber's --frame-log holds a shown frame yet."""
    try:
        with open(path) as f:
            return any('"frameId"' in line for line in f)
    except OSError:
        return False


def load_jsonl(path, strict=False):
    """The JSON objects of a file, one a line. Not strict: lines that are not JSON are
    skipped and a missing file is []; strict: blank lines are skipped, anything else
    that is not JSON raises, and so does a missing file."""
    if strict:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def free_port(host="127.0.0.1"):
    """A TCP port nothing listens on now (the kernel's pick for port 0)."""
    s = socket.socket()
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _stat_ticks(text):
    """utime + stime from the text of a /proc stat file (fields after the command name,
    which may hold spaces and parentheses)."""
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu_ticks(pid):
    """utime + stime of a process, in clock ticks (CLK_TCK a second)."""
    with open(f"/proc/{pid}/stat") as f:
        return _stat_ticks(f.read())


def thread_ticks(pid):
    """{tid: (name, ticks)} for every thread of a process ({} once it is gone)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        out[tid] = (name, _stat_ticks(text))
    return out


def rss_mb(pid):
    """Resident memory in MiB (VmRSS), None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class Sampler:
    """CPU over a window (snapshots at start() and finish()) and peak RSS (sampled twice
    a second in between) of processes with .name and .pid (Proc)."""

    def __init__(self, procs):
        self.procs = procs
        self.rss = {p.name: 0.0 for p in procs}
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _snapshot(self):
        snap = {}
        for p in self.procs:
            try:
                snap[p.name] = (cpu_ticks(p.pid), thread_ticks(p.pid))
            except OSError:
                snap[p.name] = None
        return time.monotonic(), snap

    def _run(self):
        while not self.stop_flag.wait(0.5):
            for p in self.procs:
                r = rss_mb(p.pid)
                if r is not None:
                    self.rss[p.name] = max(self.rss[p.name], r)

    def start(self):
        self.t0, self.s0 = self._snapshot()
        self.thread.start()

    def finish(self):
        """({name: CPU %}, {name: [(tid, thread name, CPU %)]}, {name: peak RSS MiB});
        CPU % is of one core, None for a process that was gone at either end."""
        self.t1, self.s1 = self._snapshot()
        self.stop_flag.set()
        self.thread.join()
        dt = self.t1 - self.t0
        cpu, threads = {}, {}
        for p in self.procs:
            a, b = self.s0.get(p.name), self.s1.get(p.name)
            if not a or not b:
                cpu[p.name] = None
                continue
            cpu[p.name] = (b[0] - a[0]) / CLK_TCK / dt * 100
            threads[p.name] = [(tid, name, (ticks - a[1].get(tid, (name, 0))[1]) / CLK_TCK / dt * 100)
                               for tid, (name, ticks) in b[1].items()]
        return cpu, threads, dict(self.rss)
