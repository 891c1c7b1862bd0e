#if os(Linux)
import Glibc
internal import CV4L2

/// A real V4L2 device node, opened for control. Owns its file descriptor and closes it
/// in `deinit`.
///
/// Opening (O_RDWR | O_NONBLOCK | O_CLOEXEC) neither starts streaming nor changes any
/// control; it only asks VIDIOC_QUERYCAP whether the node is a V4L2 device. V4L2 allows
/// several opens of one node, so this can sit beside the capture pipeline's own open
/// (GStreamer's v4l2src) of the same node.
public final class V4L2FileDevice: V4L2Device {
    public let path: String
    /// The driver ("uvcvideo") and card ("HD Pro Webcam C920") from VIDIOC_QUERYCAP.
    public let driver: String
    public let card: String
    /// Whether this node captures video. A UVC camera also has a metadata node
    /// (often the next /dev/videoN) that does not and has no camera controls.
    public let capturesVideo: Bool
    private let fd: Int32

    /// Opens `path`. Throws `.noSuchDevice` when nothing is there, `.openFailed` with
    /// the errno when it cannot be opened (EACCES: not in the `video` group), and
    /// `.notAV4L2Device` when it is some other file.
    public init(path: String) throws(V4L2Error) {
        let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            throw e == ENOENT ? .noSuchDevice(path: path) : .openFailed(path: path, errno: e)
        }
        var cap = v4l2_capability()
        let r = pcv_query_capability(fd, &cap)
        guard r == 0 else {
            close(fd)
            throw .notAV4L2Device(path: path, errno: -r)
        }
        self.fd = fd
        self.path = path
        driver = Self.string(cap.driver)
        card = Self.string(cap.card)
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        capturesVideo = caps & UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_VIDEO_CAPTURE_MPLANE) != 0
    }

    deinit { close(fd) }

    public func queryControl(_ id: V4L2ControlID) throws(V4L2Error) -> V4L2ControlInfo? {
        var q = v4l2_queryctrl()
        let r = pcv_query_control(fd, id.rawValue, &q)
        if r == -EINVAL { return nil }
        try check(r, .queryControl, id, nil)
        return V4L2ControlInfo(q)
    }

    public func hasMenuItem(_ id: V4L2ControlID, index: UInt32) throws(V4L2Error) -> Bool {
        var m = v4l2_querymenu()
        let r = pcv_query_menu(fd, id.rawValue, index, &m)
        if r == -EINVAL { return false }
        try check(r, .queryMenu, id, nil)
        return true
    }

    public func getControl(_ id: V4L2ControlID) throws(V4L2Error) -> Int32 {
        var value: Int32 = 0
        if id.isUserClass {
            try check(pcv_get_control(fd, id.rawValue, &value), .getControl, id, nil)
        } else {
            try check(pcv_get_ext_control(fd, id.rawValue, &value), .getExtControls, id, nil)
        }
        return value
    }

    public func setControl(_ id: V4L2ControlID, to value: Int32) throws(V4L2Error) {
        if id.isUserClass {
            try check(pcv_set_control(fd, id.rawValue, value), .setControl, id, value)
        } else {
            try check(pcv_set_ext_control(fd, id.rawValue, value), .setExtControls, id, value)
        }
    }

    /// The shim's 0 / -errno turned into a throw.
    private func check(_ r: Int32, _ request: V4L2Request, _ id: V4L2ControlID, _ value: Int32?) throws(V4L2Error) {
        guard r != 0 else { return }
        throw .ioctlFailed(path: path, request: request, control: id, value: value, errno: -r)
    }

    /// A NUL-padded byte array from a kernel struct as a String.
    private static func string<T>(_ bytes: T) -> String {
        withUnsafeBytes(of: bytes) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }
}
#endif
