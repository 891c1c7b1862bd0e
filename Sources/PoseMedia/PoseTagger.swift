package import CGStreamer
import CGstShim
import Imaging
import PoseCastKit
import RTCSession
import Synchronization

/// Counters of pose tagging on the publisher.
public struct PoseTaggerStats: Sendable {
    public var framesTagged: UInt64 = 0
    public var poseEncodeErrors: UInt64 = 0
    public var lastError: PoseWireError?
}

/// The pose attach step: a buffer probe on raw frames that numbers each frame,
/// asks the pose source for its pose, and attaches the encoded pose as meta.
/// A pose that cannot be encoded is never sent as is: the frame goes out flagged
/// `.missing` and the error is counted. A frame that arrives with a pose already
/// (the synthetic camera attaches the pose it rendered from) keeps it, id included.
package final class PoseTagger: Sendable {
    private let width: Int, height: Int
    private let stampFrameIDs: Bool
    private let poseSource: PoseSource
    private let framePoseSource: FramePoseSource?
    private let timestampsAreCaptures: Bool
    /// What each frame's picture goes through before its pose is read (nil: nothing).
    private let prepare: (@Sendable (I420Planes) -> Void)?
    private let onAttached: (@Sendable (UnsafeMutablePointer<GstBuffer>, FramePose) -> UnsafeMutablePointer<GstBuffer>?)?
    private let state = Mutex((nextFrameID: UInt32(0), stats: PoseTaggerStats()))

    /// `onAttached` runs on the streaming thread with the (writable) frame and its pose.
    package init(width: Int, height: Int, stampFrameIDs: Bool, poseSource: @escaping PoseSource,
                 onAttached: (@Sendable (UnsafeMutablePointer<GstBuffer>, FramePose) -> Void)?) {
        self.width = width; self.height = height; self.stampFrameIDs = stampFrameIDs
        self.poseSource = poseSource; self.framePoseSource = nil; self.timestampsAreCaptures = false; self.prepare = nil
        if let onAttached {
            self.onAttached = { @Sendable (buffer: UnsafeMutablePointer<GstBuffer>, pose: FramePose) -> UnsafeMutablePointer<GstBuffer>? in
                onAttached(buffer, pose)
                return nil
            }
        } else {
            self.onAttached = nil
        }
    }

    /// As above, but `onAttached` may return a new buffer to send instead of the frame
    /// (owned: one reference passes to the pad; the frame's own reference is dropped):
    /// framing, which crops a wider capture to the output's size. With `framePoseSource`
    /// each frame's pose is read from its own pixels (mapped for reading), and
    /// `poseSource` is asked only for a frame that cannot be mapped.
    ///
    /// `timestampsAreCaptures`: the probe sits behind a queue, so a frame arrives some time
    /// after it was captured; its capture time is then read from its timestamp (a live
    /// source's running time of capture, `BufferTime.age`) instead of taken on arrival.
    ///
    /// `prepare`: changes each frame's picture in place (mapped for writing) before its
    /// pose is read or anything else sees it: a calibrated lens's distortion taken out.
    package init(width: Int, height: Int, stampFrameIDs: Bool, poseSource: @escaping PoseSource,
                 framePoseSource: FramePoseSource? = nil, timestampsAreCaptures: Bool = false,
                 prepare: (@Sendable (I420Planes) -> Void)? = nil,
                 replacing onAttached: @escaping @Sendable (UnsafeMutablePointer<GstBuffer>, FramePose) -> UnsafeMutablePointer<GstBuffer>?) {
        self.width = width; self.height = height; self.stampFrameIDs = stampFrameIDs
        self.poseSource = poseSource; self.framePoseSource = framePoseSource
        self.timestampsAreCaptures = timestampsAreCaptures; self.prepare = prepare; self.onAttached = onAttached
    }

    /// The longest a queued frame is believed to have waited (a longer age is a timestamp
    /// that is not a capture time, and the arrival is taken instead).
    static let longestWaitNanos: UInt64 = 500_000_000

    package var stats: PoseTaggerStats { state.withLock { $0.stats } }

    /// Installs the probe on a pad carrying I420 frames of the configured size.
    package func install(on pad: Pad) {
        pad.addProbeWithPad(GST_PAD_PROBE_TYPE_BUFFER) { [self] rawPad, info in
            if let buffer = ProbeInfo.writableBuffer(info), let replacement = tag(buffer, captured: captureTime(buffer, rawPad)),
               replacement != buffer {
                gst_buffer_unref(buffer)
                info.pointee.data = UnsafeMutableRawPointer(replacement)
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// The wall-clock time the frame was captured: now, or by its timestamp behind a queue.
    private func captureTime(_ buffer: UnsafeMutablePointer<GstBuffer>, _ pad: UnsafeMutablePointer<GstPad>) -> UInt64 {
        let now = WallClock.nowNanos()
        guard timestampsAreCaptures, let age = BufferTime.age(of: buffer, on: pad), age <= Self.longestWaitNanos else { return now }
        return now - age
    }

    private func tag(_ buffer: UnsafeMutablePointer<GstBuffer>, captured: UInt64) -> UnsafeMutablePointer<GstBuffer>? {
        if let prepare {
            var info = GstVideoInfo()
            gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, guint(width), guint(height))
            _ = withWritableI420(buffer, info: &info, prepare)
        }
        if let bytes = PoseMeta.bytes(of: buffer), var pose = try? PoseWireFormat.decode(bytes) {
            // A source that knows its poses (the synthetic camera) whose pictures are read
            // for theirs (`--pose apriltag` on the tags it paints): the pixels' pose goes
            // out instead, under the frame's own id and capture time.
            if let read = framePose(buffer, frameID: pose.frameID, captured: pose.captureTimeNanos),
               let readBytes = try? PoseWireFormat.encode(read), PoseMeta.attach(readBytes, to: buffer) {
                pose = read
            }
            if stampFrameIDs { stamp(pose.frameID, into: buffer) }
            state.withLock { $0.stats.framesTagged += 1 }
            return onAttached?(buffer, pose)
        }
        let frameID = state.withLock { s in
            defer { s.nextFrameID &+= 1 }
            return s.nextFrameID
        }
        var pose = framePose(buffer, frameID: frameID, captured: captured) ?? poseSource(frameID, captured)
        pose.frameID = frameID
        var failure: PoseWireError?
        var bytes: [UInt8]
        do throws(PoseWireError) { bytes = try PoseWireFormat.encode(pose) } catch {
            failure = error
            let intrinsics = pose.intrinsics.fx > 0 && pose.intrinsics.fy > 0 && pose.intrinsics.fx.isFinite
                && pose.intrinsics.fy.isFinite && pose.intrinsics.cx.isFinite && pose.intrinsics.cy.isFinite
                ? pose.intrinsics : CameraIntrinsics(horizontalFOVDegrees: 60, aspect: Float(width) / Float(height))
            pose = FramePose(flags: .missing, frameID: frameID, captureTimeNanos: captured, position: .zero,
                             orientation: .identity, intrinsics: intrinsics)
            bytes = (try? PoseWireFormat.encode(pose)) ?? []
        }
        if stampFrameIDs { stamp(frameID, into: buffer) }
        let attached = PoseMeta.attach(bytes, to: buffer)
        state.withLock { s in
            if attached { s.stats.framesTagged += 1 }
            if let failure { s.stats.poseEncodeErrors += 1; s.stats.lastError = failure }
        }
        return onAttached?(buffer, pose)
    }

    /// The pose `framePoseSource` reads from the frame's pixels; nil without one, or when
    /// the frame cannot be mapped as I420 of the configured size.
    private func framePose(_ buffer: UnsafeMutablePointer<GstBuffer>, frameID: UInt32, captured: UInt64) -> FramePose? {
        guard let framePoseSource else { return nil }
        var info = GstVideoInfo()
        gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, guint(width), guint(height))
        return withMappedI420(buffer, info: &info) { framePoseSource($0, frameID, captured) }
    }

    private func stamp(_ frameID: UInt32, into buffer: UnsafeMutablePointer<GstBuffer>) {
        var info = GstVideoInfo()
        gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, guint(width), guint(height))
        _ = FrameStamp.write(frameID, into: buffer, info: &info)
    }
}

