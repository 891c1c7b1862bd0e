/// One way a camera can deliver pictures: an encoding at one size, with the frame rates
/// it offers there. What `v4l2src` reports of a device (`CaptureFormatChoice` picks one).
public struct CaptureMode: Sendable, Hashable, CustomStringConvertible {
    public enum Encoding: Sendable, Hashable, CustomStringConvertible {
        /// Uncompressed, in GStreamer's format name (YUY2, NV12, I420…).
        case raw(format: String)
        /// Motion JPEG: each frame a JPEG the publisher decodes (`jpegdec`).
        case mjpeg
        /// Anything else the device offers (H.264, a Bayer pattern…): listed, never chosen.
        case other(mediaType: String)

        public var description: String {
            switch self {
            case .raw(let format): "raw \(format)"
            case .mjpeg: "MJPEG"
            case .other(let type): type
            }
        }
    }

    /// A frame rate as the device states it (30/1, 30000/1001): asked back exactly, or
    /// the caps would not match.
    public struct Rate: Sendable, Hashable, CustomStringConvertible {
        public var numerator: Int
        public var denominator: Int
        public init(_ numerator: Int, _ denominator: Int = 1) { self.numerator = numerator; self.denominator = denominator }
        public var perSecond: Double { denominator > 0 ? Double(numerator) / Double(denominator) : 0 }
        public var description: String {
            denominator == 1 ? String(numerator) : String(Double((perSecond * 100).rounded()) / 100)
        }
    }

    public var encoding: Encoding
    public var width: Int
    public var height: Int
    /// Frame rates offered at this size, highest first.
    public var rates: [Rate]

    public init(encoding: Encoding, width: Int, height: Int, rates: [Rate]) {
        self.encoding = encoding; self.width = width; self.height = height
        self.rates = Array(Set(rates.filter { $0.perSecond.isFinite && $0.perSecond > 0 })).sorted { $0.perSecond > $1.perSecond }
    }

    public var maxRate: Double { rates.first?.perSecond ?? 0 }

    /// Whether the publisher can take this mode (raw or MJPEG).
    public var usable: Bool {
        if case .other = encoding { return false }
        return true
    }

    public var description: String {
        "\(encoding) \(width)x\(height) at \(rates.map(\.description).joined(separator: ", ")) fps"
    }
}
