internal import CGStreamer
import CGstShim
import Synchronization

/// A webrtcbin data channel (full reference). Its events go to the owning peer's stream.
public final class DataChannel: @unchecked Sendable {
    public enum ReadyState: Int32, Sendable { case connecting = 1, open, closing, closed }

    public let label: String
    private let raw: UnsafeMutableRawPointer
    private let handlers = Mutex<[UInt]>([])

    /// Adopts a channel reference (`transfer full`) and routes its signals to `sink`.
    init(takingOwnership raw: UnsafeMutableRawPointer, sink: AsyncStream<RTCEvent>.Continuation) {
        self.raw = raw
        let labelC = pcg_object_get_string(raw, "label")
        label = labelC.map { String(cString: $0) } ?? ""
        g_free(labelC)
        let label = self.label
        let ids = [
            Signal.connect(raw, "on-open") { sink.yield(.dataChannelOpen(label: label)) },
            Signal.connect(raw, "on-close") { sink.yield(.dataChannelClosed(label: label)) },
            Signal.connect(raw, "on-error") { (error: UnsafeMutableRawPointer?) in
                let message = error.map { String(cString: $0.assumingMemoryBound(to: GError.self).pointee.message) }
                sink.yield(.dataChannelError(label: label, message: message ?? "unknown error"))
            },
            Signal.connect(raw, "on-message-string") { (text: UnsafeMutableRawPointer?) in
                let string = text.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? ""
                sink.yield(.dataChannelMessage(label: label, .text(string)))
            },
            Signal.connect(raw, "on-message-data") { (bytes: UnsafeMutableRawPointer?) in
                var data = [UInt8]()
                if let bytes {
                    var size: gsize = 0
                    let gbytes = OpaquePointer(bytes)
                    if let p = g_bytes_get_data(gbytes, &size) {
                        data = Array(UnsafeRawBufferPointer(start: p, count: Int(size)))
                    }
                }
                sink.yield(.dataChannelMessage(label: label, .binary(data)))
            },
        ]
        handlers.withLock { $0 = ids }
    }

    deinit {
        for id in handlers.withLock({ $0 }) { Signal.disconnect(raw, id) }
        g_object_unref(raw)
    }

    public var readyState: ReadyState {
        ReadyState(rawValue: pcg_object_get_int(raw, "ready-state")) ?? .closed
    }

    /// Sends a text message: not empty and without NUL, both refused here with a precise
    /// error. A C string ends at NUL (JSON escapes it). GStreamer 1.22 cannot send an empty
    /// text: "" goes as a zero-length SCTP message with the string PPID, which silently
    /// stalls the channel for good, and NULL (the empty-string PPID) closes the channel.
    public func send(_ text: String) throws(RTCError) {
        guard !text.isEmpty else {
            throw .dataChannel(label: label, reason: "an empty text message cannot be sent (GStreamer 1.22 would break the channel)")
        }
        guard !text.utf8.contains(0) else {
            throw .dataChannel(label: label, reason: "text contains a NUL byte; send it as binary or escape it")
        }
        var error: UnsafeMutablePointer<GError>? = nil
        let ok = gst_webrtc_data_channel_send_string_full(OpaquePointer(raw), text, &error)
        try check(ok, error)
    }

    public func send(_ data: [UInt8]) throws(RTCError) {
        var error: UnsafeMutablePointer<GError>? = nil
        let bytes = data.withUnsafeBytes { g_bytes_new($0.baseAddress, gsize($0.count)) }
        defer { g_bytes_unref(bytes) }
        let ok = gst_webrtc_data_channel_send_data_full(OpaquePointer(raw), bytes, &error)
        try check(ok, error)
    }

    public func close() { gst_webrtc_data_channel_close(OpaquePointer(raw)) }

    private func check(_ ok: gboolean, _ error: UnsafeMutablePointer<GError>?) throws(RTCError) {
        guard ok == 0 else { return }
        let message = error.map { String(cString: $0.pointee.message) } ?? "send failed (state \(readyState))"
        if let error { g_error_free(error) }
        throw .dataChannel(label: label, reason: message)
    }
}
