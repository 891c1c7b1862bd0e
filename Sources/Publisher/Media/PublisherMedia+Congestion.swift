import PoseCastKit
import CameraControl
import RTCSession
import SyntheticCamera
import Synchronization
import Dispatch
import NodeOutput
#if canImport(Glibc)
import Glibc
import PoseMedia
#endif
import VideoEffects
import Voice

/// Congestion control over every subscriber: one bandwidth estimate each, the encoder
/// at the lowest, the resolution step, and what the status line shows of it.
extension PublisherMedia {
    /// The rate congestion control allows (the lowest subscriber estimate), or the fixed
    /// bitrate (kbit/s).
    public var bitrateKbps: Int { state.withLock { $0.bitrateKbps } }

    /// What the encoder is asked for (kbit/s): `bitrateKbps` less its learnt overshoot.
    public var encoderTargetKbps: Int { state.withLock { $0.encoderTargetKbps } }

    /// One step of congestion control (`config.adaptBitrate`; call a few times a second):
    /// reads what each connected subscriber reported (NACKs, reception reports, round
    /// trips, REMB), steps its estimate, and sets the encoder to the lowest estimate (the
    /// weakest link decides: one encoder serves all; docs/NETWORK.md). GStreamer calls
    /// here are short property reads and sets, outside the state lock.
    public func adaptBitrate(nowNanos: UInt64) {
        guard config.adaptBitrate else { return }
        let peers = state.withLock { s in s.peers.values.map(\.peer).filter(\.isVerified) }
        let reports = peers.map { ($0, $0.takeFeedback()) }
        let producedBytes = rtpBytesProduced
        let change = state.withLock { s -> Int? in
            let estimates = reports.map { peer, interval in
                let key = ObjectIdentifier(peer)
                var controller = s.controllers[key] ?? BitrateController(configuration: .init(
                    ceilingKbps: config.bitrateKbps, floorKbps: config.minimumBitrateKbps), startKbps: s.bitrateKbps)
                defer { s.controllers[key] = controller }
                return controller.update(interval, nowNanos: nowNanos)
            }
            // No subscriber: keep the rate (the next one starts from it and climbs if its
            // link allows).
            if let target = estimates.min() { s.bitrateKbps = target }
            Self.learnOvershoot(&s, producedBytes: producedBytes, nowNanos: nowNanos)
            let encoderTarget = max(config.minimumBitrateKbps, Int(Double(s.bitrateKbps) * s.overshootCorrection))
            // Small changes are not worth an encoder reconfiguration.
            guard abs(encoderTarget - s.encoderTargetKbps) * 50 > s.encoderTargetKbps else { return nil }
            s.encoderTargetKbps = encoderTarget
            return encoderTarget
        }
        if let change {
            config.codec.setBitrate(change, on: encoder)
        }
        let allowed = bitrateKbps
        let resized = state.withLock { s -> (width: Int, height: Int)? in
            s.ladder.update(allowedKbps: allowed, nowNanos: nowNanos) ? (s.ladder.width, s.ladder.height) : nil
        }
        // New caps on the filter: videoscale renegotiates at the next frame and the
        // encoder starts over at the new size with a keyframe (no renegotiation with the
        // peers: VP8 and H.264 carry the size in each keyframe).
        if let resized { encodeCaps.set("caps", Self.encodeCapsText(width: resized.width, height: resized.height)) }
        let pacing = Self.pacingKbps(forEncoderKbps: bitrateKbps)
        let budget = Self.retransmissionBudgetKbps(forAllowedKbps: bitrateKbps)
        for peer in peers {
            peer.pacer?.setRate(kbps: pacing)
            peer.pacer?.setRetransmissionBudget(kbps: budget)
        }
    }

    /// The size the encoder is given now (the camera's, or a step down under congestion
    /// control), and the steps taken so far.
    public var encodedSize: (width: Int, height: Int, stepsDown: Int, stepsUp: Int) {
        state.withLock { ($0.ladder.width, $0.ladder.height, $0.ladder.stepsDown, $0.ladder.stepsUp) }
    }

    static func encodeCapsText(width: Int, height: Int) -> String {
        "video/x-raw,width=\(width),height=\(height)"
    }

    /// Once a second: the payloader's output over the last second against the encoder's
    /// target moves `overshootCorrection` by at most 10 % (slow, so a keyframe does not
    /// swing it), within 0.5…1.
    private static func learnOvershoot(_ s: inout State, producedBytes: UInt64, nowNanos: UInt64) {
        guard let last = s.produced else { s.produced = (producedBytes, nowNanos); return }
        let seconds = Double(nowNanos &- last.nanos) / 1e9
        guard seconds >= 1 else { return }
        s.produced = (producedBytes, nowNanos)
        let producedKbps = Double(producedBytes &- last.bytes) * 8 / 1000 / seconds
        guard producedKbps > 0, s.bitrateKbps > 0 else { return }
        let ratio = min(max(Double(s.bitrateKbps) / producedKbps, 0.9), 1.1)
        s.overshootCorrection = min(max(s.overshootCorrection * ratio, 0.5), 1)
    }

    /// Every subscriber's packets are paced (`Pacer`) at this multiple of the allowed
    /// rate (`bitrateKbps`), libwebrtc's factor: a frame leaves within 1/2.5 of a frame
    /// time, a keyframe (at most three frames' worth, `max-intra-bitrate`) within 40 ms,
    /// inside the receiver's 50 ms jitter buffer. Slower pacing made the tail of each
    /// keyframe arrive after that deadline: declared lost, another keyframe asked for,
    /// and so on (measured at 1.2 × on a perfect link: 37 keyframe requests in 30 s and
    /// a 0.6 s freeze). Bursts up to the link's rate then wait in its buffer.
    public static let pacingFactor = 2.5

    static func pacingKbps(forEncoderKbps kbps: Int) -> Int { Int(Double(kbps) * pacingFactor) }

    /// Retransmissions may take this share of the allowed rate on top of the media
    /// (`RetransmissionGate`): enough to repair a few per cent of loss at once, never a
    /// storm that doubles what a full link is offered.
    public static let retransmissionShare = 0.25

    static func retransmissionBudgetKbps(forAllowedKbps kbps: Int) -> Int { max(Int(Double(kbps) * retransmissionShare), 16) }

    /// Retransmissions each subscriber's gate refused so far (asked again too soon, over budget).
    public var retransmissionsDropped: (repeated: UInt64, overBudget: UInt64) {
        state.withLock { s in s.peers.values.compactMap(\.peer.pacer) }.reduce((0, 0)) { total, pacer in
            let d = pacer.retransmissionsDropped
            return (total.0 + d.repeated, total.1 + d.overBudget)
        }
    }

    /// Each connected subscriber's congestion state (`adaptBitrate`), by peer name.
    public var congestion: [CongestionSnapshot] {
        state.withLock { s in
            s.peers.compactMap { key, entry in
                s.controllers[key].map { c in
                    var snapshot = CongestionSnapshot(peer: entry.peer.name, controller: c, encoderKbps: s.encoderTargetKbps)
                    snapshot.pacedPackets = entry.peer.pacer?.packetsDelayed
                    snapshot.transportFeedbackRefused = entry.peer.transportFeedbackRefused
                    snapshot.link = entry.peer.link?.stats
                    return snapshot
                }
            }.sorted { $0.peer < $1.peer }
        }
    }
}
