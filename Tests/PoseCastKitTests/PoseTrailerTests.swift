import PoseCastKit
import Testing

@Suite("pose trailer")
struct PoseTrailerTests {
    static let element = try! PoseWireFormat.encode(PoseWireFormatTests.sample)

    /// Whether `bytes` holds 00 00 00, 00 00 01 or 00 00 02: a start code, or what a
    /// payloader or decoder could take for one (00 00 03 is the escape itself).
    static func hasStartCodePattern(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 3 && (0..<(bytes.count - 2)).contains { bytes[$0] == 0 && bytes[$0 + 1] == 0 && bytes[$0 + 2] <= 2 }
    }

    @Test("a frame with a trailer gives back its media and its element, bit for bit")
    func roundTrip() throws {
        let media: [UInt8] = [0x9d, 0x01, 0x2a, 0x80, 0x02, 0xe0, 0x01, 0x55]
        let frame = media + PoseTrailer.make(element: Self.element, mediaTail: media)
        guard case let .trailer(range, mediaCount) = PoseTrailer.find(in: frame) else {
            Issue.record("no trailer found"); return
        }
        #expect(mediaCount == media.count)
        #expect(range.upperBound == frame.count - PoseTrailer.footerSize)
        #expect(PoseTrailer.element(in: frame) == Self.element)
        #expect(try PoseWireFormat.decode(PoseTrailer.element(in: frame)!) == PoseWireFormatTests.sample)
        #expect(Array(frame.suffix(4)) == Array("PCPT".utf8))
    }

    @Test("the trailer never makes a start code, even after media ending in zeros; escaping round-trips (10 000 random elements)")
    func escaping() {
        var random = SplitMix64(seed: 14)
        for i in 0..<10_000 {
            // Zero-heavy elements: the cases that need escaping.
            let count = 58 + Int(random.next() % 198)
            let element = (0..<count).map { _ in random.next() % 3 == 0 ? UInt8(random.next() % 4) : 0 }
            let media: [UInt8] = [[0x11, 0x22], [0x11, 0x00], [0x00, 0x00], [0x00]][i % 4]
            let trailer = PoseTrailer.make(element: element, mediaTail: media)
            let frame = media + trailer
            #expect(!Self.hasStartCodePattern(frame), "element \(element) after \(media)")
            #expect(PoseTrailer.element(in: frame) == element)
            #expect(trailer.count <= PoseTrailer.maxEscapedSize + PoseTrailer.footerSize)
        }
    }

    @Test("no magic: no trailer; a length that cannot be right is malformed, never a crash")
    func malformed() {
        #expect(PoseTrailer.find(in: [UInt8]()) == .none)
        #expect(PoseTrailer.find(in: [UInt8](repeating: 7, count: 100)) == .none)
        let tooShort: [UInt8] = [UInt8](repeating: 1, count: 10) + [0x80 | 10, 0x80] + PoseTrailer.magic
        guard case .malformed = PoseTrailer.find(in: tooShort) else { Issue.record("length 10 accepted"); return }
        let tooLong: [UInt8] = [UInt8](repeating: 1, count: 70) + [0x80 | 72, 0x81] + PoseTrailer.magic
        guard case .malformed(let why) = PoseTrailer.find(in: tooLong) else { Issue.record("length over the frame accepted"); return }
        #expect(why.contains("longer than the frame"))
        let huge: [UInt8] = [UInt8](repeating: 1, count: 70) + [0xff, 0xff] + PoseTrailer.magic
        guard case .malformed = PoseTrailer.find(in: huge) else { Issue.record("length 65535 accepted"); return }
        // Every random tail ending in the magic is judged without a crash.
        var random = SplitMix64(seed: 7)
        for _ in 0..<5_000 {
            let frame = (0..<(2 + Int(random.next() % 400))).map { _ in UInt8(truncatingIfNeeded: random.next()) } + PoseTrailer.magic
            switch PoseTrailer.find(in: frame) {
            case .none: Issue.record("magic not seen")
            case .malformed: break
            case let .trailer(range, mediaCount): #expect(range.lowerBound == mediaCount && range.upperBound == frame.count - 6)
            }
        }
    }
}
