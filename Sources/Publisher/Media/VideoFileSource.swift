internal import CGStreamer
import CGstShim
import Foundation
import PoseMedia
import RTCSession
import Synchronization

/// A recorded video played as a live camera, looping (`--source video:PATH`): a moving
/// person for the effects without a camera. A decode pipeline of its own (filesrc →
/// decodebin → I420 letterboxed into the capture size at the capture rate → appsink,
/// synchronised to the clock, so it plays at the file's own speed) is read by a thread
/// that pushes each frame into the publisher's live `appsrc` (`LiveFrameSource`), where
/// it is stamped and tagged with its pose like any camera's frame. At the end of the file
/// the decode pipeline seeks back to its start.
///
/// Ownership: the publisher's pipeline owns the `appsrc` element; this object holds a
/// reference of its own (`element`), the decode pipeline, and the thread, which `stop`
/// ends and joins.
final class VideoFileSource: Sendable {
    let element: Element
    let path: String
    private let decoder: Pipeline
    private let sink: Element
    private let firstError: FirstError
    private let frameBytes: Int
    private struct State {
        var stopping = false
        var started = false
    }
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)
    /// Called (from the reading thread) once when the file stops giving frames for a reason
    /// other than `stop`: the decoder's error, naming the file.
    private let onError: @Sendable (String) -> Void

    /// Builds the decode pipeline (played by `start`; `check` first tells whether the file decodes).
    init(path: String, width: Int, height: Int, fps: Int, onError: @escaping @Sendable (String) -> Void) throws(RTCError) {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw .deviceMissing(path: path, hint: "no readable video there")
        }
        self.path = path; self.onError = onError
        frameBytes = width * height * 3 / 2
        element = try LiveFrameSource.make(width: width, height: height, fps: fps)
        decoder = try Pipeline(launch: "filesrc name=file ! decodebin ! videoconvert ! videoscale add-borders=true ! videorate "
                                   + "! video/x-raw,format=I420,width=\(width),height=\(height),framerate=\(fps)/1,pixel-aspect-ratio=1/1 "
                                   + "! appsink name=sink sync=true max-buffers=2 drop=false",
                               name: "video-file")
        guard let file = decoder.element(named: "file"), let sink = decoder.element(named: "sink") else {
            throw .invalidArgument("the video decoder has no file source or sink")
        }
        file.set("location", path)
        self.sink = sink
        firstError = decoder.recordFirstError()
    }

    /// Whether the file at `path` decodes: a decoder of its own prerolls its first frame
    /// (on a thread of its own, off the async pool), so a file no decoder reads is refused
    /// at start with the decoder's reason and the path.
    static func check(_ path: String) async throws(RTCError) {
        try await OwnThread.run { () throws(RTCError) in try prerolls(path) }
    }

    private static func prerolls(_ path: String) throws(RTCError) {
        guard FileManager.default.isReadableFile(atPath: path) else { throw .deviceMissing(path: path, hint: "no readable video there") }
        let decoder = try Pipeline(launch: "filesrc name=file ! decodebin ! videoconvert ! fakesink", name: "video-check")
        defer { decoder.stop() }
        decoder.element(named: "file")?.set("location", path)
        let firstError = decoder.recordFirstError()
        do throws(RTCError) { try decoder.setState(GST_STATE_PAUSED, "PAUSED") } catch {
            throw .invalidArgument("cannot play the video \(path): \(firstError.message ?? "\(error)")")
        }
        // Up to 10 s to preroll (a failure comes sooner, with the decoder's reason).
        let prerolled = gst_element_get_state(decoder.element.raw, nil, nil, 10 * GstClockTime(1_000_000_000))
        if prerolled != GST_STATE_CHANGE_SUCCESS || firstError.message != nil {
            let reason = firstError.message ?? (prerolled == GST_STATE_CHANGE_ASYNC ? "no frame decoded within 10 s" : "it holds no video the decoder reads")
            throw .invalidArgument("cannot play the video \(path): \(reason)")
        }
    }

    /// Plays the file and starts pushing (after the publisher's pipeline is PLAYING).
    func start() {
        let first = state.withLock { s -> Bool in
            guard !s.started, !s.stopping else { return false }
            s.started = true
            return true
        }
        if first { Thread.detachNewThread { [self] in run() } }
    }

    /// Ends the reading thread (it sees the flag within 100 ms) and the decode pipeline.
    func stop() {
        let running = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return s.started && !s.stopping
        }
        if running { finished.wait() }
        decoder.stop()
    }

    private func run() {
        defer { finished.signal() }
        pcg_set_current_thread_name("posecast-video")
        do throws(RTCError) { try decoder.play() } catch {
            onError("cannot play the video \(path): \(firstError.message ?? "\(error)")")
            return
        }
        let appsink = gcast(sink.raw, to: GstAppSink.self)
        while !state.withLock({ $0.stopping }) {
            if let message = firstError.message {
                onError("the video \(path) stopped: \(message)")
                return
            }
            if let sample = PulledSample.pull(from: sink, timeout: .milliseconds(100)) {
                push(sample)
                continue
            }
            guard gst_app_sink_is_eos(appsink) != 0 else { continue }
            // The end of the file: from the start again (a flushing seek clears the EOS).
            let flags = GstSeekFlags(GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_KEY_UNIT.rawValue)
            guard gst_element_seek_simple(decoder.element.raw, GST_FORMAT_TIME, flags, 0) != 0 else {
                onError("the video \(path) ended and cannot seek back to its start")
                return
            }
        }
    }

    /// The frame into the live appsrc: a copy of the buffer's handle (its memory shared)
    /// without the file's timestamps, so the appsrc stamps it with the live running time.
    private func push(_ sample: PulledSample) {
        guard gst_buffer_get_size(sample.buffer) == gsize(frameBytes), let copy = gst_buffer_copy(sample.buffer) else { return }
        copy.pointee.pts = GstClockTime.max
        copy.pointee.dts = GstClockTime.max
        copy.pointee.duration = GstClockTime.max
        // appsrc takes the buffer (full transfer).
        _ = gst_app_src_push_buffer(gcast(element.raw, to: GstAppSrc.self), copy)
    }
}
