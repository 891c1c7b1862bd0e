/// How the media path trades latency for smoothness.
///
/// `baseline` is what `webrtcbin` and a plain GStreamer player do out of the box in 1.22:
/// the receive jitter buffer (rtpbin inside webrtcbin, `latency` property) holds 200 ms,
/// and the pipeline's latency query adds it to what the receiving video sink waits for —
/// a video sink (`sync=true`, its default) renders each frame at its running time plus
/// that latency on the pipeline clock. On the send side the raw frames pass a
/// `clocksync` (as gst-plugins-rs `webrtcsink` puts in front of its encoders), which
/// holds each frame until its running time on the clock.
///
/// `tuned` is what PoseCast ships: the jitter buffer at 50 ms (room to wait for a
/// NACK retransmission on a real network, never waited for when packets arrive in
/// order), the sink renders as soon as a frame is decoded (no clock wait), no
/// `clocksync` before the encoder, and the encoder in its real-time, no-lookahead mode
/// (`VideoCodec.makeEncoder` always sets it).
public enum LatencyProfile: String, Sendable, CaseIterable, Codable {
    case tuned, baseline

    /// Receive jitter buffer latency in ms (webrtcbin's `latency`).
    public var jitterBufferLatencyMs: Int { self == .tuned ? 50 : 200 }
    /// A `clocksync` on the raw frames before the encoder.
    public var sendClockSync: Bool { self == .baseline }
    /// The receiving sink waits for each frame's running time plus the pipeline latency.
    public var sinkSyncsToClock: Bool { self == .baseline }
}
