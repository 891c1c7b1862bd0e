import Dispatch
import Foundation

/// Why a frame log could not be opened.
public struct FrameLogError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "cannot write the frame log \(path): \(reason)" }
}

/// One JSON line per frame (`--frame-log`), written from a serial background queue so
/// the streaming thread that times a frame only hands over a small struct.
///
/// Publisher lines: `frameId`, `captureNs`, `encodeInNs`, `encodeOutNs`, `encodeMs`,
/// `encodedBytes`, `poseHash`. Subscriber lines: `frameId` (null without a valid pose),
/// `captureNs`, `decodeInNs`, `decodedNs`, `shownNs`, `latencyMs` (capture → shown),
/// `decodeMs`, `poseHash`. `poseHash` is FNV-1a 64 of the pose's wire bytes (hex): a
/// frame carries its own pose when its hash and capture time equal the publisher's
/// line for the same frame id (scripts/bench-loopback joins the two logs).
public final class FrameLog: @unchecked Sendable {
    public let path: String
    private let queue = DispatchQueue(label: "posecast.frame-log")
    /// Touched only on `queue`.
    private var file: UnsafeMutablePointer<FILE>?

    public init(path: String) throws(FrameLogError) {
        guard let file = fopen(path, "w") else {
            throw FrameLogError(path: path, reason: String(cString: strerror(errno)))
        }
        self.path = path
        self.file = file
    }

    deinit { if let file { fclose(file) } }

    public func record(_ t: EncodedFrameTiming) {
        queue.async { [self] in
            write(String(format: #"{"frameId":%u,"captureNs":%llu,"encodeInNs":%llu,"encodeOutNs":%llu,"encodeMs":%.3f,"encodedBytes":%d,"poseHash":"%016llx"}"#,
                         t.frameID, t.captureNanos, t.encoderInNanos, t.encoderOutNanos, t.encodeMillis,
                         t.encodedBytes, t.poseHash))
        }
    }

    public func record(_ t: ShownFrameTiming) {
        queue.async { [self] in
            func n(_ v: UInt64?) -> String { v.map(String.init) ?? "null" }
            func ms(_ v: Double?) -> String { v.map { String(format: "%.3f", $0) } ?? "null" }
            write(#"{"frameId":\#(t.frameID.map(String.init) ?? "null"),"captureNs":\#(n(t.captureNanos)),"#
                  + #""decodeInNs":\#(n(t.decoderInNanos)),"decodedNs":\#(n(t.decodedNanos)),"shownNs":\#(t.shownNanos),"#
                  + #""latencyMs":\#(ms(t.latencyMillis)),"decodeMs":\#(ms(t.decodeMillis)),"#
                  + #""poseHash":\#(t.poseHash.map { "\"" + String(format: "%016llx", $0) + "\"" } ?? "null")}"#)
        }
    }

    /// Writes out what is queued and closes the file.
    public func close() {
        queue.sync {
            if let file { fclose(file) }
            file = nil
        }
    }

    private func write(_ line: String) {
        guard let file else { return }
        fputs(line + "\n", file)
        fflush(file)   // a killed process still leaves every frame it timed
    }
}
