import CGStreamer
import Foundation
import Synchronization
@testable import RTCSession
import Testing

/// The sender's pacer in webrtcbin's aux-sender slot (`SendPath.makeBin`): a video
/// packet that must wait is held for the pacer's thread, so the streaming thread and
/// the stream locks it holds are free at once, and a voice packet pushed meanwhile
/// leaves without waiting behind the paced video.
@Suite("the pacer holds what must wait on its own thread")
struct PacerHoldingTests {
    static let videoType = 96, voiceType = 111

    /// An RTP packet of `payload` bytes, its payload type and sequence number set.
    static func packet(type: Int, seq: UInt16, payload: Int) -> UnsafeMutablePointer<GstBuffer> {
        let buffer = gst_rtp_buffer_new_allocate(guint(payload), 0, 0)!
        var rtp = GstRTPBuffer()
        _ = gst_rtp_buffer_map(buffer, GST_MAP_WRITE, &rtp)
        gst_rtp_buffer_set_payload_type(&rtp, guint8(type))
        gst_rtp_buffer_set_seq(&rtp, seq)
        gst_rtp_buffer_unmap(&rtp)
        return buffer
    }

    @Test("10 video packets of 50 ms each at 200 kbit/s: pushed in a few ms, out 50 ms apart in order; voice pushed meanwhile out at once")
    func voicePassesHeldVideo() async throws {
        let pacer = Pacer(rateKbps: 200, burstMs: 10, maxQueueMs: 5_000, mediaPayloadType: Self.videoType,
                          unpacedPayloadTypes: [Self.voiceType])
        let pipeline = try Pipeline(name: "pacer-holding")
        let bin = try #require(SendPath.makeBin(pacer: pacer, transport: TransportSequencer(), link: []))
        let paced = Element(takingFloating: gcast(bin, to: GstElement.self))
        let sink = try ElementFactory.make("fakesink")
        sink.set("sync", "false"); sink.set("async", "false")
        pipeline.add(paced, sink)
        try paced.link(sink)
        // Arrivals at the sink: payload type, sequence number, when (µs).
        let arrivals = Mutex<[(type: Int, seq: UInt16, micros: Int64)]>([])
        sink.staticPad("sink")!.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            if let buffer = gst_pad_probe_info_get_buffer(info) {
                var rtp = GstRTPBuffer()
                if gst_rtp_buffer_map(buffer, GST_MAP_READ, &rtp) != 0 {
                    let entry = (Int(gst_rtp_buffer_get_payload_type(&rtp)), gst_rtp_buffer_get_seq(&rtp), Int64(g_get_monotonic_time()))
                    gst_rtp_buffer_unmap(&rtp)
                    arrivals.withLock { $0.append(entry) }
                }
            }
            return GST_PAD_PROBE_OK
        }
        // Our own source pad into the bin, as rtpbin's would be.
        let source = gst_pad_new("src", GST_PAD_SRC)!
        defer { gst_object_unref(UnsafeMutableRawPointer(source)) }
        _ = gst_pad_set_active(source, 1)
        let target = paced.staticPad("sink")!
        #expect(gst_pad_link(source, target.raw) == GST_PAD_LINK_OK)
        try pipeline.play()
        _ = gst_pad_push_event(source, gst_event_new_stream_start("pacer-holding"))
        _ = gst_pad_push_event(source, gst_event_new_caps(gst_caps_from_string("application/x-rtp")))
        var segment = GstSegment()
        gst_segment_init(&segment, GST_FORMAT_TIME)
        _ = gst_pad_push_event(source, gst_event_new_segment(&segment))

        // Ten video packets of 1250 bytes (10 kbit: 50 ms each at 200 kbit/s), as one
        // frame's packets come, one after another on one thread.
        let started = Int64(g_get_monotonic_time())
        for seq in 0..<10 { _ = gst_pad_push(source, Self.packet(type: Self.videoType, seq: UInt16(seq), payload: 1238)) }
        let videoPushedMicros = Int64(g_get_monotonic_time()) - started
        // Voice every 20 ms while the video is held.
        var voicePushed: [Int64] = []
        for seq in 0..<10 {
            voicePushed.append(Int64(g_get_monotonic_time()))
            _ = gst_pad_push(source, Self.packet(type: Self.voiceType, seq: UInt16(seq), payload: 60))
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(400))
        let seen = arrivals.withLock { $0 }
        pipeline.stop()
        pacer.stop()

        let video = seen.filter { $0.type == Self.videoType }, voice = seen.filter { $0.type == Self.voiceType }
        let voiceDelaysMs = zip(voicePushed, voice).map { Double($1.micros - $0) / 1000 }
        let gapsMs = zip(video, video.dropFirst()).map { Double($1.micros - $0.micros) / 1000 }
        print("pacer holding: 10 video pushes took \(Double(videoPushedMicros) / 1000) ms; video gaps \(gapsMs.map { ($0 * 10).rounded() / 10 }) ms; "
              + "voice delays \(voiceDelaysMs.map { ($0 * 10).rounded() / 10 }) ms")
        // The pushing thread never waited for the pacer (blocking, it took 400 ms or more).
        #expect(videoPushedMicros < 150_000)
        #expect(video.map(\.seq) == (0..<10).map { UInt16($0) }, "every video packet, in order")
        #expect(voice.count == 10)
        // Still paced: 10 kbit at 200 kbit/s is 50 ms (the first two go on the bucket's burst).
        let sortedGaps = gapsMs.sorted()
        #expect(sortedGaps.count == 9 && sortedGaps[sortedGaps.count / 2] >= 40, "\(gapsMs)")
        // Voice behind the held video would wait its 50 ms slices; it goes at once.
        let sortedVoice = voiceDelaysMs.sorted()
        #expect(!sortedVoice.isEmpty && sortedVoice[sortedVoice.count / 2] < 10, "\(voiceDelaysMs)")
    }
}
