import Testing
import Imaging
import PoseCastKit
import SyntheticCamera
import VideoEffects

/// The depth background against the synthetic camera's ground truth: each frame is
/// rendered, then the effect replaces what is farther than 3 m with a flat magenta
/// picture, using the depth map the publisher takes for it (every pixel's, as the
/// synthetic source copies it while the effect is on). The truth is what the renderer
/// drew at each pixel; the effect decides per 2×2 block (the chroma's grain), keeping a
/// block where any pixel is near.
@Suite struct DepthBackgroundTests {
    @Test("farther than N m replaced, nearer unchanged: IoU with the true depth ≥ 0.98", arguments: [(640, 480), (1280, 720)])
    func depthMask(size: (Int, Int)) throws {
        let (w, h) = size
        let renderer = try SyntheticRenderer(width: w, height: h)
        let trajectory = OrbitTrajectory(intrinsics: SyntheticRenderer.defaultIntrinsics(width: w, height: h))
        var magenta = try I420Image(width: w, height: h)
        for i in 0..<(w * h) { magenta.bytes[i] = 105 }
        for i in (w * h)..<magenta.bytes.count { magenta.bytes[i] = i < w * h * 5 / 4 ? 212 : 234 }
        let compositor = BackgroundCompositor()
        let maxDepth: Float = 3
        for k in 0..<6 {
            let pose = trajectory.pose(at: Double(k) * 1.7, frameID: UInt32(k), captureTimeNanos: 0)
            let camera = try #require(CameraModel(pose: pose))
            let original = try renderer.render(camera: camera, frameIndex: UInt64(k))
            let truth = try renderer.copyDepthMap(scale: 1)
            var frame = original
            let alpha = BlockAlpha(depth: truth, maxDepth: maxDepth, frameWidth: w, frameHeight: h)
            frame.withPlanes { compositor.apply(.image(magenta), alpha: alpha, to: $0) }
            var inter = 0, union = 0, nearChanged = 0, near = 0
            for y in 0..<h {
                for x in 0..<w {
                    let i = y * w + x
                    let replaced = frame.bytes[i] == 105 && frame.chroma(x: x, y: y) == (212, 234)
                    let z = truth.depth(x: x, y: y)
                    let far = !(z.isFinite && z <= maxDepth)
                    if replaced && far { inter += 1 }
                    if replaced || far { union += 1 }
                    if !far {
                        near += 1
                        if frame.bytes[i] != original.bytes[i] { nearChanged += 1 }
                    }
                }
            }
            let iou = Double(inter) / Double(max(union, 1))
            #expect(iou >= 0.98, "\(w)x\(h) frame \(k): IoU \(iou)")
            #expect(nearChanged == 0, "\(w)x\(h) frame \(k): \(nearChanged) of \(near) near pixels changed")
            print("depth background \(w)x\(h) frame \(k): IoU \(iou), near pixels \(near) all unchanged")
            #expect(near > w * h / 20 && union > w * h / 20, "the scene must show both near and far parts (near \(near), far \(union))")
        }
    }
}
