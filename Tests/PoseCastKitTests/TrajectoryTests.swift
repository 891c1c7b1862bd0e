import Foundation
import PoseCastKit
import Testing

/// Angle (radians) of the rotation taking `a` to `b`.
/// (atan2 of the relative rotation, which stays precise for tiny angles where acos does not.)
private func rotationAngle(_ a: Quaternion, _ b: Quaternion) -> Double {
    let r = a.conjugate * b
    let vector = Double(r.x * r.x + r.y * r.y + r.z * r.z).squareRoot()
    return 2 * atan2(vector, abs(Double(r.w)))
}

/// Where the camera looks (its −Z axis) in the world.
private func forward(_ q: Quaternion) -> Vector3 { q.rotate(Vector3(0, 0, -1)) }

/// A camera that never moves, to see a wrapper's effect alone.
private struct Still: CameraTrajectory {
    var fixed = RigidPose(position: Vector3(1, 1.6, 2), orientation: Quaternion.lookAt(eye: Vector3(1, 1.6, 2), target: .zero))
    func pose(at seconds: Double) -> RigidPose? { fixed }
}

private let k = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3)

/// Checks that a trajectory never moves further than `metresPerSecond` or turns faster than
/// `radiansPerSecond` allow between samples `dt` apart (with 50 % slack): no jumps.
private func expectContinuous(_ trajectory: any CameraTrajectory, seconds: Double, dt: Double,
                              metresPerSecond: Double, radiansPerSecond: Double,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
    var previous = try #require(trajectory.pose(at: 0), sourceLocation: sourceLocation)
    var t = dt
    while t <= seconds {
        let pose = try #require(trajectory.pose(at: t), sourceLocation: sourceLocation)
        let step = Double(pose.position.distance(to: previous.position))
        let turn = rotationAngle(pose.orientation, previous.orientation)
        #expect(step <= metresPerSecond * dt * 1.5 + 1e-5, "jump of \(step) m at t = \(t)", sourceLocation: sourceLocation)
        #expect(turn <= radiansPerSecond * dt * 1.5 + 1e-3, "turn of \(turn) rad at t = \(t)", sourceLocation: sourceLocation)
        #expect(abs(pose.orientation.norm - 1) < 1e-5, sourceLocation: sourceLocation)
        previous = pose
        t += dt
    }
}

@Suite("orbit trajectory (speed and defaults)")
struct OrbitSpeedTests {
    @Test("defaults: 3 m radius, eye at 1.6 m, target (0, 0.3, 0), 30°/s")
    func defaults() throws {
        let orbit = OrbitTrajectory(intrinsics: k)
        #expect(orbit.radius == 3 && orbit.height == 1.6 && orbit.degreesPerSecond == 30)
        #expect(orbit.target == Vector3(0, 0.3, 0))
        for t in stride(from: 0.0, to: 12, by: 0.7) {
            let pose = try #require(orbit.pose(at: t))
            #expect(abs(pose.position.y - 1.6) < 1e-6)
            let horizontal = Vector3(pose.position.x, 0, pose.position.z)
            #expect(abs(horizontal.length - 3) < 1e-5)
        }
    }

    @Test("the angle about the target advances at the configured speed", arguments: [30.0, 45, -20, 90])
    func angularSpeed(degreesPerSecond: Double) throws {
        var orbit = OrbitTrajectory(intrinsics: k)
        orbit.degreesPerSecond = Float(degreesPerSecond)
        func azimuth(_ t: Double) throws -> Double {
            let p = try #require(orbit.pose(at: t)).position
            return atan2(Double(p.x - orbit.target.x), Double(p.z - orbit.target.z)) * 180 / .pi
        }
        for t in stride(from: 0.0, to: 30, by: 1.3) {
            var delta = try azimuth(t + 0.1) - azimuth(t)
            delta = (delta + 540).truncatingRemainder(dividingBy: 360) - 180
            #expect(abs(delta - degreesPerSecond * 0.1) < 1e-3, "at t = \(t): \(delta)° in 0.1 s")
        }
    }

