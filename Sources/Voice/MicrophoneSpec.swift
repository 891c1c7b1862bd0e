/// Where a node's voice comes from (`--microphone`).
public enum MicrophoneSpec: Sendable, Equatable, CustomStringConvertible {
    /// The system's default input (`autoaudiosrc`: PulseAudio or PipeWire where present).
    case system
    /// A PulseAudio/PipeWire source by name (`pactl list short sources`).
    case device(String)
    /// A steady sine (tests, demos).
    case tone(hertz: Double)
    /// A sine in 100 ms bursts starting at every whole second of the wall clock
    /// (`ToneBursts`): the A/V tests pair each burst with the synthetic camera's flash frame.
    case bursts(hertz: Double)
    /// A WAV file, played once in real time, then silence.
    case wav(path: String)
    /// No microphone: the node only listens.
    case none

    /// `system|none|device=NAME|tone[=HZ]|bursts[=HZ]|wav=PATH`.
    public init(parsing text: String) throws(VoiceError) {
        let (key, value) = VoiceSpecText.split(text)
        switch key {
        case "system", "auto", "default": self = .system
        case "none", "off": self = .none
        case "device" where value?.isEmpty == false: self = .device(value!)
        case "tone": self = .tone(hertz: try VoiceSpecText.hertz(value, default: 1000, in: text))
        case "bursts": self = .bursts(hertz: try VoiceSpecText.hertz(value, default: 1000, in: text))
        case "wav" where value?.isEmpty == false: self = .wav(path: value!)
        default:
            throw .badSpec("microphone '\(text)': expected system, none, device=NAME, tone[=HZ], bursts[=HZ] or wav=PATH")
        }
    }

    public var description: String {
        switch self {
        case .system: "system"
        case .device(let name): "device=\(name)"
        case .tone(let hz): "tone=\(Int(hz))"
        case .bursts(let hz): "bursts=\(Int(hz))"
        case .wav(let path): "wav=\(path)"
        case .none: "none"
        }
    }

    /// A real input device (echo cancellation is worth its cost only with one).
    public var isDevice: Bool { self == .system || { if case .device = self { true } else { false } }() }
}

/// Where a node plays the voices it receives (`--speaker`).
public enum SpeakerSpec: Sendable, Equatable, CustomStringConvertible {
    /// The system's default output (`autoaudiosink`).
    case system
    /// A PulseAudio/PipeWire sink by name.
    case device(String)
    /// Played in real time into nothing (`fakesink sync=true`): a speaker's timing
    /// without a sound card (tests, benchmarks, headless machines).
    case discard
    /// No speaker: the node does not receive voices.
    case none

    /// `system|none|device=NAME|discard`.
    public init(parsing text: String) throws(VoiceError) {
        let (key, value) = VoiceSpecText.split(text)
        switch key {
        case "system", "auto", "default": self = .system
        case "none", "off": self = .none
        case "discard": self = .discard
        case "device" where value?.isEmpty == false: self = .device(value!)
        default: throw .badSpec("speaker '\(text)': expected system, none, device=NAME or discard")
        }
    }

    public var description: String {
        switch self {
        case .system: "system"
        case .device(let name): "device=\(name)"
        case .discard: "discard"
        case .none: "none"
        }
    }

    public var isDevice: Bool { self == .system || { if case .device = self { true } else { false } }() }
}

enum VoiceSpecText {
    static func split(_ text: String) -> (key: String, value: String?) {
        guard let eq = text.firstIndex(of: "=") else { return (text.lowercased(), nil) }
        return (text[..<eq].lowercased(), String(text[text.index(after: eq)...]))
    }

    static func hertz(_ value: String?, default fallback: Double, in text: String) throws(VoiceError) -> Double {
        guard let value else { return fallback }
        guard let hz = Double(value), (100...8000).contains(hz) else {
            throw .badSpec("'\(text)': the frequency must be 100 to 8000 Hz")
        }
        return hz
    }
}
