import RTCSession
import Testing

/// Our receiver's reports (`ReceptionReport`, the `feedback` channel) and the pacer's
/// token bucket (`Pacer`).
@Suite("congestion control: reception reports and pacing")
struct ReceptionReportTests {
    @Test("reports round-trip; anything else from a peer is refused, never trusted")
    func codec() throws {
        let reports = [ReceptionReport(ssrc: 0xDEADBEEF, highestSeq: 70_000, received: 69_000, bytes: 7_000_000, queueMs: 12.5),
                       ReceptionReport(ssrc: 7, highestSeq: 10, received: 9, bytes: 900)]
        let text = ReceptionReport.encode(reports)
        #expect(ReceptionReport.decode(text) == reports)
        for hostile in ["", "not json", "{}", "{\"streams\":5}", "[]",
                        "{\"streams\":[{\"ssrc\":-1,\"highestSeq\":1,\"received\":1,\"bytes\":1}]}",
                        "{\"streams\":[{\"ssrc\":1,\"highestSeq\":1,\"received\":99999999999,\"bytes\":1}]}",
                        "{\"streams\":[" + Array(repeating: "{\"ssrc\":1,\"highestSeq\":1,\"received\":1,\"bytes\":1}", count: 9).joined(separator: ",") + "]}",
                        String(repeating: " ", count: 5000) + text] {
            #expect(ReceptionReport.decode(hostile) == nil, "accepted: \(hostile.prefix(80))")
        }
    }

    @Test("a report carries its send time and the sender echoes it; an echo is only ever an echo")
    func echo() {
        let reports = [ReceptionReport(ssrc: 9, highestSeq: 100, received: 99, bytes: 99_000)]
        let text = ReceptionReport.encode(reports, sentMicros: 123_456_789)
        #expect(ReceptionReport.decodeMessage(text) == ReceptionReport.Message(streams: reports, sentMicros: 123_456_789))
        #expect(ReceptionReport.decode(text) == reports)
        #expect(ReceptionReport.decodeMessage(ReceptionReport.encode(reports))?.sentMicros == nil, "an older receiver's report")
        #expect(ReceptionReport.decodeEcho(ReceptionReport.encodeEcho(123_456_789)) == 123_456_789)
        for hostile in ["", "{}", text, "{\"echo\":\"soon\"}", "{\"echo\":1e400}", "{\"echo\":" + String(repeating: "9", count: 80) + "}"] {
            #expect(ReceptionReport.decodeEcho(hostile) == nil, "accepted: \(hostile.prefix(80))")
        }
    }

    @Test("the pacer lets a burst out at its rate: 10 packets of 1000 bytes at 800 kbit/s, 12 kbit at once, the rest at 10 ms each")
    func pacing() {
        let pacer = Pacer(rateKbps: 800, burstMs: 10)
        var now: Int64 = 1_000_000
        var waits: [Int64] = []
        for _ in 0..<10 {
            let wait = pacer.reserve(bytes: 1000, nowMicros: now)
            waits.append(wait)
            now += wait      // the packet leaves when its wait is over
        }
        // A full bucket (12 kbit: one packet at least) lets the first two go at once, the
        // third waits for the 4 kbit it owes, each later 8000-bit packet 10 ms.
        #expect(waits[0] == 0 && waits[1] == 0)
        #expect(abs(Int(now - 1_000_000) - 75_000) <= 1000, "\(waits)")
        // After a quiet second the bucket holds only `burstMs` of the rate (8 kbit).
        now += 1_000_000
        #expect(pacer.reserve(bytes: 1000, nowMicros: now) == 0)
        #expect(pacer.reserve(bytes: 1000, nowMicros: now) == 0)
        #expect(pacer.reserve(bytes: 1000, nowMicros: now) > 0)
    }
}
