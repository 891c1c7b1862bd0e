@testable import Subscriber
import PoseMedia
import PoseCastKit
import Subscriber
import Synchronization
import Testing

/// The subscriber's marker checks fed events and hand-made pictures: a magenta disc where
/// the pose projects an annotation, or none.
@Suite("marker watcher")
struct MarkerWatcherTests {
    static let width = 640, height = 480
    /// A camera at the origin looking down −Z.
    static func pose(frame: UInt32, capturedAt: UInt64) -> FramePose {
        FramePose(frameID: frame, captureTimeNanos: capturedAt, position: .zero, orientation: .identity,
                  intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
    }
    static let camera = CameraModel(pose: pose(frame: 0, capturedAt: 0))!

    /// The world point seen at pixel (x, y), 2 m away.
    static func world(_ x: Float, _ y: Float) -> Vector3 {
        camera.unproject(NormalizedPoint(x: x / Float(width), y: y / Float(height)), depth: 2)
    }

    /// A grey picture with a magenta disc of radius 7 around each of `discs` (pixel coordinates).
    static func picture(frame: UInt32, capturedAt: UInt64 = 1, decodedAt: UInt64, discs: [(Float, Float)]) -> DecodedPicture {
        var y = [UInt8](repeating: 128, count: width * height)
        var u = [UInt8](repeating: 128, count: width * height / 4), v = u
        // BT.601 limited range of #FF00FF.
        for (cx, cy) in discs {
            for py in Int(cy) - 8...Int(cy) + 8 {
                for px in Int(cx) - 8...Int(cx) + 8 {
                    let dx = Float(px) + 0.5 - cx, dy = Float(py) + 0.5 - cy
                    guard dx * dx + dy * dy <= 49 else { continue }
                    y[py * width + px] = 106
                    u[(py / 2) * (width / 2) + px / 2] = 202
                    v[(py / 2) * (width / 2) + px / 2] = 222
                }
            }
        }
        let decoded = DecodedFrame(pose: pose(frame: frame, capturedAt: capturedAt), decodedAtNanos: decodedAt, codec: .vp8,
                                   width: width, height: height)
        return DecodedPicture(frame: decoded, width: width, height: height, y: y, u: u, v: v)
    }

    static func annotation(_ id: String, at p: Vector3) -> Annotation {
        Annotation(id: id, kind: .pin, position: p, frameId: 0, tap: NormalizedPoint(x: 0.5, y: 0.5), label: "",
                   color: MarkerWatcher.markerColor, author: "me")
    }

    @Test("our annotation is reported visible once, from the first frame showing it where its pose says")
    func visibleOnce() throws {
        let events = Mutex<[MarkerWatchEvent]>([])
        let watcher = MarkerWatcher { e in events.withLock { $0.append(e) } }
        let a1 = Self.annotation("a1", at: Self.world(300.5, 200.5))
        let other = Self.annotation("a9", at: Self.world(100.5, 300.5))   // someone else's
        watcher.observe(.requestSent(id: "r1", type: "annotate", text: "{}"))
        let sentAt = WallClock.nowNanos()
        watcher.observe(.reply(.ack(id: "r1", annotationId: "a1")))
        watcher.observe(.reply(.annotations([other, a1])))
        watcher.observe(Self.picture(frame: 1, decodedAt: sentAt + 10_000_000, discs: [(100.5, 300.5)]))
        // Drawn 10 px off: not there yet.
        watcher.observe(Self.picture(frame: 2, decodedAt: sentAt + 20_000_000, discs: [(100.5, 300.5), (310.5, 200.5)]))
        #expect(events.withLock { $0 }.isEmpty)
        watcher.observe(Self.picture(frame: 3, decodedAt: sentAt + 50_000_000, discs: [(100.5, 300.5), (300.5, 200.5)]))
        watcher.observe(Self.picture(frame: 4, decodedAt: sentAt + 80_000_000, discs: [(100.5, 300.5), (300.5, 200.5)]))
        let seen = events.withLock { $0 }
        try #require(seen.count == 1, "\(seen)")
        guard case .visible(let v) = seen[0] else { Issue.record("\(seen)"); return }
        #expect(v.annotationId == "a1" && v.requestId == "r1" && v.frameId == 3)
        #expect(v.errorPixels < 1)
        #expect(v.roundTripMs >= 49 && v.roundTripMs < 1000, "\(v.roundTripMs)")
        #expect(seen[0].name == .annotationVisible && seen[0].fields["round_trip_ms"] != nil)
    }

    @Test("an ack that overtakes the report of its request still ties the annotation to it; other acks do not")
    func earlyAck() throws {
        let events = Mutex<[MarkerWatchEvent]>([])
        let watcher = MarkerWatcher { e in events.withLock { $0.append(e) } }
        // A remove's ack also names an annotation: not one of ours to wait for.
        watcher.observe(.requestSent(id: "r1", type: "removeAnnotation", text: "{}"))
        watcher.observe(.reply(.ack(id: "r1", annotationId: "a0")))
        watcher.observe(.reply(.ack(id: "r2", annotationId: "a1")))
        watcher.observe(.requestSent(id: "r2", type: "annotate", text: "{}"))
        watcher.observe(.reply(.annotations([Self.annotation("a0", at: Self.world(100.5, 100.5)),
                                             Self.annotation("a1", at: Self.world(300.5, 200.5))])))
        watcher.observe(Self.picture(frame: 7, decodedAt: WallClock.nowNanos(), discs: [(100.5, 100.5), (300.5, 200.5)]))
        let seen = events.withLock { $0 }
        #expect(seen.count == 1)
        guard case .visible(let v) = seen.first else { Issue.record("\(seen)"); return }
        #expect(v.annotationId == "a1" && v.requestId == "r2" && v.frameId == 7)
    }

    @Test("checkmarkers reports each listed mark, and a removed one as absent once frames after the removal lack it")
    func reports() throws {
        let events = Mutex<[MarkerWatchEvent]>([])
        let watcher = MarkerWatcher { e in events.withLock { $0.append(e) } }
        let a1 = Self.annotation("a1", at: Self.world(300.5, 200.5)), a2 = Self.annotation("a2", at: Self.world(500.5, 100.5))
        // Behind the camera: never in view.
        let a3 = Self.annotation("a3", at: Vector3(0, 0, 2))
        watcher.observe(.reply(.annotations([a1, a2, a3])))
        try watcher.checkMarkers(frames: 3)
        #expect(throws: CommandError.self) { try watcher.checkMarkers(frames: 3) }
        for frame in UInt32(1)...3 {
            // a2 is missing from frame 2.
            let discs: [(Float, Float)] = frame == 2 ? [(300.5, 200.5)] : [(300.5, 200.5), (501, 100.5)]
            watcher.observe(Self.picture(frame: frame, decodedAt: 1, discs: discs))
        }
        var reports = events.withLock { s in defer { s.removeAll() }; return s }.compactMap { e -> MarkerReport? in
            if case .report(let r) = e { r } else { nil }
        }
        #expect(reports.map(\.annotationId) == ["a1", "a2", "a3"])
        #expect(reports[0].visible == 3 && reports[0].found == 3 && reports[0].errorMax! < 1)
        #expect(reports[1].visible == 3 && reports[1].found == 2 && reports[1].errorP50! < 1.5)
        #expect(reports[2].visible == 0 && reports[2].found == 0 && reports[2].errorP50 == nil && !reports[2].removed)

        // a2 and a3 removed: frames captured before the list said so still show it and do not count.
        watcher.observe(.reply(.annotations([a1])))
        let removedAt = WallClock.nowNanos()
        try watcher.checkMarkers(frames: 4)
        for frame in UInt32(10)...13 {
            let early = frame < 12
            watcher.observe(Self.picture(frame: frame, capturedAt: early ? removedAt - 1_000_000 : removedAt + 1_000_000,
                                         decodedAt: 1, discs: early ? [(300.5, 200.5), (500.5, 100.5)] : [(300.5, 200.5)]))
        }
        let all = events.withLock { $0 }
        reports = all.compactMap { e -> MarkerReport? in if case .report(let r) = e { r } else { nil } }
        // a3 went with the same list; it was never in view, so its absence shows nothing.
        #expect(reports.map(\.annotationId) == ["a1", "a2", "a3"])
        #expect(reports[0].found == 4 && !reports[0].removed)
        #expect(reports[1].removed && reports[1].visible == 2 && reports[1].found == 0 && reports[1].absent == true)
        #expect(reports[2].removed && reports[2].visible == 0 && reports[2].absent == nil)
        #expect(all.last == .checkDone(frames: 4, reports: 3))

        // Still drawn after its removal: absent is false.
        try watcher.checkMarkers(frames: 1)
        events.withLock { $0.removeAll() }
        watcher.observe(Self.picture(frame: 20, capturedAt: WallClock.nowNanos(), decodedAt: 1, discs: [(300.5, 200.5), (500.5, 100.5)]))
        let still = events.withLock { $0 }.compactMap { e -> MarkerReport? in if case .report(let r) = e, r.removed { r } else { nil } }
        #expect(still.first?.annotationId == "a2" && still.first?.absent == false)
    }

    @Test("two marks of the same colour close together are not counted (either could be taken for the other)")
    func crowded() throws {
        let events = Mutex<[MarkerWatchEvent]>([])
        let watcher = MarkerWatcher { e in events.withLock { $0.append(e) } }
        watcher.observe(.reply(.annotations([Self.annotation("a1", at: Self.world(300.5, 200.5)),
                                             Self.annotation("a2", at: Self.world(312.5, 200.5))])))
        try watcher.checkMarkers(frames: 1)
        watcher.observe(Self.picture(frame: 1, decodedAt: 1, discs: [(300.5, 200.5), (312.5, 200.5)]))
        let reports = events.withLock { $0 }.compactMap { e -> MarkerReport? in if case .report(let r) = e { r } else { nil } }
        #expect(reports.count == 2 && reports.allSatisfy { $0.visible == 0 })
    }

    @Test("bad frame counts are refused", arguments: [0, -1, MarkerWatcher.maxCheckFrames + 1])
    func badCounts(frames: Int) {
        let watcher = MarkerWatcher { _ in }
        #expect(throws: CommandError.self) { try watcher.checkMarkers(frames: frames) }
    }

    @Test("checkmarkers parses")
    func parse() throws {
        #expect(try SubscriberCommand.parse("checkmarkers 60") == .checkMarkers(frames: 60))
        #expect(throws: CommandError.self) { try SubscriberCommand.parse("checkmarkers") }
        #expect(throws: CommandError.self) { try SubscriberCommand.parse("checkmarkers 0") }
        #expect(throws: CommandError.self) { try SubscriberCommand.parse("checkmarkers lots") }
    }
}
