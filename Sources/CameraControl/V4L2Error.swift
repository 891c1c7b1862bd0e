#if os(Linux)
import Glibc

/// Why a V4L2 device could not be opened or an ioctl failed. Every case names the
/// device path; ioctl failures also name the request, the CID and the errno.
public enum V4L2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing exists at `path` (ENOENT).
    case noSuchDevice(path: String)
    /// `path` exists but open(2) failed (EACCES: not in the `video` group; EBUSY …).
    case openFailed(path: String, errno: Int32)
    /// `path` opened but is not a V4L2 device: VIDIOC_QUERYCAP failed (ENOTTY for a
    /// regular file or another kind of character device).
    case notAV4L2Device(path: String, errno: Int32)
    /// An ioctl on an open device failed. `value` is the value being set, if any.
    case ioctlFailed(path: String, request: V4L2Request, control: V4L2ControlID?, value: Int32?, errno: Int32)

    /// The errno behind the failure (ENOENT for `noSuchDevice`).
    public var errno: Int32 {
        switch self {
        case .noSuchDevice: ENOENT
        case let .openFailed(_, e), let .notAV4L2Device(_, e), let .ioctlFailed(_, _, _, _, e): e
        }
    }

    public var description: String {
        switch self {
        case let .noSuchDevice(path):
            "no V4L2 device at \(path): \(Self.text(ENOENT))"
        case let .openFailed(path, e):
            "cannot open V4L2 device \(path): \(Self.text(e))"
        case let .notAV4L2Device(path, e):
            "\(path) is not a V4L2 device (VIDIOC_QUERYCAP failed: \(Self.text(e)))"
        case let .ioctlFailed(path, request, control, value, e):
            "\(request.rawValue)\(control.map { " \($0)" } ?? "")\(value.map { " = \($0)" } ?? "") on \(path) failed: \(Self.text(e))"
        }
    }

    /// "Device or resource busy (errno 16)". glibc's strerror is thread-safe for
    /// known errnos (it returns static strings).
    public static func text(_ errno: Int32) -> String {
        "\(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// The ioctls the V4L2 layer issues, named as in the kernel header.
public enum V4L2Request: String, Sendable, Hashable {
    case queryCapability = "VIDIOC_QUERYCAP"
    case queryControl = "VIDIOC_QUERYCTRL"
    case queryMenu = "VIDIOC_QUERYMENU"
    case getControl = "VIDIOC_G_CTRL"
    case setControl = "VIDIOC_S_CTRL"
    case getExtControls = "VIDIOC_G_EXT_CTRLS"
    case setExtControls = "VIDIOC_S_EXT_CTRLS"
}
#endif
