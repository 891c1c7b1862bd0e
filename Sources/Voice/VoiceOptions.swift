/// A node's voice settings (both roles).
public struct VoiceOptions: Sendable, Equatable {
    public var microphone: MicrophoneSpec = .system
    public var speaker: SpeakerSpec = .system
    /// `webrtcdsp` on the microphone with the speaker's output as its reference. Nil:
    /// on when a real microphone and a real speaker are both in use (a test tone or a file
    /// has no room echo to cancel; a discarded output makes none).
    public var echoCancellation: Bool?
    /// Start muted (push-to-talk starts muted and talks only while the key is held).
    public var startMuted = false
    /// Tones to report as they start and stop where the voices are played (tests,
    /// `scripts/bench-av`).
    public var detectTones: [Double] = []
    /// A tone counts as present from this amplitude (dBFS): −30 keeps a burst's onset
    /// transients (−37 dBFS at the octave) out. (−40 with Chromium's noise-suppressed
    /// steady tone, about −25 dBFS, made it flicker every 10 ms: not lower.)
    public var toneThresholdDB = -30.0
    /// How long after its arrival a received voice is played (ms): its jitter buffer.
    /// The video is shown as soon as it is decoded; the voice, with this much slack
    /// against network jitter, stays in step with it (docs/VOICE.md, "Lip sync"). 20,
    /// not 10: a real sound server's sink drops what reaches it after its instant, and
    /// with 10 ms the experts lost 0.2–15 % of the field's speech frames and a relayed
    /// voice for seconds at a time on a quiet machine (scripts/bench-voice: STOI
    /// 0.14–0.95, now 0.94–0.98); sound then follows picture by 36 ms (±45 allowed).
    public var playoutMs = 20
    public init() {}

    /// Whether the echo canceller runs, given what could be opened.
    public func cancelsEcho(microphone: MicrophoneSpec?, speaker: SpeakerSpec?) -> Bool {
        guard let microphone, let speaker else { return false }
        return echoCancellation ?? (microphone.isDevice && speaker.isDevice)
    }
}

extension VoiceOptions {
    /// The options as the executables take them: `--microphone`, `--speaker`,
    /// `--echo-cancellation auto|on|off`, `--detect-tones HZ,HZ…`.
    public init(microphone: String, speaker: String, echoCancellation: String, detectTones: String?) throws(VoiceError) {
        self.init()
        self.microphone = try MicrophoneSpec(parsing: microphone)
        self.speaker = try SpeakerSpec(parsing: speaker)
        switch echoCancellation {
        case "auto": self.echoCancellation = nil
        case "on": self.echoCancellation = true
        case "off": self.echoCancellation = false
        default: throw .badSpec("echo cancellation '\(echoCancellation)': expected auto, on or off")
        }
        if let detectTones {
            var tones: [Double] = []
            for part in detectTones.split(separator: ",") {
                tones.append(try VoiceSpecText.hertz(String(part), default: 0, in: detectTones))
            }
            self.detectTones = tones
        }
    }
}
