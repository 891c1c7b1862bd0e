import ArgumentParser
import Voice

/// The voice options both executables take (`@OptionGroup`; docs/VOICE.md). Beside the
/// ICE options because this target is where the executables' shared arguments live.
public struct VoiceArguments: ParsableArguments {
    @Option(help: "Microphone: system (the PulseAudio/PipeWire default), none, device=NAME, tone[=HZ], bursts[=HZ] (100 ms at each whole second: A/V tests), or wav=PATH.")
    public var microphone = "system"
    @Option(help: "Speaker for the other side's voices: system, none, device=NAME, or discard (played in real time into nothing).")
    public var speaker = "system"
    @Option(help: "Echo cancellation and noise suppression (webrtcdsp): auto (on with a real microphone and speaker), on or off.")
    public var echoCancellation = "auto"
    @Flag(help: "Start with the microphone muted (mute/unmute on stdin; v in the expert's window).") public var muted = false
    @Flag(help: "Push-to-talk: start muted; talk/over on stdin, or hold the space bar in the expert's window.") public var pushToTalk = false
    @Option(help: "HZ,HZ…: report these tones as they start and stop in what this side hears (tests, scripts/bench-av).")
    public var detectTones: String?
    @Option(help: "The amplitude (dBFS) from which a --detect-tones tone counts as present.")
    public var toneThreshold: Double = -30

    public init() {}

    public func validate() throws {
        do { _ = try options() } catch { throw ValidationError(error.description) }
    }

    /// The options these arguments give.
    public func options() throws(VoiceError) -> VoiceOptions {
        var voice = try VoiceOptions(microphone: microphone, speaker: speaker, echoCancellation: echoCancellation, detectTones: detectTones)
        voice.startMuted = muted || pushToTalk
        guard toneThreshold.isFinite, (-90 ... -3).contains(toneThreshold) else {
            throw .badSpec("--tone-threshold must be −90…−3 dBFS, got \(toneThreshold)")
        }
        voice.toneThresholdDB = toneThreshold
        return voice
    }
}
