/// The pose inside the encoded frame, for receivers that cannot read RTP header
/// extensions (a browser: docs/POSE_WIRE_FORMAT.md, "Trailer"). Appended after the
/// encoder's bytes, before the payloader:
///
///     [encoded frame][escaped pose element: L bytes][0x80 | L & 0x7f][0x80 | L >> 7]["PCPT"]
///
/// The element (58 + n bytes, `PoseWireFormat`) is escaped as H.264 escapes a NAL
/// unit: after two zero bytes (the media's last ones included), a byte ≤ 3 gets a 0x03
/// before it. L counts the escaped bytes, seven bits in each length byte with the top
/// bit set, so no byte after the element is zero. The trailer therefore never holds or
/// completes a start code (00 00 01) that an H.264 payloader would split the frame at.
/// The receiver looks at the last six bytes: the magic, then L, strips `L + 6` bytes,
/// unescapes and decodes the element with the wire format's rules. VP8 gains nothing
/// from the escaping but is written the same way: one format.
public enum PoseTrailer {
    /// "PCPT": PoseCast Pose Trailer, the last four bytes of a frame that carries one.
    public static let magic: [UInt8] = [0x50, 0x43, 0x50, 0x54]
    /// Length field and magic.
    public static let footerSize = 2 + 4

    /// Bytes a trailer adds to a frame whose pose element is `elementSize` long.
    public static func size(elementSize: Int) -> Int { elementSize + footerSize }

    /// The trailer for an encoded pose element (`PoseWireFormat.encode`), to follow media
    /// whose last bytes are `mediaTail` (its zeros count towards a start code).
    public static func make(element: [UInt8], mediaTail: some Collection<UInt8> = []) -> [UInt8] {
        precondition(element.count <= PoseWireFormat.maxElementSize, "pose element of \(element.count) bytes")
        let escaped = escape(element, precedingZeros: trailingZeros(mediaTail))
        let n = escaped.count
        return escaped + [0x80 | UInt8(n & 0x7f), 0x80 | UInt8(n >> 7)] + magic
    }

    /// Longest escaped element: one 0x03 per two bytes at worst.
    public static let maxEscapedSize = PoseWireFormat.maxElementSize * 3 / 2

    /// Zero bytes at the end of `bytes` (0, 1 or 2: more count as 2).
    public static func trailingZeros(_ bytes: some Collection<UInt8>) -> Int {
        var zeros = 0
        for b in bytes.suffix(2) { zeros = b == 0 ? zeros + 1 : 0 }
        return zeros
    }

    /// H.264 emulation prevention: 0x03 before any byte ≤ 3 that follows two zeros (the
    /// media's last ones included: `precedingZeros`).
    public static func escape(_ bytes: [UInt8], precedingZeros: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        var zeros = precedingZeros
        for b in bytes {
            if zeros >= 2 && b <= 3 { out.append(3); zeros = 0 }
            out.append(b)
            zeros = b == 0 ? zeros + 1 : 0
        }
        return out
    }

    /// The inverse of `escape`: drops each 0x03 that follows two zeros.
    public static func unescape(_ bytes: some Collection<UInt8>, precedingZeros: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var zeros = precedingZeros
        for b in bytes {
            if zeros >= 2 && b == 3 { zeros = 0; continue }
            out.append(b)
            zeros = b == 0 ? zeros + 1 : 0
        }
        return out
    }

    /// What the end of a frame says.
    public enum Found: Equatable, Sendable {
        /// No magic at the end: the frame has no trailer.
        case none
        /// A trailer whose length cannot be right (shorter than a pose, longer than the
        /// frame or the wire format allows): strip nothing, count it.
        case malformed(String)
        /// The escaped element is at `element` of the frame (offsets from its start);
        /// the media ends at `mediaCount`.
        case trailer(element: Range<Int>, mediaCount: Int)
    }

    /// Finds the trailer at the end of `frame` (the element is not decoded here; unescape
    /// it with `precedingZeros: trailingZeros(frame[..<element.lowerBound])`, or take
    /// `element(in:)`).
    public static func find(in frame: some RandomAccessCollection<UInt8>) -> Found {
        let count = frame.count
        guard count >= footerSize else { return .none }
        let start = frame.startIndex
        func byte(_ i: Int) -> UInt8 { frame[frame.index(start, offsetBy: i)] }
        for (i, m) in magic.enumerated() where byte(count - 4 + i) != m { return .none }
        let low = byte(count - 6), high = byte(count - 5)
        guard low & 0x80 != 0, high & 0x80 != 0 else {
            return .malformed("trailer length bytes \(low), \(high) lack their top bit")
        }
        let length = Int(low & 0x7f) | Int(high & 0x7f) << 7
        guard (PoseWireFormat.fixedSize...maxEscapedSize).contains(length) else {
            return .malformed("trailer length \(length) is not in \(PoseWireFormat.fixedSize)...\(maxEscapedSize)")
        }
        guard length + footerSize <= count else {
            return .malformed("trailer length \(length) is longer than the frame (\(count) bytes)")
        }
        let mediaCount = count - footerSize - length
        return .trailer(element: mediaCount..<(mediaCount + length), mediaCount: mediaCount)
    }

    /// The unescaped element of a frame's trailer; nil when it has none or a malformed one.
    public static func element(in frame: some RandomAccessCollection<UInt8>) -> [UInt8]? {
        guard case let .trailer(range, mediaCount) = find(in: frame) else { return nil }
        let bytes = Array(frame)
        return unescape(bytes[range], precedingZeros: trailingZeros(bytes[max(0, mediaCount - 2)..<mediaCount]))
    }
}

/// How a session's frames carry their pose.
public enum PoseTransport: String, Sendable, Equatable, CaseIterable {
    /// An RTP header extension in every packet (GStreamer peers; the default).
    case headerExtension
    /// A trailer at the end of each encoded frame (`PoseTrailer`): browsers, which
    /// cannot read unknown header extensions.
    case trailer
    /// A user-data SEI before the first slice of each H.264 access unit (`PoseSEI`):
    /// what an SFU forwards untouched. H.264 only.
    case sei

    /// Whether the pose travels inside the encoded frame (an SFU forwards it).
    public var isInBand: Bool { self != .headerExtension }

    /// The key in a consumer's `setPeerStatus` meta that asks for a transport
    /// (`{"poseTransport": "trailer"}`); the publisher reads it from `startSession`.
    public static let metaKey = "poseTransport"
}
