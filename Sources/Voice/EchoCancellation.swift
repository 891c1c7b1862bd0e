import RTCSession

/// Echo cancellation and noise suppression with GStreamer's `webrtcdsp` (the WebRTC audio
/// processing library, 0.3 on Debian 12) and its reference, `webrtcechoprobe`, both from
/// gst-plugins-bad.
///
/// The probe sits just before the speaker's sink and keeps what is played, with its
/// running time; the processor sits on the microphone's chain and subtracts from each
/// 10 ms frame what the room made of the played signal. Both must be in one pipeline (one
/// clock, running times that compare) at `VoiceFormat` (S16LE, 48 kHz, mono): the
/// processor finds the probe by name, so a probe's name must be unique in the process.
///
/// How the processor lines the two up decides everything else: it takes the played
/// frame whose running time plus the pipeline's latency (when the sink plays it) is the
/// microphone frame's running time (when the source captured it), so all the delay the
/// pipeline accounts for is taken out; the adaptive filter then covers what is left (the
/// sound's way through the room and the devices' unreported buffering), about 50 ms.
/// Measured in `EchoCancellationTests` (an artificial far voice played back into the
/// microphone at half amplitude, with that much more delay; ERLE after 3 s, over 5 s):
/// 32 dB at 0 ms, 50 dB at 10–45 ms, 17 dB at 60 ms, 14 dB at 80 ms, 5 dB at 150 ms;
/// 0 dB without the canceller. A near-end voice as loud as the echo, while both talk,
/// comes out 6 dB lower (5 dB with no echo at all: noise suppression and the suppressor).
public struct EchoCancellation: Sendable, Equatable {
    /// `echo-suppression-level`.
    public enum EchoSuppression: String, Sendable, Equatable { case low, moderate, high }
    /// `noise-suppression-level`.
    public enum NoiseSuppression: String, Sendable, Equatable { case low, moderate, high, veryHigh = "very-high" }

    /// The canceller itself (off: the processor only suppresses noise and controls gain).
    public var echoCancel: Bool
    /// How hard the suppressor after the linear filter removes what echo is left: higher
    /// removes more, and more of the near end's voice while both talk. Measured at 30 ms
    /// (ERLE / near voice in double talk): low 50 dB / −5.7 dB, moderate 51 / −6.8,
    /// high 50 / −8.3; the filter does the work, so moderate.
    public var echoSuppressionLevel: EchoSuppression
    /// Let the library estimate the echo's delay itself instead of taking it from the
    /// running times. Off: in this mode `webrtcechoprobe` hands over its oldest 10 ms
    /// unaligned, and with what was played before the microphone started still queued
    /// in it the delay is out of the estimator's reach (measured at 30 ms: 7 dB after
    /// 25 s, where the timestamped mode gives 50 dB after 3 s; no better at 80 or 150 ms).
    public var delayAgnostic: Bool
    /// The longer adaptive filter of the 0.3 library, for a reverberant room's longer
    /// echo (the library's default). Measured: no difference either way (30, 80 and 150 ms).
    public var extendedFilter: Bool
    /// Noise suppression, nil for none: moderate, the library's default, for fans and room
    /// hiss. Measured: it takes 2.5 dB off the artificial voice, nothing off the echo.
    public var noiseSuppression: NoiseSuppression?
    /// Adaptive digital gain towards a steady level. Off: it raises everything that is
    /// left, residual echo included (measured: +12 dB on an echo the canceller does not
    /// remove, a few dB less ERLE when it does), and it would move the double-talk
    /// figures; the microphone's level is the operator's to set.
    public var gainControl: Bool
    /// The experimental analogue-style AGC of the 0.3 library; off (it is experimental,
    /// and it is a gain control too).
    public var experimentalAGC: Bool
    /// Removes rumble and DC below about 80 Hz before the filter adapts to them.
    public var highPassFilter: Bool

    public init(echoCancel: Bool = true, echoSuppressionLevel: EchoSuppression = .moderate, delayAgnostic: Bool = false,
                extendedFilter: Bool = true, noiseSuppression: NoiseSuppression? = .moderate, gainControl: Bool = false,
                experimentalAGC: Bool = false, highPassFilter: Bool = true) {
        self.echoCancel = echoCancel
        self.echoSuppressionLevel = echoSuppressionLevel
        self.delayAgnostic = delayAgnostic
        self.extendedFilter = extendedFilter
        self.noiseSuppression = noiseSuppression
        self.gainControl = gainControl
        self.experimentalAGC = experimentalAGC
        self.highPassFilter = highPassFilter
    }

    /// What every node with both a speaker and a microphone runs (the defaults above).
    public static let standard = EchoCancellation()

    /// The processor with nothing on: the measurement's baseline, a pass-through.
    public static let bypass = EchoCancellation(echoCancel: false, noiseSuppression: nil, highPassFilter: false)

    /// `webrtcdsp` configured, with its `probe` property naming the echo probe (made by
    /// `makeProbe`, in the same pipeline). A missing plugin throws `.elementMissing`
    /// naming gst-plugins-bad's Debian package.
    package func makeProcessor(probeName: String, name: String) throws(RTCError) -> Element {
        let dsp = try ElementFactory.make("webrtcdsp", name: name)
        for (property, value) in properties(probeName: probeName) { try dsp.setChecked(property, value) }
        return dsp
    }

    /// `webrtcechoprobe`: goes just before the speaker's sink, after the caps that make
    /// the played voice `VoiceFormat`.
    package static func makeProbe(name: String) throws(RTCError) -> Element {
        try ElementFactory.make("webrtcechoprobe", name: name)
    }

    /// Whether gst-plugins-bad's webrtcdsp plugin (processor and probe) is installed.
    public static var isAvailable: Bool {
        ElementFactory.isAvailable("webrtcdsp") && ElementFactory.isAvailable("webrtcechoprobe")
    }

    /// Throws `.elementMissing` (plugin webrtcdsp, Debian package gstreamer1.0-plugins-bad)
    /// when the processor or the probe is not installed.
    public static func requireAvailable() throws(RTCError) {
        try GStreamer.initialize()
        for factory in ["webrtcdsp", "webrtcechoprobe"] where !ElementFactory.isAvailable(factory) {
            throw .elementMissing(factory: factory, plugin: "webrtcdsp", package: "gstreamer1.0-plugins-bad")
        }
    }

    /// The processor's properties as `gst-launch-1.0` would take them.
    func properties(probeName: String) -> [(String, String)] {
        [("probe", probeName),
         ("echo-cancel", String(echoCancel)),
         ("echo-suppression-level", echoSuppressionLevel.rawValue),
         ("delay-agnostic", String(delayAgnostic)),
         ("extended-filter", String(extendedFilter)),
         ("noise-suppression", String(noiseSuppression != nil)),
         ("noise-suppression-level", (noiseSuppression ?? .moderate).rawValue),
         ("gain-control", String(gainControl)),
         ("experimental-agc", String(experimentalAGC)),
         ("high-pass-filter", String(highPassFilter))]
    }
}