    @Test("the frame-pose API matches the trajectory and keeps the orbit's intrinsics")
    func framePoseAPI() throws {
        let orbit = OrbitTrajectory(intrinsics: k)
        let pose = orbit.pose(at: 2.5, frameID: 7, captureTimeNanos: 99)
        let rigid = try #require(orbit.pose(at: 2.5))
        #expect(pose.flags == [] && pose.frameID == 7 && pose.captureTimeNanos == 99 && pose.intrinsics == k)
        #expect(pose.position == rigid.position && pose.orientation == rigid.orientation)
        _ = try PoseWireFormat.encode(pose)
        let broken = orbit.pose(at: .nan, frameID: 8, captureTimeNanos: 100)
        #expect(broken.flags == .missing)
        _ = try PoseWireFormat.encode(broken)
    }

    @Test("hours into a run the orbit is as precise as at the start")
    func longRuns() throws {
        let orbit = OrbitTrajectory(intrinsics: k)
        let lap = 360.0 / 30
        let start = try #require(orbit.pose(at: 1))
        let later = try #require(orbit.pose(at: 1 + 3000 * lap))
        #expect(start.position.distance(to: later.position) < 1e-4)
    }
}

@Suite("walk trajectory")
struct WalkTrajectoryTests {
    @Test("the camera walks at the configured speed (finite differences)", arguments: [0.6, 1.4, 0.25])
    func speed(metresPerSecond: Double) throws {
        let walk = WalkTrajectory(metresPerSecond: metresPerSecond)
        let dt = 0.05
        for t in stride(from: 0.0, to: walk.perimeter / metresPerSecond, by: 0.37) {
            let a = try #require(walk.pose(at: t)), b = try #require(walk.pose(at: t + dt))
            let measured = Double(a.position.distance(to: b.position)) / dt
            #expect(abs(measured - metresPerSecond) < 0.01 * metresPerSecond, "at t = \(t): \(measured) m/s")
        }
    }

    @Test("defaults: eye height 1.6 m, a 7 m × 5 m loop round the origin, looking at (0, 0.3, 0)")
    func loopShape() throws {
        let walk = WalkTrajectory()
        #expect(walk.metresPerSecond == 0.6 && walk.eyeHeight == 1.6 && walk.target == Vector3(0, 0.3, 0))
        #expect(abs(walk.perimeter - (2 * 4 + 2 * 2 + 2 * .pi * 1.5)) < 1e-9)
        var extent = (x: Float(0), z: Float(0))
        for t in stride(from: 0.0, to: walk.perimeter / 0.6, by: 0.05) {
            let p = try #require(walk.pose(at: t)).position
            #expect(abs(p.y - 1.6) < 1e-6)
            #expect(abs(p.x) <= 3.5 + 1e-5 && abs(p.z) <= 2.5 + 1e-5)
            // On the rounded rectangle: its signed distance function (inner box 2 × 1, radius 1.5) is 0.
            let q = (x: abs(p.x) - 2, z: abs(p.z) - 1)
            let outside = Vector3(max(q.x, 0), 0, max(q.z, 0)).length
            #expect(abs(outside + min(max(q.x, q.z), 0) - 1.5) < 1e-4, "\(p) is off the loop")
            extent = (max(extent.x, abs(p.x)), max(extent.z, abs(p.z)))
        }
        #expect(abs(extent.x - 3.5) < 0.01 && abs(extent.z - 2.5) < 0.01)
    }

    @Test("after one lap the camera is back where it started; negative times walk backwards")
    func closedLoop() throws {
        let walk = WalkTrajectory()
        let lap = walk.perimeter / walk.metresPerSecond
        for t in [0.0, 3.3, 17.1] {
            let a = try #require(walk.pose(at: t)), b = try #require(walk.pose(at: t + lap)), c = try #require(walk.pose(at: t - lap))
            #expect(a.position.distance(to: b.position) < 1e-4 && a.position.distance(to: c.position) < 1e-4)
        }
        #expect(walk.pose(at: .infinity) == nil && walk.pose(at: .nan) == nil)
    }

