internal import CGStreamer
import PoseCastKit
import PoseMedia
import RTCSession
import Synchronization

/// Frames an application makes itself, each with the camera pose it was taken from: the
/// source of `PublisherMediaConfig.Source.frames`. A program with its own camera stack
/// or renderer (an AR framework, a robot's camera with its odometry) hands each frame
/// and its pose here; the publisher sends them together as it does the synthetic
/// camera's, so every expert reads the pose of the exact frame on screen.
///
/// Frames are I420 at the feed's size, pushed as they are captured (the push is their
/// capture time on the pipeline clock). The feed keeps at most two frames waiting: a
/// frame the pipeline could not take in time is dropped, oldest first, and counted,
/// never queued up as latency. Ownership: the publisher's pipeline owns the `appsrc`; the
/// feed holds a reference while the pipeline is built, so a push after the publisher
/// stopped is refused, not a crash.
public final class FrameFeed: Sendable {
    public let width: Int, height: Int, fps: Int

    private struct State {
        /// The appsrc, once the publisher built its pipeline (a reference of our own).
        var source: UnsafeMutableRawPointer?
        var nextFrameID: UInt32 = 0
        var pushed: UInt64 = 0
        var dropped: UInt64 = 0
    }
    private let state = Mutex(State())

    /// A feed of `width`×`height` I420 frames at `fps` (both sizes even).
    public init(width: Int, height: Int, fps: Int = 30) throws(FrameFeedError) {
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0, width <= 7680, height <= 4320 else {
            throw .badSize("a frame feed takes even sizes up to 7680×4320, not \(width)×\(height)")
        }
        guard (1...120).contains(fps) else { throw .badSize("a frame feed runs at 1 to 120 fps, not \(fps)") }
        self.width = width; self.height = height; self.fps = fps
    }

    deinit { detach() }

    /// The bytes of one I420 frame at the feed's size: Y, then U, then V, no padding.
    public var frameBytes: Int { width * height * 3 / 2 }

    /// Frames pushed into the pipeline, and frames dropped because two were already waiting.
    public var counts: (pushed: UInt64, dropped: UInt64) { state.withLock { ($0.pushed, $0.dropped) } }

    /// Sends one frame with its pose. The frame id and the capture time are the feed's:
    /// ids count up from 0, the capture time is now on the wall clock (the pose's time
    /// base), so `pose.frameID` and `pose.captureTimeNanos` are replaced. Returns the
    /// frame id given. Throws when the publisher has not started or has stopped, or when
    /// `i420` is not one frame at the feed's size.
    @discardableResult
    public func push(i420: UnsafeRawBufferPointer, pose: FramePose) throws(FrameFeedError) -> UInt32 {
        guard i420.count == frameBytes, let base = i420.baseAddress else {
            throw .badFrame("a \(width)×\(height) I420 frame is \(frameBytes) bytes, not \(i420.count)")
        }
        var stamped = pose
        stamped.captureTimeNanos = WallClock.nowNanos()
        // The source and the id are taken together, so ids follow the order of pushes.
        let taken: (UnsafeMutableRawPointer, UInt32)? = state.withLock { s in
            guard let source = s.source else { return nil }
            defer { s.nextFrameID &+= 1 }
            return (gst_object_ref(source)!, s.nextFrameID)
        }
        guard let (source, frameID) = taken else {
            throw .notRunning("the publisher has not built its pipeline yet, or has stopped")
        }
        defer { gst_object_unref(source) }
        stamped.frameID = frameID
        let encoded: [UInt8]
        do { encoded = try PoseWireFormat.encode(stamped) } catch { throw .badPose("\(error)") }
        guard let buffer = gst_buffer_new_allocate(nil, gsize(frameBytes), nil) else {
            throw .badFrame("no memory for a \(frameBytes)-byte frame")
        }
        _ = gst_buffer_fill(buffer, 0, base, gsize(frameBytes))
        _ = PoseMeta.attach(encoded, to: buffer)
        let appsrc = gcast(source, to: GstAppSrc.self)
        let full = LiveFrameSource.isFull(source, frameBytes: frameBytes)
        // appsrc takes the buffer (full transfer).
        let flow = gst_app_src_push_buffer(appsrc, buffer)
        state.withLock { s in
            s.pushed += 1
            if full { s.dropped += 1 }
        }
        guard flow == GST_FLOW_OK else {
            throw .notRunning(flow == GST_FLOW_FLUSHING ? "the publisher is stopping" : "the pipeline refused the frame (flow \(flow.rawValue))")
        }
        return frameID
    }

    /// `push(i420:pose:)` from an array.
    @discardableResult
    public func push(i420: [UInt8], pose: FramePose) throws(FrameFeedError) -> UInt32 {
        // withUnsafeBytes rethrows untyped: carry the result out instead.
        let result = i420.withUnsafeBytes { bytes in Result { () throws(FrameFeedError) in try push(i420: bytes, pose: pose) } }
        return try result.get()
    }

    /// The publisher's source element for this feed (`LiveFrameSource`, at the feed's
    /// size). One publisher per feed.
    func makeElement() throws(RTCError) -> Element {
        let element = try LiveFrameSource.make(width: width, height: height, fps: fps)
        let taken = state.withLock { s -> Bool in
            guard s.source == nil else { return false }
            s.source = gst_object_ref(UnsafeMutableRawPointer(element.raw))
            return true
        }
        guard taken else { throw .invalidArgument("this frame feed already feeds a publisher") }
        return element
    }

    /// Lets go of the source when its publisher stops: later pushes are refused.
    func detach() {
        let source = state.withLock { s -> UnsafeMutableRawPointer? in
            defer { s.source = nil }
            return s.source
        }
        if let source { gst_object_unref(source) }
    }
}

extension FrameFeed: Equatable {
    public static func == (a: FrameFeed, b: FrameFeed) -> Bool { a === b }
}

/// Why a `FrameFeed` refused a frame.
public enum FrameFeedError: Error, Sendable, Equatable, CustomStringConvertible {
    case badSize(String)
    case badFrame(String)
    case badPose(String)
    case notRunning(String)

    public var description: String {
        switch self {
        case .badSize(let text), .badFrame(let text), .notRunning(let text): text
        case .badPose(let text): "the pose does not encode: \(text)"
        }
    }
}
