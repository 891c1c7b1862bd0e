#if os(Linux)
import CameraControl
import Glibc
import Testing

/// The real device layer, without a camera: opening things that are not cameras.
@Suite("V4L2 file device")
struct V4L2FileDeviceTests {
    @Test func missingPathIsNamed() {
        let path = "/dev/video-does-not-exist"
        #expect(throws: V4L2Error.noSuchDevice(path: path)) { try V4L2FileDevice(path: path) }
        #expect(throws: V4L2Error.noSuchDevice(path: path)) { try V4L2CameraBackend(path: path) }
        #expect(V4L2Error.noSuchDevice(path: path).description == "no V4L2 device at /dev/video-does-not-exist: No such file or directory (errno 2)")
    }

    @Test func regularFileIsNotAV4L2Device() throws {
        var template = Array("/tmp/posecast-v4l2-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        try #require(fd >= 0)
        close(fd)
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { unlink(path) }
        let error = #expect(throws: V4L2Error.self) { try V4L2FileDevice(path: path) }
        #expect(error == .notAV4L2Device(path: path, errno: ENOTTY))
        #expect(error?.description == "\(path) is not a V4L2 device (VIDIOC_QUERYCAP failed: Inappropriate ioctl for device (errno 25))")
    }

    @Test func otherCharacterDeviceIsNotAV4L2Device() {
        #expect(throws: V4L2Error.notAV4L2Device(path: "/dev/null", errno: ENOTTY)) { try V4L2FileDevice(path: "/dev/null") }
    }

    @Test func directoryCannotBeOpened() {
        let error = #expect(throws: V4L2Error.self) { try V4L2FileDevice(path: "/tmp") }
        #expect(error == .openFailed(path: "/tmp", errno: EISDIR))
        #expect(error?.description.contains("cannot open V4L2 device /tmp: Is a directory") == true)
    }
}
#endif
