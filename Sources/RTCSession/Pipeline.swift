package import CGStreamer
import CGstShim
import Synchronization
import Dispatch

/// A bus message, copied out of GStreamer into Swift values.
public enum BusMessage: Sendable, Equatable {
    case error(source: String, message: String, debug: String)
    case warning(source: String, message: String, debug: String)
    case endOfStream
    case stateChanged(source: String, old: String, new: String)
}

/// Which bus messages an observer hears, by where their source sits in the pipeline.
package enum BusScope: Sendable {
    case all
    /// Posted by this element or anything inside it (a session's webrtcbin).
    case within(Element)
    /// Posted outside every element of this factory (the shared part of a pipeline
    /// whose sessions each have a webrtcbin).
    case outside(factory: String)
}

/// A GstPipeline (full reference) whose bus feeds any number of observers from a
/// sync handler: the handler runs on the posting thread, observers must be quick.
public final class Pipeline: @unchecked Sendable {
    package let element: Element
    private let observers = Mutex<[UInt: (scope: BusScope, body: @Sendable (BusMessage) -> Void)]>([:])
    private let nextToken = Atomic<UInt>(1)
    private let bus: UnsafeMutablePointer<GstBus>

    public init(name: String) throws(RTCError) {
        try GStreamer.initialize()
        guard let raw = gst_pipeline_new(name) else { throw .invalidArgument("cannot create pipeline \(name)") }
        element = Element(takingFloating: raw)
        // The system clock, always: left to choose, a pipeline takes an audio device's
        // (pulsesrc's, pulsesink's), which stops when its sound server goes away, and every
        // sink then waits, the video's pacing and congestion control with them.
        if let clock = gst_system_clock_obtain() {
            gst_pipeline_use_clock(gcast(raw, to: GstPipeline.self), clock)
            gst_object_unref(UnsafeMutableRawPointer(clock))
        }
        bus = gst_element_get_bus(raw)
        let box = Unmanaged.passRetained(BusBox(self)).toOpaque()
        gst_bus_set_sync_handler(bus, { _, message, userData in
            let box = Unmanaged<BusBox>.fromOpaque(userData!).takeUnretainedValue()
            // GST_BUS_DROP hands the message back to us: the handler must unref it, or
            // every message (and the element it names as its source) is leaked.
            defer { if let message { gst_message_unref(message) } }
            guard let message, let pipeline = box.pipeline else { return GST_BUS_DROP }
            if message.pointee.type == GST_MESSAGE_LATENCY {
                // A sink's latency changed (e.g. a subscriber branch joined): redistribute it,
                // off the streaming thread as GStreamer asks.
                DispatchQueue.global().async { [weak pipeline] in
                    if let pipeline { _ = gst_bin_recalculate_latency(gcast(pipeline.element.object, to: GstBin.self)) }
                }
            } else if let parsed = BusMessage(message) {
                pipeline.dispatch(parsed, from: message.pointee.src)
            }
            return GST_BUS_DROP
        }, box, { userData in Unmanaged<BusBox>.fromOpaque(userData!).release() })
    }

    deinit {
        gst_bus_set_sync_handler(bus, nil, nil, nil)
        _ = gst_element_set_state(element.raw, GST_STATE_NULL)
        gst_object_unref(UnsafeMutableRawPointer(bus))
    }

    public var name: String { element.name }

    /// Observes the bus messages of `scope`, on the posting thread; returns a token for
    /// `removeObserver`.
    @discardableResult
    package func addObserver(_ scope: BusScope = .all, _ body: @escaping @Sendable (BusMessage) -> Void) -> UInt {
        let token = nextToken.add(1, ordering: .relaxed).oldValue
        observers.withLock { $0[token] = (scope, body) }
        return token
    }

    public func removeObserver(_ token: UInt) { _ = observers.withLock { $0.removeValue(forKey: token) } }

    /// Called from the sync handler, while `source` (the message's) is alive.
    private func dispatch(_ message: BusMessage, from source: UnsafeMutablePointer<GstObject>?) {
        let current = observers.withLock { Array($0.values) }
        for observer in current {
            switch observer.scope {
            case .all: break
            case .within(let element):
                guard let source, gst_object_has_as_ancestor(source, gcast(element.object, to: GstObject.self)) != 0 else { continue }
            case .outside(let factory):
                if let source, pcg_object_inside_factory(source, factory) != 0 { continue }
            }
            observer.body(message)
        }
    }

    package func add(_ elements: Element...) {
        for e in elements { _ = gst_bin_add(gcast(element.object, to: GstBin.self), e.raw) }
    }

    package func remove(_ e: Element) {
        _ = gst_element_set_state(e.raw, GST_STATE_NULL)
        Self.stopLockedDescendants(of: e.raw)
        _ = gst_bin_remove(gcast(element.object, to: GstBin.self), e.raw)
    }

    /// Links a chain of elements in order.
    package func link(_ chain: [Element]) throws(RTCError) {
        for (a, b) in zip(chain, chain.dropFirst()) { try a.link(b) }
    }

    /// Asks for PLAYING (on the calling thread: the change itself is asynchronous for live
    /// pipelines; use `start()` from async code, which also waits for it).
    public func play() throws(RTCError) { try setState(GST_STATE_PLAYING, "PLAYING") }
    /// Sets the pipeline to NULL on the calling thread, joining its streaming threads:
    /// from async code use `shutDown()`. Elements whose state is locked (webrtcbin locks
    /// its transports' until DTLS is up) do not follow a bin to NULL: they are set to NULL
    /// each, or a task of theirs still runs when the last reference goes. Seen as a hang in
    /// a session whose DTLS failed (a forged answer): disposing the peer joined sctpenc's
    /// source task, still waiting for data. (Kept until webrtcbin stops its locked
    /// elements itself on the way to NULL.)
    public func stop() {
        _ = gst_element_set_state(element.raw, GST_STATE_NULL)
        Self.stopLockedDescendants(of: element.raw)
    }

