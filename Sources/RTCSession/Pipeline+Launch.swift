package import CGStreamer
import CGstShim
import Synchronization

extension Pipeline {
    /// A pipeline from a `gst-launch` description (one-shot jobs: decoding a picture,
    /// probing a device), with the same bus handling, system clock and teardown as one
    /// built element by element. Throws with GStreamer's own parse message (a missing
    /// element names the plugin to install).
    public convenience init(launch description: String, name: String) throws(RTCError) {
        try self.init(name: name)
        var parseError: UnsafeMutablePointer<GError>?
        guard let bin = gst_parse_bin_from_description(description, 0, &parseError) else {
            let text = parseError.map { String(cString: $0.pointee.message) } ?? "unknown"
            if let parseError { g_error_free(parseError) }
            throw .invalidArgument("cannot build \(name) from \"\(description)\": \(text)")
        }
        if let parseError {
            // A description that parsed with a recoverable error (a missing property) still fails here.
            let text = String(cString: parseError.pointee.message)
            g_error_free(parseError)
            gst_object_unref(UnsafeMutableRawPointer(bin))
            throw .invalidArgument("cannot build \(name) from \"\(description)\": \(text)")
        }
        // The bin is floating: the pipeline takes it.
        _ = gst_bin_add(gcast(element.object, to: GstBin.self), gcast(UnsafeMutableRawPointer(bin), to: GstElement.self))
    }

    /// The element called `name` anywhere in the pipeline (a reference of its own).
    package func element(named name: String) -> Element? {
        gst_bin_get_by_name(gcast(element.object, to: GstBin.self), name).map { Element(takingOwnership: $0) }
    }

    /// Records the pipeline's first error message from now on (its text), for a job that
    /// must say why it produced nothing.
    package func recordFirstError() -> FirstError {
        let first = FirstError()
        addObserver { message in
            if case let .error(source, text, _) = message { first.set("\(source): \(text)") }
        }
        return first
    }
}

/// The first error a pipeline posted (`Pipeline.recordFirstError`).
package final class FirstError: Sendable {
    private let text = Mutex<String?>(nil)
    fileprivate func set(_ value: String) { text.withLock { if $0 == nil { $0 = value } } }
    package var message: String? { text.withLock { $0 } }
}

/// A sample pulled from an `appsink`: its caps and buffer, valid while this lives
/// (one reference on the sample, released on deinit).
package final class PulledSample {
    private let sample: OpaquePointer
    package let caps: UnsafeMutablePointer<GstCaps>
    package let buffer: UnsafeMutablePointer<GstBuffer>

    /// Waits up to `timeout` for `appsink`'s next sample (blocking: a thread of its own,
    /// never the async pool); nil at the end of the stream, on timeout, or for a sample
    /// without caps or data.
    package static func pull(from appsink: Element, timeout: Duration) -> PulledSample? {
        let nanos = GstClockTime(timeout.components.seconds) * 1_000_000_000 + GstClockTime(timeout.components.attoseconds / 1_000_000_000)
        guard let sample = gst_app_sink_try_pull_sample(gcast(appsink.raw, to: GstAppSink.self), nanos) else { return nil }
        guard let caps = gst_sample_get_caps(sample), let buffer = gst_sample_get_buffer(sample) else {
            gst_sample_unref(sample)
            return nil
        }
        return PulledSample(sample: sample, caps: caps, buffer: buffer)
    }

    private init(sample: OpaquePointer, caps: UnsafeMutablePointer<GstCaps>, buffer: UnsafeMutablePointer<GstBuffer>) {
        self.sample = sample; self.caps = caps; self.buffer = buffer
    }

    deinit { gst_sample_unref(sample) }
}