    @Test("the corners are rounded and clamped: a loop whose radius is too big becomes a stadium")
    func clampedCorners() throws {
        let walk = WalkTrajectory(width: 6, depth: 2, cornerRadius: 5)
        #expect(abs(walk.perimeter - (2 * 4 + 2 * .pi)) < 1e-9)
        try expectContinuous(walk, seconds: walk.perimeter / 0.6, dt: 1.0 / 60, metresPerSecond: 0.6, radiansPerSecond: 1)
    }
}

@Suite("trajectories (shared properties)")
struct TrajectoryPropertyTests {
    @Test("orbit and walk look at their target, upright")
    func looksAtTarget() throws {
        let orbit = OrbitTrajectory(intrinsics: k), walk = WalkTrajectory()
        let cases: [(any CameraTrajectory, Vector3)] = [(orbit, orbit.target), (walk, walk.target)]
        for (trajectory, target) in cases {
            for t in stride(from: 0.0, to: 40, by: 0.9) {
                let pose = try #require(trajectory.pose(at: t))
                let cosine = forward(pose.orientation).dot((target - pose.position).normalized)
                #expect(cosine > 0.99999, "at t = \(t)")
                #expect(pose.orientation.rotate(Vector3(0, 1, 0)).y > 0.5, "camera upright")
                #expect(abs(pose.orientation.rotate(Vector3(1, 0, 0)).y) < 1e-5, "no roll")
                #expect(abs(pose.orientation.norm - 1) < 1e-5)
            }
        }
    }

    @Test("no jumps: between samples 1/120 s apart the camera moves no faster than its speed")
    func continuity() throws {
        let dt = 1.0 / 120
        let orbit = OrbitTrajectory(intrinsics: k)
        let orbitRate = 30 * Double.pi / 180
        try expectContinuous(orbit, seconds: 12.5, dt: dt, metresPerSecond: 3 * orbitRate, radiansPerSecond: orbitRate)
        let walk = WalkTrajectory()
        // Closest approach to the target is about 2.8 m, so the view turns at most v / 2.8.
        try expectContinuous(walk, seconds: walk.perimeter / 0.6 + 1, dt: dt, metresPerSecond: 0.6, radiansPerSecond: 0.6 / 2.5)
        // Shake adds at most 3 axes × 4 mm × 2π × 0.92 Hz of speed and a few °/s of turning.
        let shaken = ShakeTrajectory(base: walk, seed: 3)
        try expectContinuous(shaken, seconds: 40, dt: dt, metresPerSecond: 0.6 + 0.05, radiansPerSecond: 0.24 + 0.25)
        let fast = ShakeTrajectory(base: orbit, frequencyScale: 3, seed: 4)
        try expectContinuous(fast, seconds: 20, dt: dt, metresPerSecond: 3 * orbitRate + 0.15, radiansPerSecond: orbitRate + 0.75)
    }
}

