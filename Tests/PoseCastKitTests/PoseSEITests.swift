import PoseCastKit
import Testing

@Suite("pose SEI (H.264)")
struct PoseSEITests {
    static let element = try! PoseWireFormat.encode(PoseWireFormatTests.sample)
    /// An access unit as x264 writes an IDR: SPS, PPS, x264's own user-data SEI, one slice.
    static let sps: [UInt8] = [0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x1e, 0xda, 0x02, 0x80]
    static let pps: [UInt8] = [0, 0, 0, 1, 0x68, 0xce, 0x3c, 0x80]
    static let x264SEI: [UInt8] = [0, 0, 0, 1, 0x06, 0x05, 0x14] + (0..<16).map { UInt8($0 + 0xdc) } + Array("x264 core".utf8) + [0x80]
    static let slice: [UInt8] = [0, 0, 1, 0x65, 0x88, 0x84, 0x00, 0x00, 0x03, 0x01, 0x7f]

    /// `bytes` as length-prefixed NAL units (stream-format=avc), from Annex B.
    static func avc(_ bytes: [UInt8]) -> [UInt8] {
        PoseSEI.nalUnits(in: bytes, framing: .annexB).flatMap { r -> [UInt8] in
            let n = r.count
            return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + bytes[r]
        }
    }

    @Test("inserted before the first slice, after x264's own SEI; found in Annex B and in avc framing; the rest unchanged")
    func roundTrip() throws {
        let au = Self.sps + Self.pps + Self.x264SEI + Self.slice
        let at = try #require(PoseSEI.insertionOffset(in: au))
        #expect(at == Self.sps.count + Self.pps.count + Self.x264SEI.count)
        let sei = PoseSEI.make(element: Self.element)
        let tagged = Array(au[..<at]) + sei + Array(au[at...])
        #expect(PoseSEI.find(in: tagged, framing: .annexB) == .element(Self.element))
        #expect(PoseSEI.find(in: Self.avc(tagged), framing: .lengthPrefixed(lengthSize: 4)) == .element(Self.element))
        #expect(try PoseWireFormat.decode(Self.element) == PoseWireFormatTests.sample)
        // Five NAL units, the slice last and whole.
        let units = PoseSEI.nalUnits(in: tagged, framing: .annexB)
        #expect(units.count == 5)
        #expect(Array(tagged[units[4]]) == Array(Self.slice.dropFirst(3)))
        // Only x264's SEI: nothing of ours.
        #expect(PoseSEI.find(in: au, framing: .annexB) == .none)
    }

    @Test("no start code inside the SEI, whatever the element (10 000 zero-heavy elements); each comes back bit for bit")
    func escaping() {
        var random = SplitMix64(seed: 26)
        for _ in 0..<10_000 {
            let count = PoseWireFormat.fixedSize + Int(random.next() % UInt64(PoseWireFormat.maxElementSize - PoseWireFormat.fixedSize + 1))
            let element = (0..<count).map { _ in random.next() % 3 == 0 ? UInt8(random.next() % 4) : 0 }
            let sei = PoseSEI.make(element: element)
            #expect(!PoseTrailerTests.hasStartCodePattern(Array(sei.dropFirst(4))), "element \(element)")
            #expect(PoseSEI.find(in: sei + Self.slice, framing: .annexB) == .element(element))
        }
    }

    @Test("sizes of 255 and more are coded with 0xff bytes")
    func longSize() {
        let element = [UInt8](repeating: 0x41, count: PoseWireFormat.maxElementSize)
        let sei = PoseSEI.make(element: element)
        if PoseSEI.uuid.count + element.count >= 255 { #expect(sei[6] == 0xff) }
        #expect(PoseSEI.find(in: sei, framing: .annexB) == .element(element))
    }

    @Test("a truncated or wrongly sized pose SEI is malformed, never a crash; an access unit without slices has no insertion point")
    func malformed() {
        let sei = PoseSEI.make(element: Self.element)
        // Cut inside the element (keep the trailing bits off too).
        let cut = Array(sei.prefix(sei.count - 20))
        guard case .malformed = PoseSEI.find(in: cut, framing: .annexB) else {
            Issue.record("a cut SEI: \(PoseSEI.find(in: cut, framing: .annexB))"); return
        }
        let short = PoseSEI.make(element: Array(Self.element.prefix(10)))
        guard case .malformed = PoseSEI.find(in: short, framing: .annexB) else {
            Issue.record("a 10-byte pose: \(PoseSEI.find(in: short, framing: .annexB))"); return
        }
        #expect(PoseSEI.insertionOffset(in: Self.sps + Self.pps) == nil)
        #expect(PoseSEI.find(in: [], framing: .annexB) == .none)
        #expect(PoseSEI.find(in: [0, 0, 0, 9, 6, 5], framing: .lengthPrefixed(lengthSize: 4)) == .none)
        var random = SplitMix64(seed: 5)
        for _ in 0..<2_000 {
            let junk = (0..<Int(random.next() % 80)).map { _ in UInt8(random.next() % 8) }
            _ = PoseSEI.find(in: [0, 0, 1, 6] + junk, framing: .annexB)
            _ = PoseSEI.find(in: junk, framing: .lengthPrefixed(lengthSize: 4))
        }
    }
}
