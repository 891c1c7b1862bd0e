import RTCSession
import Testing

/// Transport-wide feedback (RTPFB FMT 15): the FCI parser, the sender's tracker that
/// turns feedback into loss, bytes and queueing, and the SDP that asks for it.
@Suite("transport-wide congestion control feedback")
struct TransportFeedbackTests {
    /// An FCI: base, count, reference time (in 64 ms), feedback count, then chunks and deltas.
    static func fci(base: UInt16, count: Int, reference: Int32, fbCount: UInt8, chunks: [UInt16], deltas: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(base >> 8), UInt8(base & 0xFF), UInt8(count >> 8), UInt8(count & 0xFF)]
        let ref = UInt32(bitPattern: reference) & 0xFF_FFFF
        bytes += [UInt8(ref >> 16), UInt8((ref >> 8) & 0xFF), UInt8(ref & 0xFF), fbCount]
        for chunk in chunks { bytes += [UInt8(chunk >> 8), UInt8(chunk & 0xFF)] }
        bytes += deltas
        while bytes.count % 4 != 0 { bytes.append(0) }   // RTCP pads to 32-bit words
        return bytes
    }

    @Test("a run-length chunk: every packet received, small deltas add up from the reference time")
    func runLength() throws {
        // Run of 3 "received, small delta" (symbol 1): 0b0_01_0000000000011.
        let f = try TransportFeedback(fci: Self.fci(base: 65534, count: 3, reference: 10, fbCount: 7,
                                                   chunks: [0x2003], deltas: [4, 8, 0]))
        #expect(f.baseSeq == 65534 && f.feedbackCount == 7)
        #expect(f.packets.map(\.seq) == [65534, 65535, 0])
        let expected: [Int64?] = [641_000, 643_000, 643_000]
        #expect(f.packets.map(\.arrivalMicros) == expected)
    }

    @Test("status vectors: one-bit and two-bit symbols, a large negative delta, lost packets have no arrival")
    func vectors() throws {
        // One-bit vector of 14: received, lost, received, then 11 lost.
        let oneBit: UInt16 = 0x8000 | 0b10100000000000
        // Two-bit vector of 7 (the count stops after 3): large delta (2), small (1), lost (0).
        let twoBit: UInt16 = 0xC000 | (0b10 << 12) | (0b01 << 10)
        let f = try TransportFeedback(fci: Self.fci(base: 100, count: 17, reference: -1, fbCount: 0, chunks: [oneBit, twoBit],
                                                   // deltas: 1, 1 (one-bit vector), then −3 (0xFFFD) large, 4 small
                                                   deltas: [1, 1, 0xFF, 0xFD, 4]))
        #expect(f.packets.count == 17)
        let arrived: [Int] = f.packets.indices.filter { f.packets[$0].arrivalMicros != nil }
        #expect(arrived == [0, 2, 14, 15])
        let base: Int64 = -64_000
        #expect(f.packets[0].arrivalMicros == base + 250)
        #expect(f.packets[2].arrivalMicros == base + 500)
        #expect(f.packets[14].arrivalMicros == base - 250)          // −3 steps
        #expect(f.packets[15].arrivalMicros == base + 750)
        #expect(f.packets[16].seq == 116)
    }

    @Test("malformed feedback is refused, never read past its end")
    func malformed() {
        #expect(throws: TransportFeedback.ParseError.tooShort(4)) { try TransportFeedback(fci: [0, 1, 0, 1]) }
        // 20 statuses announced, one run of 3 lost described (and the padding's empty run).
        #expect(throws: TransportFeedback.ParseError.chunksEndEarly(statuses: 20, described: 3)) {
            try TransportFeedback(fci: Self.fci(base: 0, count: 20, reference: 0, fbCount: 0, chunks: [0x0003], deltas: []))
        }
        // Three received packets, deltas for one (the padding gives at most one more).
        #expect(throws: TransportFeedback.ParseError.self) {
            try TransportFeedback(fci: [0, 0, 0, 3, 0, 0, 0, 0, 0x40, 0x03])   // run of 3 large deltas, none there
        }
        // The reserved symbol in a run.
        #expect(throws: TransportFeedback.ParseError.reservedSymbol) {
            try TransportFeedback(fci: Self.fci(base: 0, count: 2, reference: 0, fbCount: 0, chunks: [0x6002], deltas: []))
        }
    }

    /// Feedback on packets `seqs` with `arrivals` (µs, nil: lost).
    static func feedback(_ first: UInt16, _ arrivals: [Int64?]) -> TransportFeedback {
        TransportFeedback(baseSeq: first, feedbackCount: 0,
                          packets: arrivals.enumerated().map { .init(seq: first &+ UInt16($0.offset), arrivalMicros: $0.element) })
    }

    @Test("the tracker counts loss once, takes back a loss a later feedback says arrived, and ignores what it never sent")
    func tracker() {
        var t = TransportFeedbackTracker()
        for i in 0..<10 { #expect(t.assign(bytes: 1000, nowMicros: Int64(i) * 1000) == UInt16(i)) }
        t.receive(Self.feedback(0, [5_000, 6_000, nil, 8_000, nil]), nowMicros: 20_000)
        var s = t.take()
        #expect(s.messages == 1 && s.expected == 5 && s.lost == 2 && s.receivedBytes == 3000)
        // Packet 2 arrived late after all; 3 again (a duplicate); 12 was never sent.
        t.receive(Self.feedback(2, [9_500, 8_000]), nowMicros: 30_000)
        t.receive(Self.feedback(12, [12_000]), nowMicros: 31_000)
        s = t.take()
        #expect(s.expected == 0 && s.lost == -1 && s.receivedBytes == 1000)
        #expect(s.receivedSpanNanos == 1_500_000)   // last arrival 8 000 → 9 500 µs
    }

    @Test("queueing: flat transit is no queue whatever the clocks' offset; a growing one is")
    func queueing() {
        var t = TransportFeedbackTracker()
        var now: Int64 = 0
        var queues: [Double] = []
        var seq: UInt16 = 0
        // 3 s at one packet per 10 ms: transit 1 000 000 µs + queue; the queue grows by
        // 10 ms a second from t = 2 s.
        for step in 0..<300 {
            now = Int64(step) * 10_000
            seq = t.assign(bytes: 1200, nowMicros: now)
            let queue: Int64 = now >= 2_000_000 ? (now - 2_000_000) / 100 : 0
            if step % 5 == 4 {
                t.receive(Self.feedback(seq &- 4, (0..<5).map { k in now - Int64(4 - k) * 10_000 + 1_000_000 + queue }), nowMicros: now)
                queues += t.take().queueingMs
            }
        }
        #expect(queues.count >= 13)
        #expect(queues.prefix(9).allSatisfy { $0 < 0.5 }, "\(queues)")
        #expect((queues.last ?? 0) > 5 && queues.suffix(3).sorted() == Array(queues.suffix(3)), "\(queues)")
    }

    @Test("SDP: the extension offered on each video and audio section with one free ID, found again in the answer")
    func sdp() {
        let sdp = ["v=0", "o=- 1 1 IN IP4 0.0.0.0", "a=group:BUNDLE video0 audio1", "m=video 9 UDP/TLS/RTP/SAVPF 96 97",
                   "a=mid:video0", "a=rtpmap:96 H264/90000", "a=rtcp-fb:96 nack", "a=extmap:1 urn:x-posecast:rtp-hdrext:pose:1",
                   "a=rtpmap:97 rtx/90000", "m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:audio1", "a=extmap:2 urn:ietf:params:rtp-hdrext:sdes:mid",
                   "a=rtpmap:111 OPUS/48000/2", ""].joined(separator: "\r\n")
        let offer = SessionDescription(kind: .offer, sdp: sdp).addingTransportWideCC()
        let lines = offer.sdp.components(separatedBy: "\r\n")
        let uri = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
        #expect(lines.filter { $0.contains(uri) } == ["a=extmap:3 \(uri)", "a=extmap:3 \(uri)"])
        #expect(lines.firstIndex(of: "a=extmap:2 urn:ietf:params:rtp-hdrext:sdes:mid")! + 1 == lines.lastIndex(of: "a=extmap:3 \(uri)"))
        #expect(lines.firstIndex(of: "a=extmap:3 \(uri)") == lines.firstIndex(of: "a=extmap:1 urn:x-posecast:rtp-hdrext:pose:1")! + 1)
        #expect(lines.contains("a=rtcp-fb:96 transport-cc"))
        #expect(offer.transportWideCCExtensionID == 3)
        #expect(offer.addingTransportWideCC() == offer)
        #expect(SessionDescription(kind: .answer, sdp: sdp).transportWideCCExtensionID == nil)
        // An answer that kept it under another direction form.
        let answer = SessionDescription(kind: .answer, sdp: sdp.replacingOccurrences(of: "a=rtcp-fb:96 nack", with: "a=extmap:5/recvonly \(uri)"))
        #expect(answer.transportWideCCExtensionID == 5)
    }
}
