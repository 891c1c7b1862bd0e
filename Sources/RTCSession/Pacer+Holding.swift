internal import CGStreamer
import Foundation
import Synchronization

/// The packets a `Pacer` holds, in order, and the state of the thread that lets them go.
/// Everything here is read and written with `condition` locked; the thread waits on it
/// for a packet or for the head's departure time.
final class PacerHolding: @unchecked Sendable {
    struct Held {
        /// Owned: the probe that held it took the reference its info carried.
        let buffer: UnsafeMutablePointer<GstBuffer>
        let bytes: Int
        /// Capture to arrival (µs), when known.
        let ageMicros: Int64?
        let arrivedMicros: Int64
        /// When it may go; nil until it reaches the head (its tokens are taken then).
        var dueMicros: Int64?
    }

    let condition = NSCondition()
    var packets: [Held] = []
    /// The pad the thread pushes on (a reference of its own), set by `Pacer.attach`.
    var pad: UnsafeMutablePointer<GstPad>?
    var running = false
    var pushing = false
    var stopped = false
    /// The pacer thread's id (0: none), read without the lock by the probe.
    let thread = Atomic<UInt>(0)

    func locked<T>(_ body: () -> T) -> T {
        condition.lock(); defer { condition.unlock() }
        return body()
    }
}

extension Pacer {
    /// What became of a packet given to `hold`.
    enum Departure { case now, held }

    /// Gives the pacer the pad it pushes held packets on (the aux-sender bin's pacing
    /// element's source pad). Takes a reference of its own, dropped by `stop`.
    func attach(pad: UnsafeMutablePointer<GstPad>) {
        _ = gst_object_ref(UnsafeMutableRawPointer(pad))
        let previous = holding.locked { () -> UnsafeMutablePointer<GstPad>? in
            defer { holding.pad = pad }
            return holding.pad
        }
        if let previous { gst_object_unref(UnsafeMutableRawPointer(previous)) }
    }

    /// Whether the calling thread is the pacer's own (a packet it lets go passes the
    /// probe again, and goes on).
    var onPacerThread: Bool {
        let id = holding.thread.load(ordering: .acquiring)
        return id != 0 && id == UInt(pthread_self())
    }

    /// The pacing decision for a packet in a streaming thread's probe, which must not
    /// wait. `.now`: it goes on at once (nothing held before it, its tokens there, or an
    /// unpaced voice). `.held`: the pacer took the probe's reference to `buffer` and its
    /// thread pushes it when its tokens are there; the probe returns HANDLED.
    func hold(_ buffer: UnsafeMutablePointer<GstBuffer>, bytes: Int, ageMicros: Int64?, payloadType: Int?) -> Departure {
        let now = Int64(g_get_monotonic_time())
        if let payloadType, unpacedPayloadTypes.contains(payloadType) {
            _ = reserve(bytes: bytes, nowMicros: now)
            return .now
        }
        let (departure, start) = holding.locked { () -> (Departure, Bool) in
            // Stopped, or never given a pad to push on: nothing is held.
            if holding.stopped || holding.pad == nil { return (.now, false) }
            if holding.packets.isEmpty, !holding.pushing {
                let wait = departureWait(bytes: bytes, ageMicros: ageMicros, nowMicros: now)
                if wait == 0 {
                    if let age = ageMicros { _ = lowestAge.min(age, ordering: .relaxed) }
                    return (.now, false)
                }
                holding.packets.append(.init(buffer: buffer, bytes: bytes, ageMicros: ageMicros, arrivedMicros: now,
                                             dueMicros: now + min(wait, Self.longestWaitMicros)))
            } else {
                holding.packets.append(.init(buffer: buffer, bytes: bytes, ageMicros: ageMicros, arrivedMicros: now, dueMicros: nil))
            }
            holding.condition.signal()
            let start = !holding.running
            holding.running = true
            return (.held, start)
        }
        if start {
            let thread = Thread { [self] in letGo() }
            thread.name = "posecast-pacer"
            thread.start()
        }
        return departure
    }

    /// Ends the pacer's thread; what it still holds is dropped. Idempotent.
    func stop() {
        holding.locked {
            holding.stopped = true
            holding.condition.signal()
        }
        // With no thread, nothing else releases the held packets and the pad.
        if !holding.locked({ holding.running }) { releaseHolding() }
    }

    /// The pacer's thread: the head packet goes when its tokens are there, in order.
    private func letGo() {
        holding.thread.store(UInt(pthread_self()), ordering: .releasing)
        holding.condition.lock()
        while !holding.stopped {
            guard var head = holding.packets.first else {
                // Idle for a while (nothing over the rate): the thread ends, the next
                // packet held starts another.
                if !holding.condition.wait(until: Date(timeIntervalSinceNow: 2)), holding.packets.isEmpty, !holding.stopped {
                    holding.running = false
                    holding.thread.store(0, ordering: .releasing)
                    holding.condition.unlock()
                    return
                }
                continue
            }
            let now = Int64(g_get_monotonic_time())
            if head.dueMicros == nil {
                let wait = departureWait(bytes: head.bytes, ageMicros: head.ageMicros.map { $0 + now - head.arrivedMicros }, nowMicros: now)
                head.dueMicros = now + min(wait, Self.longestWaitMicros)
                holding.packets[0] = head
            }
            if let due = head.dueMicros, due > now {
                _ = holding.condition.wait(until: Date(timeIntervalSinceNow: Double(due - now) / 1_000_000))
                continue
            }
            holding.packets.removeFirst()
            guard let pad = holding.pad else { gst_mini_object_unref(gcast(head.buffer, to: GstMiniObject.self)); continue }
            holding.pushing = true
            holding.condition.unlock()
            if let age = head.ageMicros { _ = lowestAge.min(age + now - head.arrivedMicros, ordering: .relaxed) }
            // Takes the buffer; a flushing or unlinked pad drops it (a session ending).
            _ = gst_pad_push(pad, head.buffer)
            holding.condition.lock()
            holding.pushing = false
        }
        holding.running = false
        holding.thread.store(0, ordering: .releasing)
        holding.condition.unlock()
        releaseHolding()
    }

    private func releaseHolding() {
        let (packets, pad) = holding.locked { () -> ([PacerHolding.Held], UnsafeMutablePointer<GstPad>?) in
            defer { holding.packets = []; holding.pad = nil }
            return (holding.packets, holding.pad)
        }
        for packet in packets { gst_mini_object_unref(gcast(packet.buffer, to: GstMiniObject.self)) }
        if let pad { gst_object_unref(UnsafeMutableRawPointer(pad)) }
    }
}
