import Testing
import Voice

/// Sound devices lost and found again (`DeviceLoss`), on a made-up clock.
@Suite("device loss")
struct DeviceLossTests {
    static let second: UInt64 = 1_000_000_000

    @Test("a device is reported lost once however many errors it posts, tried again each second, and back once it opens")
    func lostAndBack() {
        var loss = DeviceLoss()
        let r1 = loss.failed("field-mic", nowNanos: 10 * Self.second)
        #expect(r1)
        var again = 0
        for i in 0..<1000 where loss.failed("field-mic", nowNanos: 10 * Self.second + UInt64(i)) { again += 1 }
        #expect(again == 0)
        let r2 = loss.due(nowNanos: 10 * Self.second + Self.second / 2)
        #expect(r2.isEmpty)
        let r3 = loss.due(nowNanos: 11 * Self.second)
        #expect(r3 == ["field-mic"])
        // One try at a time: not offered again while it runs, and its errors are not a new loss.
        let r4 = loss.due(nowNanos: 12 * Self.second)
        #expect(r4.isEmpty)
        let r5 = loss.failed("field-mic", nowNanos: 11 * Self.second)
        #expect(!r5)
        let r6 = loss.retried("field-mic", opened: false, nowNanos: 11 * Self.second)
        #expect(!r6)
        let r7 = loss.due(nowNanos: 11 * Self.second + Self.second / 2)
        #expect(r7.isEmpty)
        let r8 = loss.due(nowNanos: 12 * Self.second)
        #expect(r8 == ["field-mic"])
        let r9 = loss.retried("field-mic", opened: true, nowNanos: 12 * Self.second)
        #expect(r9)
        #expect(loss.lostDevices.isEmpty)
        // Lost again later: reported again.
        let r10 = loss.failed("field-mic", nowNanos: 20 * Self.second)
        #expect(r10)
    }

    @Test("two devices are lost and tried on their own clocks")
    func two() {
        var loss = DeviceLoss()
        let r11 = loss.failed("field-mic", nowNanos: 0)
        #expect(r11)
        let r12 = loss.failed("field-speaker", nowNanos: Self.second / 2)
        #expect(r12)
        let r13 = loss.due(nowNanos: Self.second)
        #expect(r13 == ["field-mic"])
        let r14 = loss.due(nowNanos: 2 * Self.second)
        #expect(r14 == ["field-speaker"])
        #expect(loss.lostDevices == ["field-mic", "field-speaker"])
    }
}