/// The pose read step: a buffer probe on decoded frames that decodes and validates
/// the pose meta (rejections counted by reason, the frame still plays), optionally
/// reads the painted frame id, and reports each frame.
package final class PoseReader: Sendable {
    package let rejections: PoseRejectionCounter
    private let codec: VideoCodec
    private let readStamps: Bool
    private let onFrame: (@Sendable (DecodedFrame) -> Void)?
    private let onPicture: (@Sendable (DecodedPicture) -> Void)?
    private let counters = Mutex((decoded: UInt64(0), withPose: UInt64(0)))

    package init(codec: VideoCodec, readStamps: Bool, rejections: PoseRejectionCounter,
                 onFrame: (@Sendable (DecodedFrame) -> Void)?, onPicture: (@Sendable (DecodedPicture) -> Void)? = nil) {
        self.codec = codec; self.readStamps = readStamps; self.rejections = rejections
        self.onFrame = onFrame; self.onPicture = onPicture
    }

    package var framesDecoded: UInt64 { counters.withLock { $0.decoded } }
    package var framesWithPose: UInt64 { counters.withLock { $0.withPose } }

    package func install(on pad: Pad) {
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] info in
            if let buffer = gst_pad_probe_info_get_buffer(info) { read(buffer, pad: pad) }
            return GST_PAD_PROBE_OK
        }
    }

    private func read(_ buffer: UnsafeMutablePointer<GstBuffer>, pad: Pad) {
        var frame = DecodedFrame(decodedAtNanos: WallClock.nowNanos(), codec: codec)
        if let bytes = PoseMeta.bytes(of: buffer) {
            do throws(PoseWireError) { frame.pose = try PoseWireFormat.decode(bytes) } catch {
                frame.poseError = error
                rejections.record(error)
            }
        }
        var info = GstVideoInfo()
        var haveInfo = false
        if let caps = gst_pad_get_current_caps(pad.raw) {
            haveInfo = gst_video_info_from_caps(&info, caps) != 0
            gst_caps_unref(caps)
        }
        if haveInfo {
            frame.width = Int(info.width); frame.height = Int(info.height)
            if readStamps { frame.stampedFrameID = FrameStamp.read(from: buffer, info: &info) }
        }
        let hasPose = frame.pose != nil
        counters.withLock { $0.decoded += 1; if hasPose { $0.withPose += 1 } }
        onFrame?(frame)
        if let onPicture, haveInfo, info.finfo.pointee.format == GST_VIDEO_FORMAT_I420,
           let picture = Self.copyPicture(buffer, info: &info, frame: frame) {
            onPicture(picture)
        }
    }

    /// Copies the three planes out, row by row (the decoder's strides may be padded).
    private static func copyPicture(_ buffer: UnsafeMutablePointer<GstBuffer>, info: inout GstVideoInfo,
                                    frame: DecodedFrame) -> DecodedPicture? {
        withMappedI420(buffer, info: &info) { view in
            func plane(_ base: UnsafePointer<UInt8>, _ stride: Int, _ pw: Int, _ ph: Int) -> [UInt8] {
                var out = [UInt8](repeating: 0, count: pw * ph)
                out.withUnsafeMutableBufferPointer { dst in
                    for row in 0..<ph { (dst.baseAddress! + row * pw).update(from: base + row * stride, count: pw) }
                }
                return out
            }
            let w = view.width, h = view.height
            return DecodedPicture(frame: frame, width: w, height: h, y: plane(view.y, view.yStride, w, h),
                                  u: plane(view.u, view.uStride, w / 2, h / 2), v: plane(view.v, view.vStride, w / 2, h / 2))
        }
    }
}
