import RTCSession
import PoseCastKit

/// The video codecs PoseCast negotiates: H.264 (Constrained Baseline; x264 by default,
/// OpenH264 as an option) or VP8. H.264 is the publisher's default: x264 at `veryfast`
/// gives less glass-to-glass latency than VP8 (p50 8.4 against 10.1 ms at 640×480) at the
/// same median SSIM, with fewer bits and less CPU (docs/BENCHMARKS.md, "Encoder search").
public enum VideoCodec: String, Sendable, CaseIterable, Codable {
    case vp8, h264

    /// The RTP encoding name in SDP and caps.
    public var encodingName: String { self == .vp8 ? "VP8" : "H264" }

    /// How this codec's frames carry their pose inside themselves (through an SFU, which
    /// forwards the payload but not our header extension): H.264 in an SEI, VP8 in the trailer.
    public var inBandPoseTransport: PoseTransport { self == .h264 ? .sei : .trailer }
    package var payloadType: Int { self == .vp8 ? 96 : 102 }

    package init?(encodingName: String) {
        switch encodingName.uppercased() {
        case "VP8": self = .vp8
        case "H264": self = .h264
        default: return nil
        }
    }

    /// H.264 only: the `profile-level-id` our offer declares, Constrained Baseline at
    /// `level(width:height:fps:bitrateKbps:)`. rtph264pay leaves it out of its caps for a
    /// byte stream, and RFC 6184 reads a missing one as Baseline level 1.0 (176×144):
    /// peers such as aiortc and browsers match H.264 on it. Nil for VP8.
    public func profileLevelID(width: Int, height: Int, fps: Int, bitrateKbps: Int) -> String? {
        guard self == .h264 else { return nil }
        let hex = String(Self.levelIDC(width: width, height: height, fps: fps, bitrateKbps: bitrateKbps), radix: 16)
        return "42e0" + (hex.count == 1 ? "0" + hex : hex)
    }

    /// The lowest H.264 level (its `level_idc`) whose frame size, macroblock rate and
    /// Baseline bitrate (H.264 Table A-1) hold `width`×`height`@`fps` at `bitrateKbps`.
    /// The encoder is held to it (x264 picks a level from the bitrate too, and one above
    /// what the offer declared fails negotiation when a subscriber's branch is added).
    package static func levelIDC(width: Int, height: Int, fps: Int, bitrateKbps: Int) -> Int {
        let frameMBs = ((width + 15) / 16) * ((height + 15) / 16)
        // (level_idc, MaxFS, MaxMBPS, MaxBR in kbit/s for Baseline)
        let levels: [(Int, Int, Int, Int)] = [
            (10, 99, 1485, 64), (11, 396, 3000, 192), (12, 396, 6000, 384), (13, 396, 11880, 768), (20, 396, 11880, 2000),
            (21, 792, 19800, 4000), (22, 1620, 20250, 4000), (30, 1620, 40500, 10000), (31, 3600, 108000, 14000),
            (32, 5120, 216000, 20000), (40, 8192, 245760, 20000), (42, 8704, 522240, 50000), (50, 22080, 589824, 135000),
            (51, 36864, 983040, 240000), (52, 36864, 2073600, 240000),
        ]
        return levels.first { frameMBs <= $0.1 && frameMBs * fps <= $0.2 && bitrateKbps <= $0.3 }?.0 ?? 52
    }

    /// A `level_idc` as GStreamer's H.264 caps write it ("1", "1.1", … "3", "3.1" …).
    package static func levelString(_ idc: Int) -> String { idc % 10 == 0 ? "\(idc / 10)" : "\(idc / 10).\(idc % 10)" }

    /// Changes a running encoder's target bitrate (every encoder takes it between frames).
    package func setBitrate(_ kbps: Int, on encoder: Element) {
        let target = encoderElement(of: encoder)
        switch self {
        case .vp8: target.set("target-bitrate", kbps * 1000)
        case .h264: target.set("bitrate", target.name == "x264" ? kbps : kbps * 1000)   // x264enc counts in kbit/s
        }
    }

