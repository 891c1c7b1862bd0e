import Foundation
import PoseCastKit
import Testing

/// 2023-11-14, in ns since the Unix epoch: the time line of these tests.
private let t0: UInt64 = 1_700_000_000_000_000_000
private let ms: UInt64 = 1_000_000
private let defaultK = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 16 / 9)

/// A feed line; `t` in ns (converted to Unix seconds) or absent.
private func line(t: UInt64? = nil, p: [Double], q: [Double] = [0, 0, 0, 1], k: [Double]? = nil) -> String {
    var fields = [#""p":\#(p)"#, #""q":\#(q)"#]
    if let t { fields.append(#""t":\#(Double(t) / 1e9)"#) }
    if let k { fields.append(#""k":\#(k)"#) }
    return "{" + fields.joined(separator: ",") + "}"
}

@Suite("pose feed lines")
struct PoseFeedLineTests {
    @Test("short and long field names decode to the same sample")
    func decodes() throws {
        let short = try #require(try PoseFeedLine.decode(
            #"{"t":1700000000.5,"p":[1,2,3],"q":[0,0,0,1],"k":[0.9,1.2,0.5,0.45],"frame":"opengl"}"#))
        let long = try #require(try PoseFeedLine.decode(
            #"{"time":1700000000.5,"position":[1,2,3],"orientation":[0,0,0,1],"intrinsics":[0.9,1.2,0.5,0.45]}"#))
        #expect(short == long)
        #expect(short.timeNanos == 1_700_000_000_500_000_000)
        #expect(short.pose == RigidPose(position: Vector3(1, 2, 3), orientation: .identity))
        #expect(short.intrinsics == CameraIntrinsics(fx: 0.9, fy: 1.2, cx: 0.5, cy: 0.45))
        let minimal = try #require(try PoseFeedLine.decode("  {\"p\":[0,0,0],\"q\":[0,0,0.0,1.05]}\r"))
        #expect(minimal.timeNanos == nil && minimal.intrinsics == nil)
        #expect(abs(minimal.pose.orientation.norm - 1) < 1e-6)
        #expect(try PoseFeedLine.decode("   ") == nil)
    }

    @Test("frame opencv turns the camera axes: identity looks down world +Z")
    func opencvFrame() throws {
        let sample = try #require(try PoseFeedLine.decode(#"{"p":[0,0,0],"q":[0,0,0,1],"frame":"opencv"}"#))
        #expect(sample.pose.orientation.rotate(Vector3(0, 0, -1)).distance(to: Vector3(0, 0, 1)) < 1e-6)
        #expect(sample.pose.orientation.rotate(Vector3(0, 1, 0)).distance(to: Vector3(0, -1, 0)) < 1e-6)
    }

    @Test("every malformed line is rejected with a precise reason", arguments: [
        (#"{"p":[0,0,0],"q":[0,0,0,1]}"# + String(repeating: " ", count: 4100), "lineTooLong", "4127 bytes"),
        (#"{"p":[0,0,0],"q":"#, "invalidJSON", "not valid JSON"),
        (#"{"p":[NaN,0,0],"q":[0,0,0,1]}"#, "invalidJSON", "not valid JSON"),
        (#"{"p":[1e400,0,0],"q":[0,0,0,1]}"#, "invalidJSON", "not valid JSON"),
        (#"[0,0,0]"#, "notAnObject", "one JSON object"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"pos":1}"#, "unknownField", "\"pos\""),
        (#"{"p":[0,0,0],"position":[0,0,0],"q":[0,0,0,1]}"#, "duplicateField", "both \"p\" and \"position\""),
        (#"{"q":[0,0,0,1]}"#, "missingField", "p (position)"),
        (#"{"p":[0,0,0]}"#, "missingField", "q (orientation)"),
        (#"{"p":"0 0 0","q":[0,0,0,1]}"#, "wrongType", "\"p\" must be an array of 3 numbers"),
        (#"{"p":[0,"1",0],"q":[0,0,0,1]}"#, "wrongType", "\"p[1]\" must be a number"),
        (#"{"p":[0,true,0],"q":[0,0,0,1]}"#, "wrongType", "\"p[1]\" must be a number"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"t":null}"#, "wrongType", "\"t\" must be a number"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"time":"now"}"#, "wrongType", "\"time\" must be a number"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"frame":1}"#, "wrongType", "\"frame\" must be a string"),
        (#"{"p":[0,0],"q":[0,0,0,1]}"#, "wrongCount", "\"p\" must hold 3 numbers, found 2"),
        (#"{"p":[0,0,0],"orientation":[0,0,1]}"#, "wrongCount", "\"orientation\" must hold 4"),
        (#"{"p":[0,0,1e39],"q":[0,0,0,1]}"#, "nonFinite", "\"p[2]\" is not finite"),
        (#"{"p":[0,0,0],"q":[0,0,0,0]}"#, "notUnitQuaternion", "norm 0.0"),
        (#"{"p":[0,0,0],"q":[0,0,0,2]}"#, "notUnitQuaternion", "norm 2.0"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"k":[0,1,0.5,0.5]}"#, "intrinsicsOutOfRange", "fx = 0.0"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"k":[1,-1,0.5,0.5]}"#, "intrinsicsOutOfRange", "fy = -1.0"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"k":[1400,1400,960,540]}"#, "intrinsicsOutOfRange", "looks like pixels"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"k":[1,1,1.5,0.5]}"#, "intrinsicsOutOfRange", "cx = 1.5"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"k":[1,1,0.5,-0.1]}"#, "intrinsicsOutOfRange", "0 ≤ cy ≤ 1"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"k":[1,1,0.5]}"#, "wrongCount", "\"k\" must hold 4"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"frame":"directx"}"#, "unknownConvention", "\"opengl\" or \"opencv\""),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"t":12345.6}"#, "implausibleTime", "monotonic clock"),
        (#"{"p":[0,0,0],"q":[0,0,0,1],"t":1700000000123}"#, "implausibleTime", "milliseconds"),
    ])
    func rejects(text: String, reason: String, mention: String) {
        let error = #expect(throws: PoseFeedError.self) { try PoseFeedLine.decode(text) }
        #expect(error?.reason == reason)
        #expect(error?.description.contains(mention) == true, "\(String(describing: error))")
    }

    @Test("intrinsics from options are checked by the same rules")
    func validateIntrinsics() throws {
        try PoseFeedLine.validate(defaultK)
        #expect(throws: PoseFeedError.nonFinite(field: "k.cx")) {
            try PoseFeedLine.validate(CameraIntrinsics(fx: 1, fy: 1, cx: .nan, cy: 0.5))
        }
    }
}

@Suite("live pose store and provider")
struct LivePoseTests {
    @Test("the store counts accepted and rejected lines, keeping the last error; blank lines are neither")
    func statistics() throws {
        let store = LivePoseStore()
        try store.ingest(line: line(t: t0, p: [0, 0, 0]), arrivalNanos: t0)
        #expect(try store.ingest(line: "", arrivalNanos: t0) == nil)
        #expect(throws: PoseFeedError.self) { try store.ingest(line: "nope", arrivalNanos: t0) }
        #expect(throws: PoseFeedError.missingField("q (orientation)")) { try store.ingest(line: #"{"p":[0,0,0]}"#, arrivalNanos: t0) }
        let stats = store.statistics
        #expect(stats.accepted == 1 && stats.rejected == 2 && stats.buffered == 1)
        #expect(stats.lastError == .missingField("q (orientation)"))
    }

    @Test("a tracker time far from the arrival time is rejected: the clocks disagree")
    func clockSkew() {
        let store = LivePoseStore()
        #expect(throws: PoseFeedError.timeInFuture(seconds: 5)) {
            try store.ingest(line: line(t: t0 + 5000 * ms, p: [0, 0, 0]), arrivalNanos: t0)
        }
        let old = #expect(throws: PoseFeedError.self) { try store.ingest(line: line(t: t0 - 10_000 * ms, p: [0, 0, 0]), arrivalNanos: t0) }
        #expect(old?.reason == "timeTooOld" && old?.description.contains("10.0 s older") == true)
        #expect(store.statistics.rejected == 2 && store.statistics.buffered == 0)
    }

    @Test("frames between timestamped samples get the interpolated pose")
    func interpolation() throws {
        let store = LivePoseStore()
        let turned = Quaternion(axis: Vector3(0, 1, 0), angleRadians: .pi / 2)
        try store.ingest(line: line(t: t0, p: [0, 0, 0]), arrivalNanos: t0 + 20 * ms)
        try store.ingest(line: line(t: t0 + 100 * ms, p: [1, 0, -2], q: [0, Double(turned.y), 0, Double(turned.w)]),
                         arrivalNanos: t0 + 120 * ms)
        let provider = LivePoseProvider(store: store, defaultIntrinsics: defaultK)
        let pose = provider.pose(frameID: 5, captureTimeNanos: t0 + 40 * ms)
        #expect(pose.flags == [] && pose.frameID == 5 && pose.captureTimeNanos == t0 + 40 * ms)
        #expect(pose.position.distance(to: Vector3(0.4, 0, -0.8)) < 1e-5)
        let expected = Quaternion(axis: Vector3(0, 1, 0), angleRadians: .pi / 2 * 0.4)
        #expect(abs(pose.orientation.y - expected.y) < 1e-5 && abs(pose.orientation.w - expected.w) < 1e-5)
        #expect(pose.intrinsics == defaultK)
    }

    @Test("samples arriving out of order are put back in time order")
    func outOfOrder() throws {
        let store = LivePoseStore()
        for (i, x) in [0.0, 2, 1, 3].enumerated() {
            let t = t0 + UInt64(x * 100) * ms
            try store.ingest(line: line(t: t, p: [x, 0, 0]), arrivalNanos: t0 + UInt64(i) * 100 * ms + 300 * ms)
        }
        let provider = LivePoseProvider(store: store, defaultIntrinsics: defaultK)
        for x in stride(from: 0.0, through: 3, by: 0.25) {
            let pose = provider.pose(frameID: 1, captureTimeNanos: t0 + UInt64(x * 100) * ms)
            #expect(abs(pose.position.x - Float(x)) < 1e-5, "at \(x): \(pose.position.x)")
        }
        // A repeated time replaces the sample.
        try store.ingest(line: line(t: t0 + 300 * ms, p: [9, 0, 0]), arrivalNanos: t0 + 500 * ms)
        #expect(store.statistics.buffered == 4)
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 + 300 * ms).position.x == 9)
    }

    @Test("flags by age of the newest sample: fresh up to 50 ms, late after, missing after 1 s",
          arguments: [(0, []), (49, []), (51, .late), (400, .late), (999, .late), (1001, .missing), (60_000, .missing)] as [(UInt64, PoseFlags)])
    func ages(ageMs: UInt64, flags: PoseFlags) throws {
        let store = LivePoseStore()
        try store.ingest(line: line(t: t0 - 100 * ms, p: [0, 0, 0]), arrivalNanos: t0)
        try store.ingest(line: line(t: t0, p: [1, 2, 3]), arrivalNanos: t0 + 10 * ms)
        let provider = LivePoseProvider(store: store, defaultIntrinsics: defaultK)
        let pose = provider.pose(frameID: 9, captureTimeNanos: t0 + ageMs * ms)
        #expect(pose.flags == flags)
        if flags.contains(.missing) {
            #expect(pose.position == .zero && pose.orientation == .identity)
        } else {
            #expect(pose.position == Vector3(1, 2, 3), "the newest sample, never extrapolated")
        }
        _ = try PoseWireFormat.encode(pose)
    }

    @Test("the thresholds are options")
    func customThresholds() throws {
        let store = LivePoseStore()
        try store.ingest(line: line(t: t0, p: [1, 2, 3]), arrivalNanos: t0)
        let strict = LivePoseProvider(store: store, defaultIntrinsics: defaultK, lateAfter: 0.01, missingAfter: 0.1)
        #expect(strict.pose(frameID: 1, captureTimeNanos: t0 + 20 * ms).flags == .late)
        #expect(strict.pose(frameID: 1, captureTimeNanos: t0 + 200 * ms).flags == .missing)
    }

    @Test("no sample at all: missing, with the default intrinsics")
    func empty() throws {
        let provider = LivePoseProvider(store: LivePoseStore(), defaultIntrinsics: defaultK)
        let pose = provider.pose(frameID: 3, captureTimeNanos: t0)
        #expect(pose == FramePose.missing(frameID: 3, captureTimeNanos: t0, intrinsics: defaultK))
        _ = try PoseWireFormat.encode(pose)
    }

    @Test("samples without t are placed at their arrival time")
    func arrivalTime() throws {
        let store = LivePoseStore()
        try store.ingest(line: line(p: [0, 0, 0]), arrivalNanos: t0)
        try store.ingest(line: line(p: [2, 0, 0]), arrivalNanos: t0 + 40 * ms)
        let provider = LivePoseProvider(store: store, defaultIntrinsics: defaultK)
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 + 10 * ms).position.x == 0.5)
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 + 80 * ms).flags == [])
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 + 100 * ms).flags == .late)
    }

    @Test("a frame before the first sample takes it, flagged by how far it is")
    func beforeFirst() throws {
        let store = LivePoseStore()
        try store.ingest(line: line(t: t0, p: [1, 0, 0]), arrivalNanos: t0)
        let provider = LivePoseProvider(store: store, defaultIntrinsics: defaultK)
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 - 10 * ms).flags == [])
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 - 200 * ms).flags == .late)
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 - 2000 * ms).flags == .missing)
    }

    @Test("a gap in the feed flags the frames in its middle late")
    func gap() throws {
        let store = LivePoseStore()
        try store.ingest(line: line(t: t0, p: [0, 0, 0]), arrivalNanos: t0)
        try store.ingest(line: line(t: t0 + 600 * ms, p: [6, 0, 0]), arrivalNanos: t0 + 600 * ms)
        let provider = LivePoseProvider(store: store, defaultIntrinsics: defaultK)
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 + 30 * ms).flags == [])
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 + 300 * ms).flags == .late)
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0 + 570 * ms).flags == [])
    }

    @Test("intrinsics: the feed's k when sent (and until replaced), else the default")
    func intrinsics() throws {
        let store = LivePoseStore()
        let provider = LivePoseProvider(store: store, defaultIntrinsics: defaultK)
        try store.ingest(line: line(t: t0, p: [0, 0, 0]), arrivalNanos: t0)
        #expect(provider.pose(frameID: 1, captureTimeNanos: t0).intrinsics == defaultK)
        try store.ingest(line: line(t: t0 + 10 * ms, p: [0, 0, 0], k: [0.75, 1.375, 0.5625, 0.4375]), arrivalNanos: t0 + 10 * ms)
        let fromFeed = CameraIntrinsics(fx: 0.75, fy: 1.375, cx: 0.5625, cy: 0.4375)
        #expect(provider.pose(frameID: 2, captureTimeNanos: t0 + 10 * ms).intrinsics == fromFeed)
        try store.ingest(line: line(t: t0 + 20 * ms, p: [0, 0, 0]), arrivalNanos: t0 + 20 * ms)
        #expect(provider.pose(frameID: 3, captureTimeNanos: t0 + 20 * ms).intrinsics == fromFeed)
        // Even a frame flagged missing keeps the feed's intrinsics.
        #expect(provider.pose(frameID: 4, captureTimeNanos: t0 + 5000 * ms).intrinsics == fromFeed)
        try store.ingest(line: line(t: t0 + 30 * ms, p: [0, 0, 0], k: [1, 1, 0.5, 0.5]), arrivalNanos: t0 + 30 * ms)
        #expect(provider.pose(frameID: 5, captureTimeNanos: t0 + 30 * ms).intrinsics == CameraIntrinsics(fx: 1, fy: 1, cx: 0.5, cy: 0.5))
    }

    @Test("the store keeps only its window behind the newest sample, and at most its capacity")
    func bounded() throws {
        let store = LivePoseStore(windowSeconds: 2)
        for i in 0..<500 {
            try store.ingest(line: line(p: [Double(i), 0, 0]), arrivalNanos: t0 + UInt64(i) * 10 * ms)
        }
        #expect(store.statistics.buffered == 201)
        let small = LivePoseStore(capacity: 16)
        for i in 0..<100 { try small.ingest(line: line(p: [0, 0, 0]), arrivalNanos: t0 + UInt64(i) * ms) }
        #expect(small.statistics.buffered == 16 && small.statistics.accepted == 100)
    }

    @Test("whatever the feed sends and whenever frames come, the provider's output encodes")
    func alwaysEncodable() throws {
        var random = SystemRandomNumberGenerator()
        let store = LivePoseStore()
        let provider = LivePoseProvider(store: store, defaultIntrinsics: defaultK)
        let junk = ["", "{}", "null", #"{"p":[0,0,0],"q":[0,0,0,0.95]}"#, #"{"p":[3e38,-3e38,0],"q":[1,1,1,1]}"#,
                    #"{"p":[0,0,0],"q":[0.5,0.5,0.5,0.5],"k":[100,0.0001,0,1]}"#, #"{"p":[0,0,0],"q":[0,0,1e-30,1.09]}"#]
        var now = t0
        for frame in 0..<3000 {
            now += UInt64.random(in: 0...40, using: &random) * ms
            if Bool.random(using: &random) {
                let text = Bool.random(using: &random) ? junk.randomElement(using: &random)!
                    : line(t: now - UInt64.random(in: 0...30, using: &random) * ms,
                           p: [Double.random(in: -1e4...1e4, using: &random), 0, 1],
                           q: (0..<4).map { _ in Double.random(in: -1...1, using: &random) })
                _ = try? store.ingest(line: text, arrivalNanos: now)
            }
            let capture = now &+ UInt64.random(in: 0...2000, using: &random) * ms &- 1000 * ms
            let pose = provider.pose(frameID: UInt32(frame), captureTimeNanos: capture)
            #expect(throws: Never.self) { try PoseWireFormat.encode(pose) }
        }
    }
}

@Suite("trajectory pose provider")
struct TrajectoryPoseProviderTests {
    struct Scripted: CameraTrajectory {
        func pose(at seconds: Double) -> RigidPose? {
            switch seconds {
            case ..<0: nil
            case ..<1: RigidPose(position: Vector3(Float(seconds), 0, 0), orientation: Quaternion(x: 0, y: 0, z: 0, w: 1.0005))
            case ..<2: RigidPose(position: Vector3(.nan, 0, 0), orientation: .identity)
            default: RigidPose(position: .zero, orientation: Quaternion(x: 0, y: 0, z: 0, w: 0))
            }
        }
    }

    @Test("time runs from startNanos; no pose, or a broken one, becomes a frame flagged missing")
    func flags() throws {
        let provider = TrajectoryPoseProvider(trajectory: Scripted(), intrinsics: defaultK, startNanos: t0)
        let good = provider.pose(frameID: 1, captureTimeNanos: t0 + 500 * ms)
        #expect(good.flags == [] && good.position == Vector3(0.5, 0, 0) && good.orientation == .identity)
        #expect(good.intrinsics == defaultK && good.frameID == 1 && good.captureTimeNanos == t0 + 500 * ms)
        for capture in [t0 - 1, t0 + 1500 * ms, t0 + 2500 * ms] {
            let pose = provider.pose(frameID: 2, captureTimeNanos: capture)
            #expect(pose == FramePose.missing(frameID: 2, captureTimeNanos: capture, intrinsics: defaultK))
            _ = try PoseWireFormat.encode(pose)
        }
    }

    @Test("orbit, walk and shake frames all encode, for hours")
    func encodes() throws {
        let trajectories: [any CameraTrajectory] = [OrbitTrajectory(intrinsics: defaultK), WalkTrajectory(),
                                                    ShakeTrajectory(base: WalkTrajectory(), seed: 2)]
        for trajectory in trajectories {
            let provider = TrajectoryPoseProvider(trajectory: trajectory, intrinsics: defaultK, startNanos: t0)
            for seconds in stride(from: 0.0, to: 20_000, by: 7.77) {
                let pose = provider.pose(frameID: 1, captureTimeNanos: t0 + UInt64(seconds * 1e9))
                #expect(pose.flags == [])
                _ = try PoseWireFormat.encode(pose)
            }
        }
    }
}
