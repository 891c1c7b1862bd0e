package import CGStreamer
import RTCSession

/// Which H.264 encoder the publisher runs: x264 (gst-plugins-ugly; the default) tuned for
/// zero latency and held to Constrained Baseline so the offer's `profile-level-id` stays
/// true, or OpenH264 (Cisco's). Measured at 640×480, 2 Mbit/s (docs/BENCHMARKS.md,
/// "Encoder search"): x264 `veryfast` (100 ms rate buffer) SSIM 0.964 median, 0.941 at
/// the 5th percentile at 1639 kbit/s; OpenH264 0.963 and 0.934; VP8 0.963 and 0.949 at
/// 1866 kbit/s, 1.7 ms slower at the median.
public enum H264Encoder: String, Sendable, CaseIterable, Codable {
    case x264, openh264
}

/// A property set on the encoder element from its string form (`--encoder-option`),
/// checked against the element's own property list and value ranges.
public struct EncoderOption: Sendable, Hashable, CustomStringConvertible {
    public var name: String, value: String
    public init(name: String, value: String) { self.name = name; self.value = value }

    /// `NAME=VALUE`.
    public init?(_ text: String) {
        guard let eq = text.firstIndex(of: "="), eq != text.startIndex else { return nil }
        name = String(text[..<eq]); value = String(text[text.index(after: eq)...])
    }

    public var description: String { "\(name)=\(value)" }
}

extension VideoCodec {
    /// x264enc for live calls: no lookahead or B-frames (`tune=zerolatency`), the
    /// `veryfast` preset (`ultrafast` and `superfast` were 2.4 and 1.1 ms faster here but
    /// softer: SSIM 0.918 and 0.963/0.942 against 0.966/0.946), one thread (its threads wait on each other like libvpx's, and the
    /// cores are shared), an IDR at most every `keyframeInterval` frames; then a
    /// capsfilter that asks for Constrained Baseline (at `level`, the `level_idc` the offer
    /// declares, when given) in a byte stream of whole access units, in a bin whose
    /// `sink`/`src` ghost pads stand for the pair.
    static func makeX264(bitrateKbps: Int, keyframeInterval: Int, level: Int? = nil) throws(RTCError) -> Element {
        let x264 = try ElementFactory.make("x264enc", name: "x264")
        x264.set("tune", "zerolatency")
        x264.set("speed-preset", "veryfast")
        x264.set("bitrate", bitrateKbps)          // kbit/s
        // A 100 ms rate buffer: no frame over about three average frames, as vp8enc's
        // `max-intra-bitrate` 300. With 500 ms a keyframe asked for on a full 600 kbit/s
        // link was a burst its 200 ms buffer dropped the tail of, and the next request
        // the same: a 3 s freeze of the weak subscriber (CongestionSystemTests, in CI).
        x264.set("vbv-buf-capacity", 100)         // ms
        x264.set("key-int-max", keyframeInterval)
        x264.set("threads", 1)
        x264.set("byte-stream", true)
        let caps = try ElementFactory.make("capsfilter")
        caps.set("caps", "video/x-h264,profile=constrained-baseline,stream-format=byte-stream,alignment=au"
                 + (level.map { ",level=(string)\(levelString($0))" } ?? ""))
        guard let bin = gst_bin_new("x264bin") else { throw .linkFailed(from: "x264enc", to: "a bin") }
        let binObject = gcast(bin, to: GstBin.self)
        for e in [x264, caps] { _ = gst_bin_add(binObject, e.raw) }   // the bin adds its own reference
        guard gst_element_link(x264.raw, caps.raw) != 0 else { throw .linkFailed(from: "x264enc", to: "capsfilter") }
        for (name, element) in [("sink", x264), ("src", caps)] {
            guard let target = element.staticPad(name), let ghost = gst_ghost_pad_new(name, target.raw) else {
                throw .linkFailed(from: "x264 bin", to: name)
            }
            _ = gst_element_add_pad(bin, ghost)
        }
        return Element(takingFloating: bin)
    }

    /// The element whose properties are the encoder's: itself, or the x264enc inside its bin.
    package func encoderElement(of encoder: Element) -> Element {
        guard encoder.name == "x264bin", let child = gst_bin_get_by_name(gcast(encoder.object, to: GstBin.self), "x264") else {
            return encoder
        }
        return Element(takingOwnership: child)
    }

    /// Sets each option on the encoder, failing on the first it does not take.
    package func apply(_ options: [EncoderOption], to encoder: Element) throws(RTCError) {
        let target = encoderElement(of: encoder)
        for option in options { try target.setChecked(option.name, option.value) }
    }
}
