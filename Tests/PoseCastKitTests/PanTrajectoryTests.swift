import PoseCastKit
import Testing

@Suite("pan trajectory")
struct PanTrajectoryTests {
    @Test("turns at the configured rate, reverses at ±amplitude, stays put and unit")
    func sweep() throws {
        let pan = PanTrajectory(amplitudeDegrees: 35, degreesPerSecond: 30)
        let dt = 0.01
        var maxYaw = 0.0
        for i in 0..<1000 {
            let t = Double(i) * dt
            let rate = abs(pan.yawDegrees(at: t + dt) - pan.yawDegrees(at: t)) / dt
            #expect(abs(rate - 30) < 1e-6 || rate < 30, "never faster than 30°/s (slower only across a reversal)")
            maxYaw = max(maxYaw, abs(pan.yawDegrees(at: t)))
            let pose = try #require(pan.pose(at: t))
            #expect(pose.position == pan.eye)
            #expect(abs(pose.orientation.norm - 1) < 1e-5)
        }
        #expect(abs(maxYaw - 35) < 0.5)
        // At yaw 0 the camera looks straight at the target.
        let centre = try #require(pan.pose(at: 0))
        let camera = CameraModel(position: centre.position, orientation: centre.orientation,
                                 intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
        let p = try #require(camera.project(pan.target)).point
        #expect(abs(p.x - 0.5) < 1e-4 && abs(p.y - 0.5) < 1e-4)
        #expect(try PoseSourceSpec.parse("pan") == .pan)
    }
}