    private static func stopLockedDescendants(of bin: UnsafeMutablePointer<GstElement>) {
        Element.forEachDescendant(of: bin) { child in
            if gst_element_is_locked_state(child) != 0 { _ = gst_element_set_state(child, GST_STATE_NULL) }
        }
    }

    /// Sets PLAYING on the state worker and waits, driven by the bus, until the pipeline
    /// has reached it or `timeout` has passed (a live pipeline whose source has not
    /// started yet may stay in PAUSED → PLAYING). Returns whether it is PLAYING.
    @discardableResult
    public func start(timeout: Duration = .seconds(2)) async throws(RTCError) -> Bool {
        let outcome = OnceResult<Bool>()
        let failed = Atomic<Bool>(false)
        let name = self.name
        let token = addObserver { message in
            if case let .stateChanged(source, _, new) = message, source == name, new == "PLAYING" { outcome.finish(true) }
        }
        StateWorker.shared.submit { [self] in
            if gst_element_set_state(element.raw, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE {
                failed.store(true, ordering: .relaxed)
                outcome.finish(false)
            } else if currentState == GST_STATE_PLAYING {
                outcome.finish(true)   // already there: no state-change message will come
            }
        }
        let reached = await outcome.value(orAfter: timeout, false)
        removeObserver(token)
        if failed.load(ordering: .relaxed) { throw .stateChange(element: name, target: "PLAYING") }
        return reached
    }

    /// Sets the pipeline to NULL on the state worker and waits until it is done.
    public func shutDown() async {
        await StateWorker.shared.run { [self] in _ = gst_element_set_state(element.raw, GST_STATE_NULL) }
    }

    /// The current state, without waiting.
    package var currentState: GstState {
        var current = GST_STATE_VOID_PENDING
        _ = gst_element_get_state(element.raw, &current, nil, 0)
        return current
    }

    package func setState(_ state: GstState, _ label: String) throws(RTCError) {
        if gst_element_set_state(element.raw, state) == GST_STATE_CHANGE_FAILURE {
            throw .stateChange(element: name, target: label)
        }
    }

    /// The pipeline's state and the one it is moving to ("PLAYING", or "PAUSED → PLAYING"),
    /// without waiting: for diagnostics.
    public var stateDescription: String {
        var current = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING
        _ = gst_element_get_state(element.raw, &current, &pending, 0)
        let name = { (s: GstState) in String(cString: gst_element_state_get_name(s)) }
        return pending == GST_STATE_VOID_PENDING ? name(current) : "\(name(current)) → \(name(pending))"
    }

    /// Current running time of the pipeline in nanoseconds (clock time minus base time), if playing.
    package var runningTimeNanos: UInt64? {
        guard let clock = gst_element_get_clock(element.raw) else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(clock)) }
        return UInt64(gst_clock_get_time(clock) &- gst_element_get_base_time(element.raw))
    }
}

private final class BusBox {
    weak var pipeline: Pipeline?
    init(_ pipeline: Pipeline) { self.pipeline = pipeline }
}

extension BusMessage {
    init?(_ message: UnsafeMutablePointer<GstMessage>) {
        let source = message.pointee.src.map { objectName(UnsafeMutableRawPointer($0)) } ?? "?"
        let type = message.pointee.type
        if type == GST_MESSAGE_ERROR || type == GST_MESSAGE_WARNING {
            var error: UnsafeMutablePointer<GError>? = nil
            var debug: UnsafeMutablePointer<gchar>? = nil
            if type == GST_MESSAGE_ERROR { gst_message_parse_error(message, &error, &debug) }
            else { gst_message_parse_warning(message, &error, &debug) }
            let text = error.map { String(cString: $0.pointee.message) } ?? ""
            let debugText = debug.map { String(cString: $0) } ?? ""
            if let error { g_error_free(error) }
            g_free(debug)
            self = type == GST_MESSAGE_ERROR
                ? .error(source: source, message: text, debug: debugText)
                : .warning(source: source, message: text, debug: debugText)
        } else if type == GST_MESSAGE_EOS {
            self = .endOfStream
        } else if type == GST_MESSAGE_STATE_CHANGED {
            var old = GST_STATE_NULL, new = GST_STATE_NULL, pending = GST_STATE_NULL
            gst_message_parse_state_changed(message, &old, &new, &pending)
            self = .stateChanged(source: source, old: String(cString: gst_element_state_get_name(old)),
                                 new: String(cString: gst_element_state_get_name(new)))
        } else {
            return nil
        }
    }
}

/// A value set once, from any thread, and awaited by one task: the first `finish` wins,
/// later ones are ignored, and a `finish` before the task waits is kept for it.
package final class OnceResult<T: Sendable>: Sendable {
    private let state = Mutex<(waiter: CheckedContinuation<T, Never>?, result: T?)>((nil, nil))
    package init() {}

    package func finish(_ value: T) {
        let waiter = state.withLock { s -> CheckedContinuation<T, Never>? in
            guard s.result == nil else { return nil }
            s.result = value
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: value)
    }

    /// The value, or `fallback` when none was set within `timeout` (a later `finish` is then ignored).
    package func value(orAfter timeout: Duration, _ fallback: T) async -> T {
        let timer = Task { try? await Task.sleep(for: timeout); finish(fallback) }
        defer { timer.cancel() }
        return await value()
    }

    package func value() async -> T {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { s -> T? in
                if let result = s.result { return result }
                s.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
