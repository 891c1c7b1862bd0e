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
}
