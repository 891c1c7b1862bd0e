#if os(Linux)
/// The ioctl boundary of a V4L2 camera: the few control calls the backend makes.
/// `V4L2FileDevice` issues them on a real device node; tests substitute a fake.
///
/// Errors are `V4L2Error.ioctlFailed` carrying the errno, except where a method
/// documents an errno as an answer.
public protocol V4L2Device: Sendable {
    /// The device node, for messages ("/dev/video0").
    var path: String { get }
    /// VIDIOC_QUERYCTRL. nil when the device has no control `id` (EINVAL).
    func queryControl(_ id: V4L2ControlID) throws(V4L2Error) -> V4L2ControlInfo?
    /// VIDIOC_QUERYMENU. Whether menu control `id` offers item `index` (false on EINVAL:
    /// menus may have holes).
    func hasMenuItem(_ id: V4L2ControlID, index: UInt32) throws(V4L2Error) -> Bool
    /// The current value (VIDIOC_G_CTRL, or VIDIOC_G_EXT_CTRLS outside the user class).
    func getControl(_ id: V4L2ControlID) throws(V4L2Error) -> Int32
    /// Sets a value (VIDIOC_S_CTRL, or VIDIOC_S_EXT_CTRLS outside the user class).
    func setControl(_ id: V4L2ControlID, to value: Int32) throws(V4L2Error)
}
#endif
