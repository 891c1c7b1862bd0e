"""Voice on a real sound server with real speech (scripts/bench-voice).

A private PulseAudio with a null sink per mouth and per ear; the publisher (the field)
and two headless experts, A and B, each with `--microphone device=MOUTH.monitor` and
`--speaker device=EAR` (so echo cancellation is on, as with a real headset-less laptop).
espeak-ng's speech is played into one mouth at a time while `parecord` records every
sink sample-aligned (the sinks are the channels of one device). From the recording:
STOI (scripts/lib/stoi.py), mouth-to-ear delay (cross-correlation) and speech frames
lost, for field → expert, expert → field and expert → expert (relayed by the
publisher). From the nodes' events: mute, unmute and push-to-talk (`over`, `talk`),
command to silence or sound where the far end plays (a 2 kHz tone in A's mouth, the
publisher's tone detector), and the bitrate while muted (`voice_sent_bytes`). Then the
field's speaker is looped back into its microphone (PulseAudio's module-loopback at
−6.8 dB, 35 and 70 ms asked) while A speaks: the echo return loss enhancement is the
echo's level in the field's microphone over what A hears of it.

One JSON line per direction, one for the switches and the muted bitrate, one per room
delay (also in DIR/results.jsonl); DIR/voice.png."""
import argparse, json, os, subprocess, sys, time, wave
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from plots import pyplot, save
from procs import BusyLoops, Proc, wait_until
from pulse import PrivatePulse, speech_wav
import stoi as stoi_mod

RATE = 48_000
SINKS = ["fieldmouth", "fieldear", "amouth", "aear", "bmouth", "bear"]
TEXTS = {
    "field": ("The pressure gauge on the left reads four bar. I am opening the second valve now. "
              "Can you see the red handle under the pipe? Tell me when to stop turning it."),
    "a": ("Yes, I can see it. Turn the handle a quarter turn to the right, then wait for the needle. "
          "Now check the seal on the flange below the gauge, it looks wet from here."),
}
VOICES = {"field": "en-gb", "a": "en-us+f3"}


