@testable import RTCSession
import Testing

/// The `--link` spec of the simulated link (`LinkConditions(spec:)`).
@Suite("link conditions")
struct LinkConditionsTests {
    @Test("rate, loss, delay, bucket and queue in any order; none and empty are a perfect link")
    func parses() throws {
        let link = try LinkConditions(spec: "delay=80, rate=600,loss=2")
        #expect(link == LinkConditions(dropProbability: 0.02, delayMs: 80, rateKbps: 600))
        #expect(try LinkConditions(spec: "rate=3000,bucket=500") == LinkConditions(rateKbps: 3000, bucketKbit: 500))
        #expect(try LinkConditions(spec: "none") == .perfect)
        #expect(try LinkConditions(spec: "") == .perfect)
        #expect(link.description == "2.0% loss, 80 ms delay, 600 kbit/s with a 200 ms buffer")
        var policer = LinkConditions(rateKbps: 600)
        policer.queueMs = 0
        #expect(try LinkConditions(spec: "rate=600,queue=0") == policer)
        #expect(policer.description == "0.0% loss, 600 kbit/s (policer)")
    }

    @Test("bad specs are refused naming what is wrong", arguments: [
        ("rate=4", "outside 8"), ("loss=150", "outside 0...1"), ("delay=-1", "outside 0...10000"),
        ("speed=3", "unknown key \"speed\""), ("queue=20000", "outside 0...10000"), ("rate", "not KEY=NUMBER"), ("rate=fast", "not KEY=NUMBER"),
    ])
    func refuses(spec: String, says: String) {
        do {
            _ = try LinkConditions(spec: spec)
            Issue.record("\(spec) accepted")
        } catch {
            #expect("\(error)".contains(says), "\(spec) → \(error)")
        }
    }
}
