package import CGStreamer
import CGstShim
import PoseCastKit
import RTCSession
import Synchronization

/// What the publisher's encoder did with one frame (see `EncodeTimer`).
public struct EncodedFrameTiming: Sendable {
    public var frameID: UInt32
    /// Capture time carried in the frame's pose (host wall clock).
    public var captureNanos: UInt64
    /// Host wall-clock times when the raw frame entered the encoder and the encoded one left it.
    public var encoderInNanos: UInt64, encoderOutNanos: UInt64
    public var encodedBytes: Int
    /// FNV-1a 64 of the pose's wire bytes: the subscriber hashes what it received the same way.
    public var poseHash: UInt64
    public var encodeMillis: Double { Double(encoderOutNanos &- encoderInNanos) / 1e6 }

    public init(frameID: UInt32, captureNanos: UInt64, encoderInNanos: UInt64, encoderOutNanos: UInt64,
                encodedBytes: Int, poseHash: UInt64) {
        self.frameID = frameID; self.captureNanos = captureNanos
        self.encoderInNanos = encoderInNanos; self.encoderOutNanos = encoderOutNanos
        self.encodedBytes = encodedBytes; self.poseHash = poseHash
    }
}

/// When one frame reached the subscriber's sink and what its decoder took (see `DecodeTimer`).
public struct ShownFrameTiming: Sendable {
    /// Frame id and capture time from the frame's pose; nil when it carried no valid pose.
    public var frameID: UInt32?
    public var captureNanos: UInt64?
    public var poseHash: UInt64?
    /// Host wall-clock times: into the decoder, out of it, rendered by the sink (after any
    /// clock wait of a synchronised sink).
    public var decoderInNanos: UInt64?, decodedNanos: UInt64?
    public var shownNanos: UInt64

    public init(frameID: UInt32? = nil, captureNanos: UInt64? = nil, poseHash: UInt64? = nil,
                decoderInNanos: UInt64? = nil, decodedNanos: UInt64? = nil, shownNanos: UInt64) {
        self.frameID = frameID; self.captureNanos = captureNanos; self.poseHash = poseHash
        self.decoderInNanos = decoderInNanos; self.decodedNanos = decodedNanos; self.shownNanos = shownNanos
    }
    public var decodeMillis: Double? {
        guard let a = decoderInNanos, let b = decodedNanos else { return nil }
        return Double(b &- a) / 1e6
    }
    /// Capture → shown, in ms (same host clock on loopback).
    public var latencyMillis: Double? {
        guard let c = captureNanos, shownNanos >= c else { return nil }
        return Double(shownNanos - c) / 1e6
    }
}

/// FNV-1a, 64 bit: a stable fingerprint of a pose's wire bytes for joining two logs.
public func poseFingerprint(_ bytes: [UInt8]) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
    return h
}

/// Entry times of buffers into an element, matched with its output by a key: the PTS
/// (the decoder: codecs here never reorder frames, VP8 without lag, H.264 without
/// B-frames) or the frame id (the encoder, `EncodeTimer`). Bounded: a frame the element
/// drops is forgotten after `capacity` newer ones.
package final class PTSStopwatch<Payload: Sendable>: Sendable {
    private let entries = Mutex<[(pts: GstClockTime, nanos: UInt64, payload: Payload)]>([])
    private let capacity = 64

    package func enter(pts: GstClockTime, payload: Payload) {
        let now = WallClock.nowNanos()
        entries.withLock { e in
            e.append((pts, now, payload))
            if e.count > capacity { e.removeFirst(e.count - capacity) }
        }
    }

    /// The entry for this PTS (and forgets it and any older ones), or nil.
    package func leave(pts: GstClockTime) -> (nanos: UInt64, payload: Payload)? {
        entries.withLock { e in
            guard let i = e.firstIndex(where: { $0.pts == pts }) else { return nil }
            let hit = e[i]
            e.removeFirst(i + 1)
            return (hit.nanos, hit.payload)
        }
    }
}

