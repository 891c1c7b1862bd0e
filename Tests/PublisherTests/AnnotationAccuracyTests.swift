import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
import RTCSession
import SyntheticCamera
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import TestSupport
import Testing

/// The synthetic camera through a real webrtcbin pair while the camera orbits: what the
/// subscriber decodes must agree with the pose it carries, closely enough that a tap on
/// a scene feature lands on it in the world, and the publisher's marker for a world
/// point shows up where that point projects.
@Suite("anchored annotations against the synthetic scene", .serialized)
struct AnnotationAccuracyTests {
    static let width = 640, height = 480
    static let scene = SyntheticScene.standard

    /// A steeper orbit than the demo's (radius 2.2 m, 2.2 m up: ~45° down onto the
    /// ground), so one pixel is a few millimetres on the ground plane.
    static func orbit() -> TrajectoryPoseProvider {
        var orbit = OrbitTrajectory(intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
        orbit.radius = 2.2; orbit.height = 2.2; orbit.target = Vector3(0, 0, 0); orbit.degreesPerSecond = 30
        return TrajectoryPoseProvider(trajectory: orbit, intrinsics: orbit.intrinsics, startNanos: WallClock.nowNanos())
    }

    /// Runs publisher (synthetic camera) → subscriber until `count` pictures are decoded.
    static func receive(count: Int, annotations: [Annotation] = []) async throws -> [DecodedPicture] {
        let pictures = Mutex<[DecodedPicture]>([])
        var pubConfig = PublisherMediaConfig()
        pubConfig.source = .synthetic
        pubConfig.width = width; pubConfig.height = height
        pubConfig.bitrateKbps = 3000
        let provider = orbit()
        let publisher = try PublisherMedia(config: pubConfig) { id, t in provider.pose(frameID: id, captureTimeNanos: t) }
        publisher.setAnnotations(annotations)
        var subConfig = SubscriberMediaConfig()
        subConfig.onPicture = { picture in pictures.withLock { $0.append(picture) } }
        let subscriber = try SubscriberMedia(config: subConfig)
        try await publisher.start()
        try subscriber.start()
        let peer = try await publisher.addPeer(name: "expert")
        let link = LoopbackLink(publisher: peer, subscriber: subscriber)
        defer { link.cancel(); subscriber.stop(); publisher.removePeer(peer); publisher.stop() }
        _ = try await link.negotiate()
        try await waitUntil(60, "\(count) decoded pictures", progress: {
            "\(pictures.withLock { $0.count }) decoded; publisher \(String(describing: publisher.syntheticStats))"
        }) { pictures.withLock { $0.count } >= count }
        return pictures.withLock { $0 }
    }

    /// True when rays through the disc's centre and through points just outside its rim
    /// all reach the disc's own plane unobstructed (no box or sphere in front).
    static func fullyVisible(_ disc: SceneDisc, from camera: CameraModel) -> Bool {
        let rim = (0..<16).map { i -> Vector3 in
            let a = Float(i) * .pi / 8
            return disc.center + Vector3(cos(a), 0, sin(a)) * (disc.radius * 1.6)
        }
        for point in [disc.center] + rim {
            guard let projection = camera.project(point), projection.isInImage,
                  let hit = scene.intersect(camera.ray(through: projection.point)),
                  hit.point.distance(to: point) < 0.01 else { return false }
        }
        return true
    }

    @Test("a tap on a disc seen in the decoded frame lands within 1 cm of its centre (99 %, all within 2 cm; ground plane) while the camera orbits")
    func tapLandsOnTheDisc() async throws {
        let pictures = try await Self.receive(count: 90)
        var errors: [Float] = [], previousPoseErrors: [Float] = []
        var framesUsed = Set<UInt32>()
        var previous: FramePose?
        // Skip the first second: the encoder settles after the first keyframe.
        for picture in pictures.dropFirst(30) {
            let pose = try #require(picture.frame.pose, "every decoded frame carries its pose")
            defer { previous = pose }
            let camera = try #require(CameraModel(pose: pose))
            for disc in Self.scene.discs {
                guard let projection = camera.project(disc.center), projection.depth < 5 else { continue }
                let px = CameraModel.pixel(projection.point, width: picture.width, height: picture.height)
                // Whole disc in view, away from the edges, and nothing in front of any of it
                // (ground truth: the scene's own ray cast through its rim and a margin).
                guard px.x > 40, px.y > 40, px.x < Float(picture.width) - 40, px.y < Float(picture.height) - 40,
                      Self.fullyVisible(disc, from: camera) else { continue }
                let target = disc.color
                // Found by colour in the decoded picture, not from the pose.
                guard let found = ColorBlob.find(in: picture, around: px, radius: 30, minimum: 40, matches: { r, g, b in
                    let d = (r - target.red) * (r - target.red) + (g - target.green) * (g - target.green)
                        + (b - target.blue) * (b - target.blue)
                    return d < 60 * 60
                }) else { continue }
                let tap = NormalizedPoint(x: found.x / Float(picture.width), y: found.y / Float(picture.height))
                let placed = try PlacementMode.groundPlane.place(tap, on: pose)
                errors.append(placed.distance(to: disc.center) * 100)
                framesUsed.insert(pose.frameID)
                // Control: the same tap with the pose of the frame before (one frame late).
                if let previous, previous.frameID &+ 1 == pose.frameID {
                    previousPoseErrors.append(try PlacementMode.groundPlane.place(tap, on: previous).distance(to: disc.center) * 100)
                }
            }
        }
        let sorted = errors.sorted()
        let late = previousPoseErrors.sorted()
        print("tap → world: \(errors.count) taps on \(framesUsed.count) frames; error cm p50 \(sorted[sorted.count / 2]), "
              + "max \(sorted.last!); with the previous frame's pose p50 \(late[late.count / 2])")
        #expect(errors.count >= 50, "enough taps on visible discs")
        #expect(framesUsed.count >= 30, "taps spread over the moving trajectory")
        // Found by colour in a compressed picture: under CPU load the encoder's quality
        // drops and one blob in a few hundred can sit off by a few millimetres more
        // (1.27 and 1.44 cm were seen once each in ~250 taps), so 99 % within 1 cm and
        // none beyond 2 cm. A pose one frame off would move the p50 (below) 5×.
        #expect(sorted[min(sorted.count - 1, sorted.count * 99 / 100)] < 1.0, "99 % of taps within 1 cm of the disc centre")
        #expect(sorted.last! < 2.0, "every tap within 2 cm of the disc centre")
        // The check can tell a pose one frame (1°) off: it must be the frame's own pose.
        #expect(late.count > 20 && late[late.count / 2] > 3 * sorted[sorted.count / 2])
    }

    @Test("the publisher's pin for a world point is drawn within 2 px of where that point projects in the decoded frame")
    func markerDrawnWhereGroundTruthProjects() async throws {
        // On the ground between the discs, and on top of a box: both move across the picture.
        let anchors = [Vector3(0.1, 0, 0.15), Vector3(-0.2, 0, -0.45)]
        let annotations = anchors.enumerated().map { i, p in
            Annotation(id: "m\(i)", kind: .pin, position: p, frameId: 0, tap: NormalizedPoint(x: 0.5, y: 0.5),
                       label: "", color: MarkerDetector.magentaHex, author: "test")
        }
        let pictures = try await Self.receive(count: 90, annotations: annotations)
        var errors: [Float] = []
        for picture in pictures.dropFirst(30) {
            let pose = try #require(picture.frame.pose)
            let camera = try #require(CameraModel(pose: pose))
            let shape = MarkerShape(kind: .pin, frameHeight: picture.height)
            for anchor in anchors {
                guard let projection = camera.project(anchor), projection.isInImage else { continue }
                let px = CameraModel.pixel(projection.point, width: picture.width, height: picture.height)
                guard shape.isWhollyInside(px, width: picture.width, height: picture.height) else { continue }
                // Behind something nearer (a ball, a box): drawn with the hidden look, not this test's.
                let sight = CameraRay(origin: camera.position, direction: anchor - camera.position)
                guard let hit = SyntheticScene.standard.intersect(sight),
                      hit.distance >= anchor.distance(to: camera.position) - 0.02 else { continue }
                // Magenta: a hue the scene never uses. Found by colour, compared with the projection.
                let sighting = try #require(MarkerDetector.magenta.locate(shape, anchor: px, in: picture),
                                            "pin of \(anchor) visible in frame \(pose.frameID)")
                errors.append(sighting.errorPixels)
            }
        }
        let sorted = errors.sorted()
        print("marker: \(errors.count) pins found; distance from ground truth px p50 \(sorted[sorted.count / 2]), max \(sorted.last!)")
        #expect(errors.count >= 60)
        #expect(sorted.last! <= 2.0)
    }
}