@Suite("shake trajectory")
struct ShakeTrajectoryTests {
    @Test("jitter stays within the amplitudes, per camera axis, and the quaternion stays unit",
          arguments: [(0.8, 0.004, 1.0), (2.0, 0.02, 3.0), (0.1, 0.001, 0.5)])
    func bounds(rotationDegrees: Double, positionMetres: Double, scale: Double) throws {
        let still = Still()
        let shake = ShakeTrajectory(base: still, rotationAmplitudeDegrees: rotationDegrees,
                                    positionAmplitudeMetres: positionMetres, frequencyScale: scale, seed: 9)
        let amplitude = rotationDegrees * .pi / 180
        var peak = (rotation: 0.0, position: 0.0)
        for t in stride(from: 0.0, to: 60, by: 0.01) {
            let pose = try #require(shake.pose(at: t))
            #expect(abs(pose.orientation.norm - 1) < 1e-5)
            // The rotation from the base in camera axes: small angles are twice the vector part.
            let relative = still.fixed.orientation.conjugate * pose.orientation
            let sign: Float = relative.w < 0 ? -1 : 1
            for axis in [relative.x, relative.y, relative.z] {
                let angle = Double(2 * sign * axis)
                // Composing the three axis rotations adds second-order cross terms (≤ A²/2).
                #expect(abs(angle) <= amplitude * (1 + amplitude) + 1e-6, "rotation \(angle * 180 / .pi)° at t = \(t)")
                peak.rotation = max(peak.rotation, abs(angle))
            }
            let offset = still.fixed.orientation.inverseRotate(pose.position - still.fixed.position)
            for axis in [offset.x, offset.y, offset.z] {
                #expect(abs(Double(axis)) <= positionMetres + 1e-5, "offset \(axis) m at t = \(t)")
                peak.position = max(peak.position, abs(Double(axis)))
            }
        }
        // Not a shake that does nothing: it reaches well into its range.
        #expect(peak.rotation > amplitude * 0.6 && peak.position > positionMetres * 0.6)
    }

    @Test("the same seed gives the same shake, another seed another")
    func deterministic() throws {
        let a = ShakeTrajectory(base: WalkTrajectory(), seed: 42), b = ShakeTrajectory(base: WalkTrajectory(), seed: 42)
        let c = ShakeTrajectory(base: WalkTrajectory(), seed: 43)
        var differs = false
        for t in stride(from: 0.0, to: 10, by: 0.13) {
            #expect(a.pose(at: t) == b.pose(at: t))
            differs = differs || a.pose(at: t) != c.pose(at: t)
        }
        #expect(differs)
    }

    @Test("frequencyScale speeds up the shake, not the path under it")
    func frequencyScale() throws {
        let slow = ShakeTrajectory(base: Still(), seed: 5), fast = ShakeTrajectory(base: Still(), frequencyScale: 2, seed: 5)
        for t in stride(from: 0.0, to: 20, by: 0.31) {
            let a = try #require(fast.pose(at: t)), b = try #require(slow.pose(at: 2 * t))
            #expect(a.position.distance(to: b.position) < 1e-6 && rotationAngle(a.orientation, b.orientation) < 1e-5)
        }
    }

    @Test("no base pose, no shaken pose")
    func baseWithoutPose() {
        struct Nothing: CameraTrajectory { func pose(at seconds: Double) -> RigidPose? { nil } }
        #expect(ShakeTrajectory(base: Nothing()).pose(at: 1) == nil)
    }
}

@Suite("pose source spec")
struct PoseSourceSpecTests {
    @Test("every form parses", arguments: [
        ("orbit", PoseSourceSpec.orbit), ("walk", .walk), ("shake", .shake(around: .orbit)),
        ("shake:walk", .shake(around: .walk)), ("shake:orbit", .shake(around: .orbit)),
        ("tum:/data/groundtruth.txt", .tum(path: "/data/groundtruth.txt")), ("tum:a:b.txt", .tum(path: "a:b.txt")),
        ("stdin", .stdin), ("udp:5005", .udp(host: "127.0.0.1", port: 5005)),
        ("udp:0.0.0.0:9000", .udp(host: "0.0.0.0", port: 9000)), ("udp:[::1]:7", .udp(host: "::1", port: 7)),
        ("udp:localhost:0", .udp(host: "localhost", port: 0)),
    ])
    func parses(text: String, spec: PoseSourceSpec) throws {
        #expect(try PoseSourceSpec.parse(text) == spec)
        #expect(try PoseSourceSpec.parse(spec.description) == spec)
    }

