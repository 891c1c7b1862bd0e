import Synchronization

/// Decides, on the streaming thread, what becomes of a keyframe request: the first
/// after `spacingNanos` passes; the first within it is deferred to its end (one
/// keyframe then answers every request made meanwhile); later ones are merged into
/// that one.
package final class KeyframeThrottle: Sendable {
    package enum Decision: Equatable { case pass, deferred(nanos: UInt64), merged }
    private struct State { var lastPassed: UInt64?; var deferredUntil: UInt64? }
    private let state = Mutex(State())
    package let spacingNanos: UInt64
    /// A timer may fire this much early: the deferred request itself, not a new one.
    static let slackNanos: UInt64 = 10_000_000
    package init(spacingNanos: UInt64) { self.spacingNanos = spacingNanos }

    package func request(nowNanos: UInt64) -> Decision {
        state.withLock { s in
            if let until = s.deferredUntil {
                if nowNanos &+ Self.slackNanos < until { return .merged }
                s.deferredUntil = nil
                s.lastPassed = nowNanos
                return .pass
            }
            guard let last = s.lastPassed, nowNanos &- last < spacingNanos else {
                s.lastPassed = nowNanos
                return .pass
            }
            let until = last + spacingNanos
            s.deferredUntil = until
            return .deferred(nanos: until - nowNanos)
        }
    }
}