    /// Encoder configured for real-time, low-latency streaming.
    /// `level`: with x264, the H.264 `level_idc` it is held to (the one the offer declares).
    package func makeEncoder(bitrateKbps: Int, keyframeInterval: Int, h264Encoder: H264Encoder = .x264,
                             level: Int? = nil) throws(RTCError) -> Element {
        if self == .h264, h264Encoder == .x264 {
            return try Self.makeX264(bitrateKbps: bitrateKbps, keyframeInterval: keyframeInterval, level: level)
        }
        switch self {
        case .vp8:
            let e = try ElementFactory.make("vp8enc")
            e.set("deadline", 1)                 // realtime
            e.set("cpu-used", 8)
            e.set("end-usage", "cbr")
            e.set("target-bitrate", bitrateKbps * 1000)
            // A half-second rate-control buffer (libvpx's default is 6 s, libwebrtc's 1 s):
            // what a simple scene left unspent is credit the encoder spends later over its
            // target, and after congestion control cut the target, a second's credit kept
            // a 600 kbit/s link's buffer filling for most of a second more.
            e.set("buffer-size", 500)
            e.set("buffer-initial-size", 300)
            e.set("buffer-optimal-size", 400)
            // The rate as a ceiling (libwebrtc's VP8 settings): at most 15 % over the
            // target, and a frame skipped when the buffer runs under 30 % rather than sent
            // over the link's rate. Without them, after congestion control cut the target,
            // the encoder went on at the old rate for a second (measured 720 kbit/s asked
            // 550) and filled a 600 kbit/s link's buffer until it dropped packets.
            e.set("overshoot", 15)
            e.set("dropframe-threshold", 30)
            e.set("keyframe-max-dist", keyframeInterval)
            // A keyframe at most three average frames: one of ten (its default size here)
            // is a burst a link near its capacity drops the tail of.
            e.set("max-intra-bitrate", 300)
            e.set("lag-in-frames", 0)
            e.set("error-resilient", "default")
            // One thread: libvpx's worker threads busy-wait on each other, which turns into
            // a stall when the cores are shared (tests in parallel, many subscribers).
            e.set("threads", 1)
            return e
        case .h264:
            let e = try ElementFactory.make("openh264enc")
            e.set("bitrate", bitrateKbps * 1000)
            e.set("gop-size", keyframeInterval)
            e.set("complexity", "low")
            e.set("rate-control", "bitrate")
            e.set("usage-type", "camera")
            return e
        }
    }

    /// Payloader; `mtu` leaves room for the header extension, which 1.22 does not count.
    package func makePayloader(mtu: Int) throws(RTCError) -> Element {
        let p = try ElementFactory.make(self == .vp8 ? "rtpvp8pay" : "rtph264pay")
        p.set("pt", payloadType)
        p.set("mtu", mtu)
        if self == .h264 {
            p.set("config-interval", -1)          // SPS/PPS with every IDR
            p.set("aggregate-mode", "zero-latency")
        }
        return p
    }

    /// Depayloader → (parser) → decoder, in link order. After a packet that NACK could
    /// not bring back, the depayloader asks for a keyframe (PLI upstream) and drops the
    /// frames until it comes, so a damaged or wrongly referenced picture never reaches
    /// the decoder, never showing beside a pose that is not its own.
    package func makeDecodeChain() throws(RTCError) -> [Element] {
        switch self {
        case .vp8:
            let depay = try ElementFactory.make("rtpvp8depay")
            depay.set("request-keyframe", true)
            depay.set("wait-for-keyframe", true)
            return [depay, try ElementFactory.make("vp8dec")]
        case .h264:
            let depay = try ElementFactory.make("rtph264depay")
            depay.set("request-keyframe", true)
            depay.set("wait-for-keyframe", true)     // with access units (what openh264dec takes)
            return [depay, try ElementFactory.make("h264parse"), try ElementFactory.make("openh264dec")]
        }
    }
}