    @Test("bad forms name the problem", arguments: [
        ("", "empty"), ("circle", "unknown pose source \"circle\""), ("orbit:fast", "takes no argument"),
        ("stdin:x", "takes no argument"), ("shake:tum", "orbit or walk"), ("tum:", "file path"), ("tum", "file path"),
        ("udp", "needs a port"), ("udp:", "needs a port"), ("udp:http", "\"http\" is not a number"),
        ("udp:70000", "outside 0…65535"), ("udp:host:", "\"\" is not a number"), ("udp::5", "host before the port is empty"),
        ("udp:::1:5", "brackets"), ("udp:[::1]5", "[ADDRESS]:PORT"), ("udp:-1", "outside"),
    ])
    func rejects(text: String, mention: String) {
        let error = #expect(throws: PoseSourceError.self) { try PoseSourceSpec.parse(text) }
        #expect(error?.description.contains(mention) == true, "\(String(describing: error))")
    }

    @Test("speed scales the orbit, the walk, the shake and the replay")
    func speed() throws {
        let orbit = try #require(try PoseSourceSpec.orbit.trajectory(speed: 2) as? OrbitTrajectory)
        #expect(orbit.degreesPerSecond == 60)
        let walk = try #require(try PoseSourceSpec.walk.trajectory(speed: 0.5) as? WalkTrajectory)
        #expect(walk.metresPerSecond == 0.3)
        let shake = try #require(try PoseSourceSpec.shake(around: .walk).trajectory(speed: 3) as? ShakeTrajectory)
        #expect(shake.frequencyScale == 3 && (shake.base as? WalkTrajectory)?.metresPerSecond == 0.6)
        #expect(try PoseSourceSpec.stdin.trajectory() == nil)
        #expect(throws: PoseSourceError.speedNotApplicable(.udp(host: "127.0.0.1", port: 5))) {
            try PoseSourceSpec.udp(host: "127.0.0.1", port: 5).trajectory(speed: 2)
        }
        for bad in [0, -1, .nan, .infinity, 1e6] {
            #expect(throws: PoseSourceError.self) { try PoseSourceSpec.orbit.trajectory(speed: bad) }
        }
        #expect(throws: PoseSourceError.invalidSpeed(0)) { try PoseSourceSpec.walk.trajectory(speed: 0) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spec-\(UInt64.random(in: 0...UInt64.max)).txt").path
        try "0 0 0 0 0 0 0 1\n2 2 0 0 0 0 0 1\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let tum = try #require(try PoseSourceSpec.tum(path: path).trajectory(speed: 4) as? TUMTrajectory)
        #expect(tum.playbackRate == 4 && tum.pose(at: 0.25)?.position == Vector3(1, 0, 0))
        #expect(throws: PoseSourceError.self) { try PoseSourceSpec.tum(path: path + ".missing").trajectory() }
    }

    @Test("makeProvider: trajectories for synthetic sources, the store for live ones")
    func providers() throws {
        let store = LivePoseStore()
        let synthetic = try PoseSourceSpec.walk.makeProvider(intrinsics: k, startNanos: 1_000_000_000, store: store)
        #expect(synthetic is TrajectoryPoseProvider)
        #expect(synthetic.pose(frameID: 1, captureTimeNanos: 2_000_000_000).flags == [])
        let live = try PoseSourceSpec.stdin.makeProvider(intrinsics: k, startNanos: 0, store: store)
        #expect((live as? LivePoseProvider)?.store === store)
        #expect(live.pose(frameID: 1, captureTimeNanos: 2_000_000_000).flags == .missing)
        #expect(throws: PoseSourceError.self) {
            try PoseSourceSpec.orbit.makeProvider(intrinsics: CameraIntrinsics(fx: 0, fy: 1, cx: 0.5, cy: 0.5), startNanos: 0, store: store)
        }
        #expect(PoseSourceSpec.udp(host: "::1", port: 1).isLive && !PoseSourceSpec.tum(path: "x").isLive)
    }
}
