import Synchronization

/// The wakes a state machine asks for (`wake(at:)`, nanoseconds of `MonotonicClock`),
/// kept by one task sleeping until the earliest: `fire` runs at each due time (once for
/// wakes due together), instead of one sleeping task per wake. `stop` cancels it; later
/// wakes are ignored. `fire` is given by `arm` (an owner passes a closure on itself at
/// the end of its init); wakes due before that fire once it is armed.
public final class WakeTimer: Sendable {
    private struct State {
        var due: [UInt64] = []
        var sleeper: Task<Void, Never>?
        /// The time the sleeper sleeps until.
        var sleepsUntil: UInt64?
        var stopped = false
        var fire: (@Sendable () async -> Void)?
    }
    private let state = Mutex(State())

    public init() {}

    /// What to run at each due time.
    public func arm(_ fire: @escaping @Sendable () async -> Void) {
        state.withLock { s in
            s.fire = fire
            if !s.stopped, let earliest = s.due.min() { sleep(&s, until: earliest) }
        }
    }

    /// Asks for `fire` at `at` (now if it is past).
    public func schedule(at: UInt64) {
        state.withLock { s in
            guard !s.stopped else { return }
            s.due.append(at)
            guard s.fire != nil else { return }
            if let until = s.sleepsUntil, until <= at { return }
            sleep(&s, until: at)
        }
    }

    /// A new sleeper until `at` in place of the current one (called with the lock held).
    private func sleep(_ s: inout State, until at: UInt64) {
        s.sleeper?.cancel()
        s.sleepsUntil = at
        s.sleeper = Task { [weak self] in await self?.sleep(until: at) }
    }

    public func stop() {
        let sleeper = state.withLock { s in
            s.stopped = true
            s.due = []
            s.sleepsUntil = nil
            return s.sleeper
        }
        sleeper?.cancel()
    }

    private func sleep(until at: UInt64) async {
        var until = at
        while true {
            let now = MonotonicClock.nanos()
            if until > now {
                guard (try? await Task.sleep(for: .nanoseconds(Int64(until - now)))) != nil else { return }
            }
            let step: (next: UInt64, fire: @Sendable () async -> Void)? = state.withLock { s in
                guard !s.stopped, s.sleepsUntil == until, let fire = s.fire else { return nil }
                let now = MonotonicClock.nanos()
                s.due.removeAll { $0 <= now }
                s.sleepsUntil = s.due.min()
                return (s.sleepsUntil ?? UInt64.max, fire)
            }
            guard let (next, fire) = step else { return }
            await fire()
            guard next != UInt64.max else { return }
            until = next
        }
    }
}
