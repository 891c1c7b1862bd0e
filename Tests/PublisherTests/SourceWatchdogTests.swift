import CGStreamer
import Synchronization
@testable import Publisher
import RTCSession
import TestSupport
import Testing

/// The publisher recovers by itself if its source ever stalls while PLAYING: the
/// watchdog's decisions on stepped seconds, and the restart itself on a
/// real pipeline stalled the way the start-up stall stalled it.
@Suite("source watchdog", .serialized)
struct SourceWatchdogTests {
    @Test("stalled after 3 silent seconds and restarted, again every 5 s while silent; recovered when frames return")
    func decisions() {
        var dog = SourceWatchdog()
        #expect(dog.second(framesArrived: true, playing: true) == .none)
        #expect(dog.second(framesArrived: false, playing: true) == .none)
        #expect(dog.second(framesArrived: false, playing: true) == .none)
        #expect(dog.second(framesArrived: false, playing: true) == .stalled(silentSeconds: 3, restart: 1))
        for _ in 4...7 { #expect(dog.second(framesArrived: false, playing: true) == .none) }
        #expect(dog.second(framesArrived: false, playing: true) == .restart(attempt: 2, silentSeconds: 8))
        #expect(dog.second(framesArrived: true, playing: true) == .recovered(silentSeconds: 8, restarts: 2))
        #expect(dog.second(framesArrived: true, playing: true) == .none)
        // A pipeline that is not PLAYING is a different fault: said, not restarted.
        for _ in 0..<2 { _ = dog.second(framesArrived: false, playing: false) }
        #expect(dog.second(framesArrived: false, playing: false) == .stalled(silentSeconds: 3, restart: nil))
        #expect(dog.totalRestarts == 2)
    }

    @Test("a source path whose tasks were paused by a FLUSHING from downstream runs again after restartSourcePath")
    func restartUnstalls() async throws {
        let publisher = try await BranchStartTests.tinyPublisher(fps: 60)
        defer { publisher.stop() }
        try await waitUntil(5, "frames to flow") { publisher.stats.framesTagged >= 10 }
        // Once armed, the encoder queue's next push "returns" FLUSHING, as the tee's did
        // in the start-up stall: the queue pauses its task, then the source its own.
        guard let queue = gst_bin_get_by_name(gcast(publisher.pipeline.element.object, to: GstBin.self), "encqueue") else {
            Issue.record("no encqueue"); return
        }
        let source = Pad(takingOwnership: gst_element_get_static_pad(queue, "src")!)
        gst_object_unref(UnsafeMutableRawPointer(queue))
        let armed = Atomic<Bool>(true)
        _ = source.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            guard armed.exchange(false, ordering: .relaxed) else { return GST_PAD_PROBE_OK }
            if let buffer = gst_pad_probe_info_get_buffer(info) { gst_mini_object_unref(gcast(buffer, to: GstMiniObject.self)) }
            info.pointee.ABI.abi.flow_ret = GST_FLOW_FLUSHING
            return GST_PAD_PROBE_HANDLED
        }
        try await waitUntil(5, "the probe to fire") { !armed.load(ordering: .relaxed) }
        try await Task.sleep(for: .milliseconds(300))
        let stalledAt = publisher.stats.framesTagged
        try await Task.sleep(for: .seconds(1))
        #expect(publisher.stats.framesTagged <= stalledAt + 3, "the source path should be stalled")
        #expect(publisher.pipeline.stateDescription == "PLAYING")
        let names = await publisher.restartSourcePath()
        #expect(names == ["source", names[1], "rawcaps", "encqueue"])
        let before = publisher.stats.framesTagged
        try await waitUntil(5, "frames to flow after the restart", progress: { "\(publisher.stats.framesTagged - before) frames" }) {
            publisher.stats.framesTagged >= before + 30
        }
        #expect(publisher.pipeline.stateDescription == "PLAYING")
    }
}