/// Times the publisher's encoder per frame: a probe on its sink pad notes each raw
/// frame's pose and entry time, one on its source pad matches the encoded frame by the
/// frame id of the pose it carries (not by PTS: x264enc shifts every output PTS by 1000
/// hours to make room for negative DTS) and reports it. Both run on the encoder's
/// streaming thread; `report` must be quick.
package final class EncodeTimer: Sendable {
    private let stopwatch = PTSStopwatch<(frameID: UInt32, capture: UInt64, hash: UInt64)>()
    private let report: @Sendable (EncodedFrameTiming) -> Void

    package init(report: @escaping @Sendable (EncodedFrameTiming) -> Void) { self.report = report }

    package func install(on encoder: Element) {
        let stopwatch = self.stopwatch, report = self.report
        encoder.staticPad("sink")!.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            guard let buffer = gst_pad_probe_info_get_buffer(info),
                  let bytes = PoseMeta.bytes(of: buffer), let pose = try? PoseWireFormat.decode(bytes) else { return GST_PAD_PROBE_OK }
            stopwatch.enter(pts: GstClockTime(pose.frameID), payload: (pose.frameID, pose.captureTimeNanos, poseFingerprint(bytes)))
            return GST_PAD_PROBE_OK
        }
        encoder.staticPad("src")!.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            guard let buffer = gst_pad_probe_info_get_buffer(info),
                  let bytes = PoseMeta.bytes(of: buffer), let pose = try? PoseWireFormat.decode(bytes),
                  let entry = stopwatch.leave(pts: GstClockTime(pose.frameID)) else { return GST_PAD_PROBE_OK }
            let out = WallClock.nowNanos()
            report(EncodedFrameTiming(frameID: entry.payload.frameID, captureNanos: entry.payload.capture,
                                      encoderInNanos: entry.nanos, encoderOutNanos: out,
                                      encodedBytes: Int(gst_buffer_get_size(buffer)), poseHash: entry.payload.hash))
            return GST_PAD_PROBE_OK
        }
    }
}

/// Times the subscriber's decoder per frame (probes on its two pads matched by PTS)
/// and reports each frame when the sink renders it (fakesink's `handoff`, emitted after
/// the sink's clock wait when it syncs), with the frame id and capture time of its pose.
package final class DecodeTimer: Sendable {
    private let entered = PTSStopwatch<Void>()
    private let decoded = PTSStopwatch<UInt64>()
    private let report: @Sendable (ShownFrameTiming) -> Void

    package init(report: @escaping @Sendable (ShownFrameTiming) -> Void) { self.report = report }

    package func install(decoder: Element, sink: Element) {
        watchDecoder(decoder)
        sink.set("signal-handoffs", true)
        // void handoff(GstElement *sink, GstBuffer *buffer (borrowed), GstPad *pad)
        _ = Signal.connect(sink.object, "handoff") { [self] (buffer: UnsafeMutableRawPointer?, _: UnsafeMutableRawPointer?) in
            guard let buffer else { return }
            shown(gcast(buffer, to: GstBuffer.self))
        }
    }

    /// For a sink without handoffs (a window): a frame counts as shown when it reaches
    /// `pad`, the sink's input (an unsynchronised sink draws it right then).
    package func install(decoder: Element, shownAt pad: Pad) {
        watchDecoder(decoder)
        _ = pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] info in
            if let buffer = gst_pad_probe_info_get_buffer(info) { shown(buffer) }
            return GST_PAD_PROBE_OK
        }
    }

    private func watchDecoder(_ decoder: Element) {
        let entered = self.entered, decoded = self.decoded
        decoder.staticPad("sink")!.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            if let buffer = gst_pad_probe_info_get_buffer(info), buffer.pointee.pts != GstClockTime.max {
                entered.enter(pts: buffer.pointee.pts, payload: ())
            }
            return GST_PAD_PROBE_OK
        }
        decoder.staticPad("src")!.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            if let buffer = gst_pad_probe_info_get_buffer(info) {
                let inNanos = entered.leave(pts: buffer.pointee.pts)?.nanos ?? 0
                decoded.enter(pts: buffer.pointee.pts, payload: inNanos)
            }
            return GST_PAD_PROBE_OK
        }
    }

    private func shown(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        let now = WallClock.nowNanos()
        var timing = ShownFrameTiming(shownNanos: now)
        if let entry = decoded.leave(pts: buffer.pointee.pts) {
            timing.decodedNanos = entry.nanos
            timing.decoderInNanos = entry.payload == 0 ? nil : entry.payload
        }
        if let bytes = PoseMeta.bytes(of: buffer), let pose = try? PoseWireFormat.decode(bytes) {
            timing.frameID = pose.frameID
            timing.captureNanos = pose.captureTimeNanos
            timing.poseHash = poseFingerprint(bytes)
        }
        report(timing)
    }
}
