/// The pose inside an H.264 access unit, for paths that forward the payload but not
/// our RTP header extension (an SFU: docs/POSE_WIRE_FORMAT.md, "SEI"). One
/// user-data-unregistered SEI NAL unit (payload type 5) before the first slice:
///
///     00 00 00 01 | 06 | 05 | size (0xff per 255, then the rest) | UUID (16) | element | 80
///
/// with H.264 emulation prevention over everything after the NAL header, so no start
/// code can appear inside it. The UUID is ours: x264 writes a user-data SEI of its own
/// (its version string), which a reader must skip, and any other writer's as well.
/// Pure bytes: no GStreamer (`PoseSEIWriter` and `PoseSEIReader` use it on pads).
public enum PoseSEI {
    /// PoseCast's UUID for its pose SEI (random, version 4).
    public static let uuid: [UInt8] = [0x8b, 0x3e, 0x52, 0x0c, 0x6f, 0x1d, 0x4a, 0x55, 0x9e, 0x27, 0xc4, 0x31, 0x70, 0x5a, 0xd2, 0x16]
    /// NAL unit type of SEI.
    public static let seiType: UInt8 = 6
    /// SEI payload type of user data unregistered.
    public static let userDataUnregistered = 5

    /// The NAL unit with its 4-byte start code (Annex B), for an encoded pose element
    /// (`PoseWireFormat.encode`).
    public static func make(element: [UInt8]) -> [UInt8] {
        precondition(element.count <= PoseWireFormat.maxElementSize, "pose element of \(element.count) bytes")
        var payload: [UInt8] = [UInt8(userDataUnregistered)]
        var size = uuid.count + element.count
        while size >= 255 { payload.append(0xff); size -= 255 }
        payload.append(UInt8(size))
        payload += uuid + element
        payload.append(0x80)   // rbsp_trailing_bits
        return [0, 0, 0, 1, seiType] + PoseTrailer.escape(payload)
    }

    /// How an access unit's NAL units are delimited.
    public enum Framing: Sendable, Equatable {
        /// Start codes (00 00 01 or 00 00 00 01): `stream-format=byte-stream`.
        case annexB
        /// A big-endian length of `lengthSize` bytes before each NAL: `stream-format=avc`.
        case lengthPrefixed(lengthSize: Int)
    }

    /// The NAL units of an access unit, as ranges of `bytes` (header byte first, start
    /// code or length excluded). A length that runs past the end ends the list.
    public static func nalUnits(in bytes: [UInt8], framing: Framing) -> [Range<Int>] {
        var units: [Range<Int>] = []
        switch framing {
        case .annexB:
            var starts: [(code: Int, nal: Int)] = []
            var i = 0, zeros = 0
            while i < bytes.count {
                let b = bytes[i]
                if b == 1 && zeros >= 2 { starts.append((i - min(zeros, 3), i + 1)) }
                zeros = b == 0 ? zeros + 1 : 0
                i += 1
            }
            for (k, s) in starts.enumerated() {
                let end = k + 1 < starts.count ? starts[k + 1].code : bytes.count
                if s.nal < end { units.append(s.nal..<end) }
            }
        case .lengthPrefixed(let lengthSize):
            var i = 0
            while i + lengthSize <= bytes.count {
                var n = 0
                for b in bytes[i..<(i + lengthSize)] { n = n << 8 | Int(b) }
                i += lengthSize
                guard n > 0, i + n <= bytes.count else { break }
                units.append(i..<(i + n))
                i += n
            }
        }
        return units
    }

    /// Where the SEI goes in an Annex B access unit: at the start code of its first
    /// slice (NAL types 1–5), or nil when it has none.
    public static func insertionOffset(in accessUnit: [UInt8]) -> Int? {
        for unit in nalUnits(in: accessUnit, framing: .annexB) where (1...5).contains(accessUnit[unit.lowerBound] & 0x1f) {
            var start = unit.lowerBound - 3
            if start > 0 && accessUnit[start - 1] == 0 { start -= 1 }
            return start
        }
        return nil
    }

    /// The NAL unit types of an Annex B access unit, in order (for saying why no slice was found).
    public static func nalTypes(in accessUnit: [UInt8]) -> [UInt8] {
        nalUnits(in: accessUnit, framing: .annexB).map { accessUnit[$0.lowerBound] & 0x1f }
    }

    /// What an access unit says about its pose.
    public enum Found: Equatable, Sendable {
        /// No SEI with our UUID.
        case none
        /// One with our UUID whose sizes do not add up.
        case malformed(String)
        /// The unescaped pose element.
        case element([UInt8])
    }

    /// Finds our pose SEI in an access unit (the element is not decoded here).
    public static func find(in accessUnit: [UInt8], framing: Framing) -> Found {
        for unit in nalUnits(in: accessUnit, framing: framing) where accessUnit[unit.lowerBound] & 0x1f == seiType {
            let rbsp = PoseTrailer.unescape(accessUnit[(unit.lowerBound + 1)..<unit.upperBound])
            var i = 0
            // sei_message()s until the trailing bits (0x80, the NAL's last byte).
            while i < rbsp.count && !(i == rbsp.count - 1 && rbsp[i] == 0x80) {
                var type = 0, size = 0
                while i < rbsp.count && rbsp[i] == 0xff { type += 255; i += 1 }
                guard i < rbsp.count else { break }
                type += Int(rbsp[i]); i += 1
                while i < rbsp.count && rbsp[i] == 0xff { size += 255; i += 1 }
                guard i < rbsp.count else { break }
                size += Int(rbsp[i]); i += 1
                let end = i + size
                if type == userDataUnregistered, size >= uuid.count, end <= rbsp.count,
                   Array(rbsp[i..<(i + uuid.count)]) == uuid {
                    let element = Array(rbsp[(i + uuid.count)..<end])
                    guard (PoseWireFormat.fixedSize...PoseWireFormat.maxElementSize).contains(element.count) else {
                        return .malformed("pose SEI of \(element.count) bytes; expected \(PoseWireFormat.fixedSize)…\(PoseWireFormat.maxElementSize)")
                    }
                    return .element(element)
                }
                if type == userDataUnregistered, end > rbsp.count, size >= uuid.count, i + uuid.count <= rbsp.count,
                   Array(rbsp[i..<(i + uuid.count)]) == uuid {
                    return .malformed("pose SEI says \(size) bytes; its NAL unit holds \(rbsp.count - i)")
                }
                i = end
            }
        }
        return .none
    }
}
