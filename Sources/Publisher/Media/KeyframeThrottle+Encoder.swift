import Dispatch
import PoseCastKit
import RTCSession

extension KeyframeThrottle {
    /// Throttles the keyframe requests reaching the encoder: on its source pad, where the
    /// requests of every payloader's branches pass (a subscriber's PLI/FIR turned into an
    /// upstream force-key-unit by its branch's webrtcbin, or a branch opening). On a
    /// lossy link every subscriber's depayloader asks again for each keyframe it lost a
    /// piece of, and each keyframe (ten times a delta frame) makes more loss: a keyframe
    /// storm (measured at 600 kbit/s: every other frame sent was a keyframe). A request
    /// within the spacing is not lost but merged: one keyframe at its end. `passed` and
    /// `merged` count them.
    func install(on encoderSource: Pad, passed: StreamCounter, merged: StreamCounter) {
        encoderSource.watch(.upstreamEvents) { [weak encoderSource] item in
            guard item.isKeyframeRequest else { return .pass }
            switch self.request(nowNanos: MonotonicClock.nanos()) {
            case .pass:
                passed.add(1)
                return .pass
            case .merged:
                merged.add(1)
                return .drop
            case .deferred(let nanos):
                merged.add(1)
                // Not from this streaming thread: the event travels up through the encoder.
                if let pad = encoderSource {
                    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanos))) { pad.requestKeyframeUpstream() }
                }
                return .drop
            }
        }
    }
}
