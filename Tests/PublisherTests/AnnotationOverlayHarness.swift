import CGStreamer
@testable import Publisher
import PoseMedia
import Subscriber
import PoseCastKit
import RTCSession
import TestSupport
import Testing

/// A camera at the origin looking down −Z (60° horizontal field of view).
struct OverlayScene {
    let width: Int, height: Int
    let pose: FramePose

    init(width: Int = 640, height: Int = 480) throws {
        try GStreamer.initialize()
        self.width = width; self.height = height
        pose = FramePose(frameID: 1, captureTimeNanos: 0, position: .zero, orientation: .identity,
                         intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: Float(width) / Float(height)))
    }

    var camera: CameraModel { CameraModel(pose: pose)! }

    /// The world point `depth` metres in front of the camera seen at pixel coordinates (x, y).
    func world(atPixel x: Float, _ y: Float, depth: Float = 2) -> Vector3 {
        camera.unproject(NormalizedPoint(x: x / Float(width), y: y / Float(height)), depth: depth)
    }

    func pixel(of world: Vector3) -> (x: Float, y: Float) {
        CameraModel.pixel(camera.project(world)!.point, width: width, height: height)
    }
}

/// A frame edge, and an anchor near it.
enum FrameEdge: CaseIterable {
    case left, right, top, bottom

    /// An anchor pixel `inset` pixels inside the edge (negative: outside), mid-way along it.
    func anchor(width: Int, height: Int, inset: Int = 2) -> (x: Int, y: Int) {
        switch self {
        case .left: (inset, height / 2 + 1)
        case .right: (width - 1 - inset, height / 2 - 3)
        case .top: (width / 2 - 5, inset)
        case .bottom: (width / 2 + 7, height - 1 - inset)
        }
    }
}

/// A writable grey I420 buffer (one full reference, ours).
final class OverlayFrame {
    let buffer: UnsafeMutablePointer<GstBuffer>
    private var info: GstVideoInfo

    init(_ scene: OverlayScene) throws {
        var info = GstVideoInfo()
        gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, guint(scene.width), guint(scene.height))
        self.info = info
        buffer = try #require(gst_buffer_new_allocate(nil, info.size, nil))
        _ = gst_buffer_memset(buffer, 0, OverlayPlanes.grey, info.size)
    }

    deinit { gst_buffer_unref(buffer) }

    /// Runs `body` on the frame mapped for writing.
    func withMappedFrame(_ body: (inout GstVideoFrame) -> Void) {
        var frame = GstVideoFrame()
        guard gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE) != 0 else { fatalError("cannot map the frame") }
        body(&frame)
        gst_video_frame_unmap(&frame)
    }

    /// A copy of the three planes.
    func planes() -> OverlayPlanes {
        var frame = GstVideoFrame()
        guard gst_video_frame_map(&frame, &info, buffer, GST_MAP_READ) != 0 else { fatalError("cannot map the frame") }
        defer { gst_video_frame_unmap(&frame) }
        let width = Int(info.width), height = Int(info.height)
        func plane(_ data: UnsafeMutableRawPointer?, _ stride: Int32, _ w: Int, _ h: Int) -> [UInt8] {
            let base = data!.assumingMemoryBound(to: UInt8.self)
            return (0..<h).flatMap { y in Array(UnsafeBufferPointer(start: base + y * Int(stride), count: w)) }
        }
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        return OverlayPlanes(width: width, height: height,
                      y: plane(frame.data.0, frame.info.stride.0, width, height),
                      u: plane(frame.data.1, frame.info.stride.1, cw, ch),
                      v: plane(frame.data.2, frame.info.stride.2, cw, ch))
    }
}

/// The pixels of an I420 frame.
struct OverlayPlanes {
    static let grey: UInt8 = 128
    let width: Int, height: Int
    let y: [UInt8], u: [UInt8], v: [UInt8]

    func luma(_ x: Int, _ row: Int) -> UInt8 { y[row * width + x] }
    func chroma(_ cx: Int, _ cy: Int) -> (u: UInt8, v: UInt8) {
        let i = cy * ((width + 1) / 2) + cx
        return (u[i], v[i])
    }
    var isUntouched: Bool { (y + u + v).allSatisfy { $0 == Self.grey } }

    /// #FF00FF blends to U 213, V 229; grey, white and the dark outline stay near 128.
    static func isMagenta(_ u: UInt8, _ v: UInt8) -> Bool { u >= 180 && v >= 190 }

    /// Positions of chroma samples matching `test`. GStreamer's I420 blend (pack_planar_420)
    /// takes each sample from the top-left pixel of its 2×2 block (even rows, even columns),
    /// so a sample stands for the point (2i + 0.5, 2j + 0.5).
    func chromaSamples(where test: (UInt8, UInt8) -> Bool) -> [(x: Float, y: Float)] {
        var out: [(x: Float, y: Float)] = []
        for cy in 0..<((height + 1) / 2) {
            for cx in 0..<((width + 1) / 2) {
                let (cu, cv) = chroma(cx, cy)
                if test(cu, cv) { out.append((Float(2 * cx) + 0.5, Float(2 * cy) + 0.5)) }
            }
        }
        return out
    }

    func chromaCentroid(where test: (UInt8, UInt8) -> Bool) -> (x: Float, y: Float, count: Int)? {
        let samples = chromaSamples(where: test)
        guard !samples.isEmpty else { return nil }
        let c = centroid(samples)
        return (c.x, c.y, samples.count)
    }

    /// Centroid of the luma pixels matching `test` (pixel centres at +0.5).
    func lumaCentroid(where test: (UInt8) -> Bool) -> (x: Float, y: Float)? {
        var points: [(x: Float, y: Float)] = []
        for row in 0..<height {
            for x in 0..<width where test(luma(x, row)) { points.append((Float(x) + 0.5, Float(row) + 0.5)) }
        }
        return points.isEmpty ? nil : centroid(points)
    }
}

func centroid(_ points: [(x: Float, y: Float)]) -> (x: Float, y: Float) {
    let n = Float(points.count)
    return (points.map(\.x).reduce(0, +) / n, points.map(\.y).reduce(0, +) / n)
}

func distance(_ a: (x: Float, y: Float), _ b: (x: Float, y: Float)) -> Float {
    ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)).squareRoot()
}

extension Annotation {
    static func make(_ id: String, _ kind: AnnotationKind, at position: Vector3, label: String = "",
                     color: String = "#FF00FF") -> Annotation {
        Annotation(id: id, kind: kind, position: position, frameId: 0, tap: NormalizedPoint(x: 0.5, y: 0.5),
                   label: label, color: color, author: "test")
    }
}

extension String {
    func leftPadded(_ n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}
