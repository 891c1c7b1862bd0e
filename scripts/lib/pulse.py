"""A private PulseAudio server for the voice scripts: its own socket and runtime
directory (nothing of the machine's sound is touched). Each named sink is a 48 kHz mono
channel of one null device, "room" (module-remap-sink onto its aux channels), so
room.monitor records them all sample-aligned in one stream (separate sources recorded
together drifted apart by up to 0.8 s). A sink plays nowhere; its NAME.monitor source
gives back what was played into it, so a "mouth" sink is a microphone and an "ear"
sink's monitor what a node played. The set-up of Tests/SystemTests/PrivatePulseAudio.swift,
but for the one device."""
import os, shutil, subprocess, tempfile, time


class PrivatePulse:
    def __init__(self, sinks, directory=None):
        self.directory = directory or tempfile.mkdtemp(prefix="posecast-pulse-")
        self.sinks = list(sinks)
        self.env = dict(os.environ, PULSE_SERVER=f"unix:{self.directory}/native")
        self._daemon_env = dict(os.environ, HOME=self.directory, XDG_RUNTIME_DIR=self.directory,
                                PULSE_RUNTIME_PATH=self.directory)

    def start(self, timeout=15):
        missing = [t for t in ("pulseaudio", "pactl", "paplay", "espeak-ng") if shutil.which(t) is None]
        if missing:
            raise RuntimeError(f"not installed: {', '.join(missing)} (scripts/setup installs them)")
        script = [f"load-module module-native-protocol-unix socket={self.directory}/native auth-anonymous=1"]
        aux = ",".join(f"aux{i}" for i in range(len(self.sinks)))
        script += [f"load-module module-null-sink sink_name=room rate=48000 channels={len(self.sinks)} channel_map={aux}"]
        script += [f"load-module module-remap-sink sink_name={s} master=room channels=1 channel_map=aux{i} "
                   f"master_channel_map=aux{i} remix=no" for i, s in enumerate(self.sinks)]
        with open(os.path.join(self.directory, "default.pa"), "w") as f:
            f.write("\n".join(script) + "\n")
        subprocess.run(["pulseaudio", "-n", "--daemonize=yes", "--exit-idle-time=-1", "--use-pid-file=yes",
                        "--disable-shm=yes", "--system=no", f"--log-target=file:{self.directory}/log",
                        "-F", f"{self.directory}/default.pa"], env=self._daemon_env, check=True, timeout=20)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = subprocess.run(["pactl", "list", "short", "sinks"], env=self.env, capture_output=True, text=True)
            if listed.returncode == 0 and all(s in listed.stdout for s in self.sinks):
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"PulseAudio did not show its sinks within {timeout} s (log: {self.directory}/log)")

    def pactl(self, *args):
        """pactl's stdout; raises with its stderr when it fails."""
        r = subprocess.run(["pactl", *args], env=self.env, capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            raise RuntimeError(f"pactl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout.strip()

    def play(self, wav, sink):
        """paplay of a WAV into sink, started (a Popen to wait on)."""
        return subprocess.Popen(["paplay", f"--device={sink}", wav], env=self.env)

    def stop(self, remove=True):
        subprocess.run(["pulseaudio", "--kill"], env=self._daemon_env, capture_output=True, timeout=10)
        if remove:
            shutil.rmtree(self.directory, ignore_errors=True)


def speech_wav(path, text, voice, rate_wpm=150):
    """espeak-ng's speech of text in voice, written to path (22.05 kHz mono WAV)."""
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate_wpm), "-w", path, text], check=True, timeout=60)
    return path