def read_wav(path):
    """(samples × channels in −1…1, rate) of a 16-bit PCM WAV, plain or extensible (which
    Python's wave module refuses, and wavenc writes for more than two channels)."""
    import struct
    blob = open(path, "rb").read()
    assert blob[:4] == b"RIFF" and blob[8:12] == b"WAVE", f"{path}: not a WAV"
    pos, channels, rate, bits, data = 12, None, None, None, None
    while pos + 8 <= len(blob):
        tag, size = blob[pos:pos + 4], struct.unpack("<I", blob[pos + 4:pos + 8])[0]
        body = blob[pos + 8:pos + 8 + size]
        if tag == b"fmt ":
            _, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
        elif tag == b"data":
            data = body
        pos += 8 + size + (size & 1)
    assert bits == 16 and data is not None, f"{path}: {bits}-bit or without data"
    samples = np.frombuffer(data[:len(data) // (2 * channels) * 2 * channels], dtype="<i2").astype(float) / 32768
    return samples.reshape(-1, channels), rate


def write_tone(path, hertz, seconds, level=0.3):
    t = np.arange(int(seconds * RATE)) / RATE
    samples = (level * np.sin(2 * np.pi * hertz * t) * 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(RATE)
        w.writeframes(samples.tobytes())
    return path


def lead_in_seconds(path):
    """How long a WAV is silent before its speech starts."""
    x, rate = read_wav(path)
    loud = np.nonzero(np.abs(x[:, 0]) > 0.01)[0]
    return loud[0] / rate if len(loud) else 0.0


def delay_ms(ref, deg, max_ms=800):
    """The lag (ms, 0..max_ms) at which deg best matches ref (FFT cross-correlation)."""
    n = len(ref) + len(deg)
    size = 1 << (n - 1).bit_length()
    corr = np.fft.irfft(np.fft.rfft(deg, size) * np.conj(np.fft.rfft(ref, size)), size)
    lags = corr[:int(max_ms / 1000 * RATE)]
    return float(np.argmax(np.abs(lags))) / RATE * 1000


def frame_energies(x, frame=960):
    n = len(x) // frame
    return (x[:n * frame].reshape(n, frame) ** 2).mean(axis=1)


def direction(rec, ch, window, speaker, listener, label):
    """STOI, delay and frames lost from speaker's mouth channel to listener's ear channel."""
    lo, hi = (int(max(0, t) * RATE) for t in window)
    ref, deg = rec[lo:hi, ch[speaker + "mouth"]], rec[lo:hi, ch[listener + "ear"]]
    d = delay_ms(ref, deg)
    shift = int(d / 1000 * RATE)
    deg_aligned = deg[shift:]
    ref = ref[:len(deg_aligned)]
    # Delay drift within the window: the best lag in each 2 s piece.
    pieces = []
    for s in range(0, len(ref) - 2 * RATE, 2 * RATE):
        r = rec[lo + s:lo + s + 2 * RATE, ch[speaker + "mouth"]]
        if np.sqrt((r ** 2).mean()) > 0.005:
            pieces.append(delay_ms(r, rec[lo + s:lo + s + 2 * RATE + int(0.8 * RATE), ch[listener + "ear"]]))
    er, ed = frame_energies(ref), frame_energies(deg_aligned)
    speech = er > er.max() * 10 ** (-30 / 10)
    gain = ed[speech].sum() / max(er[speech].sum(), 1e-12)
    lost = speech & (ed < er * gain * 10 ** (-20 / 10))
    score = stoi_mod.stoi(ref, deg_aligned, RATE)
    return {"direction": label, "stoi": round(score, 3) if score is not None else None,
            "mouth_to_ear_ms": round(d, 1),
            "mouth_to_ear_ms_pieces": [round(p, 1) for p in pieces],
            "speech_frames": int(speech.sum()), "frames_lost_pct": round(100 * lost.sum() / max(speech.sum(), 1), 2),
            "level_db": round(10 * np.log10(max(gain, 1e-12)), 1)}


def erle(rec, ch, window):
    """The echo's level in the field's microphone over what A hears of it (dB), and the
    loop's delay as measured (field's ear → field's mouth)."""
    lo, hi = (int(max(0, t) * RATE) for t in window)
    mic, ear, heard = rec[lo:hi, ch["fieldmouth"]], rec[lo:hi, ch["fieldear"]], rec[lo:hi, ch["aear"]]
    loop = delay_ms(ear, mic, 400)
    em, eh = frame_energies(mic), frame_energies(heard)
    active = em > em.max() * 10 ** (-30 / 10)
    if not active.any():
        return None, loop
    return 10 * np.log10(em[active].sum() / max(eh[active].sum(), 1e-12)), loop


class Bench:
    def __init__(self, a):
        self.a, self.out = a, a.out
        self.pulse = PrivatePulse(SINKS)
        self.procs = []

    def start_nodes(self):
        a = self.a
        # The nodes' sound server (they inherit the environment).
        os.environ["PULSE_SERVER"] = self.pulse.env["PULSE_SERVER"]
        signaling = Proc("signaling", [os.path.join(a.bin, "posecast-signaling"), "--port", "0"], self.out)
        self.procs.append(signaling)
        wait_until(lambda: any(o.get("text", "").startswith("listening ") for _, o in signaling.events()), 20, "signaling")
        url = next(o["text"].split(" ", 1)[1] for _, o in signaling.events() if o.get("text", "").startswith("listening "))
        self.publisher = Proc("publisher", [os.path.join(a.bin, "posecast-publisher"), "--source", "synthetic", "--json",
                                            "--signaling", url, "--microphone", a.field_microphone,
                                            "--speaker", "device=fieldear", "--detect-tones", "2000"], self.out, stdin=True)
        self.procs.append(self.publisher)
        wait_until(lambda: self.publisher.events("signalingConnected"), 20, "publisher registered")
        self.experts = {}
        for name in ("a", "b")[:a.experts]:
            p = Proc(f"expert-{name}", [os.path.join(a.bin, "posecast-subscriber"), "--headless", "--json", "--signaling", url,
                                        "--microphone", f"device={name}mouth.monitor", "--speaker", f"device={name}ear",
                                        "--detect-tones", "1000"], self.out, stdin=True)
            self.procs.append(p)
            self.experts[name] = p
            wait_until(lambda: p.events("connected") and len(p.events("status")) >= 2, 40, f"expert {name} connected")

    def record(self):
        # One stream: every sink is a channel of "room" (PrivatePulse), asked
        # for by its aux positions (a stream mapped front-left/right records silence).
        aux = ",".join(f"aux{i}" for i in range(len(SINKS)))
        argv = ["parecord", "--device=room.monitor", f"--channels={len(SINKS)}", f"--channel-map={aux}", f"--rate={RATE}",
                "--format=s16le", "--file-format=wav", "--latency-msec=20", self.recording]
        return subprocess.Popen(argv, env=self.pulse.env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.out, "recorder.err"), "w"))

    def speak(self, who):
        """Plays who's speech into its mouth; returns (monotonic start, monotonic end, lead-in)."""
        wav = self.speech[who]
        start = time.monotonic()
        self.pulse.play(wav, f"{who}mouth").wait()
        return start, time.monotonic(), self.leads[who]

    def switch_latencies(self):
        """A's mute, unmute, over and talk: from the command to the tone stopping or
        starting where the field plays it (the publisher's tone events)."""
        tone = self.pulse.play(write_tone(os.path.join(self.out, "tone2k.wav"), 2000, 40), "amouth")
        a = self.experts["a"]
        time.sleep(2.5)
        rows, muted_rates = [], []
        for cycle in range(3):
            for command, started in (("mute", False), ("unmute", True), ("over", False), ("talk", True)):
                mark = len(self.publisher.events())
                sent = time.time_ns()
                a.send(command)
                try:
                    wait_until(lambda: any(o.get("event") == "tone" and o.get("hertz") == 2000 and o.get("started") == started
                                           for _, o in self.publisher.events()[mark:]), 3, f"the tone after {command}")
                    ev = next(o for _, o in self.publisher.events()[mark:]
                              if o.get("event") == "tone" and o.get("hertz") == 2000 and o.get("started") == started)
                    rows.append((command, (ev["atNanos"] - sent) / 1e6))
                except TimeoutError:
                    rows.append((command, None))
                if not started:
                    # Muted with the tone still playing into the microphone: what is sent.
                    time.sleep(0.6)
                    first = a.events("status")[-1][1]
                    t0 = time.monotonic()
                    time.sleep(2.2)
                    last = a.events("status")[-1][1]
                    span = time.monotonic() - t0
                    if "voice_sent_bytes" in first and last is not first:
                        muted_rates.append(((last["voice_sent_bytes"] - first["voice_sent_bytes"]) * 8 / span / 1000,
                                            (last["voice_sent_packets"] - first["voice_sent_packets"]) / span))
                else:
                    time.sleep(1.2)
        tone.terminate()
        return rows, muted_rates

    def run(self):
        a = self.a
        os.makedirs(self.out, exist_ok=True)
        self.recording = os.path.join(self.out, "recording.wav")
        self.pulse.start()
        recorder = None
        try:
            self.speech = {w: speech_wav(os.path.join(self.pulse.directory, f"{w}.wav"), TEXTS[w], VOICES[w]) for w in TEXTS}
            self.leads = {w: lead_in_seconds(p) for w, p in self.speech.items()}
            self.start_nodes()
            recorder = self.record()
            time.sleep(3)
            phases = {}
            phases["field"] = self.speak("field"); time.sleep(1)
            phases["a"] = self.speak("a"); time.sleep(1)
            switches, muted = self.switch_latencies()
            time.sleep(1)
            loops = {}
            for room_ms in a.rooms:
                module = self.pulse.pactl("load-module", "module-loopback", "source=fieldear.monitor", "sink=fieldmouth", "channels=1", "channel_map=mono",
                                          f"latency_msec={room_ms}", "source_dont_move=true", "sink_dont_move=true")
                inputs = self.pulse.pactl("list", "short", "sink-inputs")
                for line in inputs.splitlines():
                    fields = line.split()
                    if len(fields) > 1 and fields[1] == module:
                        self.pulse.pactl("set-sink-input-volume", fields[0], "-6.8dB")
                time.sleep(1.5)
                loops[room_ms] = self.speak("a")
                time.sleep(1)
                self.pulse.pactl("unload-module", module)
                time.sleep(0.5)
        finally:
            if recorder:
                recorder.send_signal(2)
                try:
                    recorder.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    recorder.kill()
            for p in reversed(self.procs):
                p.stop("quit" if p.name.startswith("expert") else None)
            self.pulse.stop()
        rec, rate = read_wav(self.recording)
        assert rate == RATE and rec.shape[1] == len(SINKS), f"recording: {rec.shape} at {rate} Hz"
        ch = {s: i for i, s in enumerate(SINKS)}
        # The recording's time 0 in monotonic time: the field's speech onset in its mouth channel.
        onset = np.nonzero(np.abs(rec[:, ch["fieldmouth"]]) > 0.01)[0][0] / RATE
        zero = phases["field"][0] + phases["field"][2] - onset

        def window(phase):
            start, end, lead = phase
            return (start + lead - zero - 0.2, end - zero + 1.0)

        rows = [direction(rec, ch, window(phases["field"]), "field", "a", "field → expert"),
                direction(rec, ch, window(phases["a"]), "a", "field", "expert → field"),
                ] + ([direction(rec, ch, window(phases["a"]), "a", "b", "expert → expert (relayed)"),
                      direction(rec, ch, window(phases["field"]), "field", "b", "field → second expert")] if self.a.experts > 1 else [])
        by = {}
        for command, ms in switches:
            by.setdefault(command, []).append(ms)
        switch_row = {"switches_ms": {c: [None if v is None else round(v, 1) for v in vs] for c, vs in by.items()},
                      "switch_worst_ms": max((v for vs in by.values() for v in vs if v is not None), default=None),
                      "switch_missed": sum(v is None for vs in by.values() for v in vs),
                      "muted_kbps": [round(k, 2) for k, _ in muted], "muted_packets_per_s": [round(p, 1) for _, p in muted]}
        echo_rows = []
        for room_ms, phase in loops.items():
            e, loop = erle(rec, ch, window(phase))
            # Over 100 dB: A heard digital silence (the canceller and the suppressor took it all).
            echo_rows.append({"room_ms_asked": room_ms, "room_ms_measured": round(loop, 1),
                              "erle_db": None if e is None else round(min(e, 100.0), 1)})
        return rows, switch_row, echo_rows, (rec, ch, {k: window(v) for k, v in {**phases, **{f"loop{r}": p for r, p in loops.items()}}.items()})


def plot(rec, ch, windows, rows, path, burners):
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(3, 1, figsize=(12, 8), sharex=True)
    t = np.arange(len(rec)) / RATE
    step = 48
    for ax, (mouth, ear, title) in zip(axes, [("fieldmouth", "aear", "field's mouth and expert A's ear"),
                                             ("amouth", "fieldear", "expert A's mouth and the field's ear"),
                                             ("amouth", "bear", "expert A's mouth and expert B's ear (relayed)")]):
        ax.plot(t[::step], rec[::step, ch[mouth]], lw=0.4, color="#4c72b0", label=mouth)
        ax.plot(t[::step], rec[::step, ch[ear]], lw=0.4, color="#dd8452", alpha=0.7, label=ear)
        for name, (lo, hi) in windows.items():
            ax.axvspan(lo, hi, color="#cccccc", alpha=0.25)
        ax.set_title(title, fontsize=9)
        ax.legend(loc="upper right", fontsize=7)
    axes[-1].set_xlabel("s (one clock for every channel)")
    summary = "; ".join(f"{r['direction']}: STOI {r['stoi']}, {r['mouth_to_ear_ms']} ms, {r['frames_lost_pct']} % lost" for r in rows)
    fig.suptitle(f"Voice on a private PulseAudio, espeak-ng speech, {burners} busy loops beside\n{summary}", fontsize=8)
    save(fig, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--burners", type=int, default=0)
    ap.add_argument("--out", default="out/bench-voice")
    ap.add_argument("--field-microphone", default="device=fieldmouth.monitor",
                    help="the publisher's --microphone (another, and the field's rows measure nothing)")
    ap.add_argument("--experts", type=int, choices=(1, 2), default=2, help="1: no second expert (no relayed voice)")
    ap.add_argument("--rooms", default="35,70", help="room delays (ms) asked of the echo loop")
    a = ap.parse_args()
    a.rooms = [int(r) for r in a.rooms.split(",") if r]
    a.out = os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)
    with BusyLoops(a.burners):
        rows, switches, echoes, (rec, ch, windows) = Bench(a).run()
    load = round(os.getloadavg()[0], 1)
    with open(os.path.join(a.out, "results.jsonl"), "w") as results:
        for r in rows + [switches] + echoes:
            line = json.dumps({"bench": "voice", "burners": a.burners, "load": load, **r})
            print(line, flush=True)
            results.write(line + "\n")
    plot(rec, ch, windows, rows, os.path.join(a.out, "voice.png"), a.burners)


if __name__ == "__main__":
    main()
