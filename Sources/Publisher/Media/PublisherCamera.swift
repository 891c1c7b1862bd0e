internal import CGStreamer
import CameraControl
import PoseCastKit
import SyntheticCamera
import PoseMedia

/// The publisher's camera control: the metering routines over the backend the source
/// has (the simulated lens of the synthetic camera, or the V4L2 device's controls), fed
/// with every raw frame before anything is drawn into it.
enum PublisherCamera {
    /// The meter for a source, or why there is none.
    static func make(for source: PublisherMediaConfig.Source, lens: LensControl?) -> (CameraMeter?, String) {
        switch source {
        case .synthetic:
            guard let lens else { return (nil, "the synthetic camera has no lens") }
            // The lens is read when the next frame renders: one frame of latency.
            return (CameraMeter(backend: SimulatedCameraBackend(lens: lens),
                                configuration: CameraMeter.Configuration(frameLatency: 1)), "")
        case .v4l2(let device):
            do throws(V4L2Error) {
                let file = try V4L2FileDevice(path: device)
                guard file.capturesVideo else {
                    return (nil, "\(device) does not capture video (a UVC metadata node?): no controls to drive")
                }
                // A V4L2 capture queue holds a few frames: a control change shows up ~3 frames later.
                let backend = try V4L2CameraBackend(device: file)
                return (CameraMeter(backend: backend, configuration: CameraMeter.Configuration(frameLatency: 3)), "")
            } catch {
                return (nil, "camera control on \(device) is unavailable: \(error)")
            }
        case .test:
            return (nil, "videotestsrc is not a camera: nothing to focus or expose (use --source synthetic or a V4L2 camera)")
        case .frames:
            return (nil, "frames from the application: its own camera, nothing here to focus or expose")
        case .video:
            return (nil, "a recorded video is not a camera: nothing to focus or expose (use --source synthetic or a V4L2 camera)")
        case .image:
            return (nil, "a still picture is not a camera: nothing to focus or expose (use --source synthetic or a V4L2 camera)")
        }
    }

    /// Meters one writable raw I420 frame (read only here).
    /// `capturedWith`: the settings the frame was taken with, when the source knows them
    /// (the synthetic camera does); else the meter assumes its configured latency.
    static func process(_ meter: CameraMeter, buffer: UnsafeMutablePointer<GstBuffer>, width: Int, height: Int,
                        frameId: UInt32, capturedWith: [CameraSetting: Double]?) {
        var info = GstVideoInfo()
        gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, guint(width), guint(height))
        _ = withMappedI420(buffer, info: &info) { view in
            meter.process(frame: view, frameId: frameId, timeNanos: MonotonicClock.nanos(), capturedWith: capturedWith)
        }
    }
}
