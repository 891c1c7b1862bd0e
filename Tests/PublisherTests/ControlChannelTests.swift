import CameraControl
import Foundation
import PoseCastKit
import Publisher
import Signaling
import Subscriber
import SyntheticCamera
import Testing

@Suite("control channel protocol")
struct ControlChannelTests {
    let history = FrameHistory(capacity: 8)
    var control: PublisherControl { PublisherControl(board: board, placer: AnnotationPlacer(history: history)) }
    let board = AnnotationBoard()

    func annotate(id: String = "r1", x: Double = 0.5) -> String {
        ##"{"type":"annotate","id":"\##(id)","position":{"x":0.1,"y":0.2,"z":-1.5},"frameId":42,"tap":{"x":\##(x),"y":0.25},"kind":"arrow","label":"valve","color":"#00ff00"}"##
    }

    @Test("every request type round-trips through the codec")
    func roundTrip() throws {
        let requests: [ControlRequest] = [
            .annotate(AnnotationRequest(annotationId: "mine", kind: .label, position: Vector3(1, 2, 3), frameId: 7,
                                        tap: NormalizedPoint(x: 0.25, y: 0.75), label: "here", color: "#ABCDEF")),
            .annotate(AnnotationRequest(placement: .publisherDepth, position: nil, frameId: 8, tap: NormalizedPoint(x: 0.5, y: 0.5))),
            .annotate(AnnotationRequest(placement: .screen, position: nil, frameId: 9, tap: NormalizedPoint(x: 0.1, y: 0.9))),
            .removeAnnotation(annotationId: "a3"), .clearAnnotations,
            .focus(point: NormalizedPoint(x: 0, y: 1), mode: .tapToLockFocus),
            .meter(MeterRequest(point: NormalizedPoint(x: 0.5, y: 0.5), lockDuration: 2.5, routines: [.exposure, .whiteBalance],
                                meteringMode: .spot, throwIfUnsupported: true)),
            .meter(MeterRequest()), .lock(routines: [.focus]), .unlock(routines: MeteringRoutine.allCases), .meteringMode(.spot),
            .voice(muted: true), .voice(muted: false),
            .receiving(frameId: 7, captureTimeNanos: 1_790_000_000_123_456_789), .receiving(frameId: UInt32.max, captureTimeNanos: UInt64.max),
        ]
        for (i, request) in requests.enumerated() {
            let envelope = ControlEnvelope(id: "r\(i)", request: request)
            #expect(try ControlCodec.decodeRequest(ControlCodec.encode(envelope)) == envelope)
        }
        let replies: [ControlReply] = [
            .ack(id: "r1", annotationId: "a1"), .ack(id: "r2", annotationId: nil), .ack(id: "r3", annotationId: nil, skipped: [.whiteBalance]),
            .error(ControlError(id: "r3", code: .notAllowed, message: "no")),
            .annotations([Annotation(id: "a1", kind: .pin, position: Vector3(0.5, 0, -2), frameId: 9,
                                     tap: NormalizedPoint(x: 0.5, y: 0.5), label: "x", color: "#FF0000", author: "p1")]),
            .sceneStatus(SceneStatus(focus: RoutineStatus(state: .converged, measure: 812.5), exposure: RoutineStatus(state: .metering, measure: 96),
                                     whiteBalance: RoutineStatus(state: .unsupported), focusMode: .tapToLockFocus, meteringMode: .spot,
                                     region: NormalizedRect(x: 0.25, y: 0.5, width: 0.125, height: 0.25), lensPosition: 0.375,
                                     exposureMs: 12.5, gain: 2, whiteBalanceKelvin: nil, lockRemaining: 1.5, frameId: 77)),
            .voices([VoiceParticipant(id: "field", role: "publisher", muted: false),
                     VoiceParticipant(id: "e1", role: "expert", muted: true), VoiceParticipant(id: "v1", role: "viewer", muted: false, mayTalk: false)]),
            .voiceRoute(VoiceRoute(room: 1_000_001_234, pin: "9f3a-77c1", display: "e4b2-01aa")),
            .voiceRoute(VoiceRoute(room: 1_000_001_234, pin: "9f3a-77c1", display: "e4b2-01aa", listen: ["77aa-1", "77aa-2"])),
        ]
        for reply in replies { #expect(try ControlCodec.decodeReply(ControlCodec.encode(reply)) == reply) }
    }

    @Test("bad requests get an error that names the problem", arguments: [
        ("not json", ControlErrorCode.malformed, "JSON"),
        ("[1,2]", .malformed, "object"),
        (#"{"type":"annotate"}"#, .missingField, "id"),
        (#"{"type":"warp","id":"r1"}"#, .unknownType, "warp"),
        (#"{"type":"meteringMode","id":"r1"}"#, .missingField, "mode"),
        (#"{"type":"meteringMode","id":"r1","mode":"dark"}"#, .invalidValue, "mode"),
        (#"{"type":"annotate","id":"r1","position":{"x":0,"y":0,"z":0},"frameId":1}"#, .missingField, "tap"),
        (#"{"type":"annotate","id":"r1","position":{"x":0,"y":0},"frameId":1,"tap":{"x":0.5,"y":0.5}}"#, .missingField, "position.z"),
        (#"{"type":"annotate","id":"r1","position":{"x":"0","y":0,"z":0},"frameId":1,"tap":{"x":0.5,"y":0.5}}"#, .invalidValue, "position.x"),
        (#"{"type":"annotate","id":"r1","position":{"x":1e30,"y":0,"z":0},"frameId":1,"tap":{"x":0.5,"y":0.5}}"#, .invalidValue, "position"),
        (#"{"type":"annotate","id":"r1","position":{"x":0,"y":0,"z":0},"frameId":-1,"tap":{"x":0.5,"y":0.5}}"#, .invalidValue, "frameId"),
        (#"{"type":"annotate","id":"r1","position":{"x":0,"y":0,"z":0},"frameId":1.5,"tap":{"x":0.5,"y":0.5}}"#, .invalidValue, "frameId"),
        (#"{"type":"annotate","id":"r1","position":{"x":0,"y":0,"z":0},"frameId":1,"tap":{"x":1.5,"y":0.5}}"#, .invalidValue, "tap"),
        (#"{"type":"annotate","id":"r1","position":{"x":0,"y":0,"z":0},"frameId":1,"tap":{"x":0.5,"y":0.5},"color":"red"}"#, .invalidValue, "color"),
        (#"{"type":"annotate","id":"r1","position":{"x":0,"y":0,"z":0},"frameId":1,"tap":{"x":0.5,"y":0.5},"kind":"circle"}"#, .invalidValue, "kind"),
        (#"{"type":"focus","id":"r1","point":{"x":0.5,"y":0.5},"mode":"manual"}"#, .invalidValue, "mode"),
        (#"{"type":"focus","id":"r1","point":{"x":true,"y":0.5}}"#, .invalidValue, "point.x"),
        (#"{"type":"meter","id":"r1","routines":["iso"]}"#, .invalidValue, "routines"),
        (#"{"type":"meter","id":"r1","throwIfUnsupported":1}"#, .invalidValue, "throwIfUnsupported"),
        (#"{"type":"lock","id":""}"#, .invalidValue, "id"),
        (#"{"type":"annotate","id":"r1","placement":"screen","position":{"x":0,"y":0,"z":0},"frameId":1,"tap":{"x":0.5,"y":0.5}}"#, .invalidValue, "position"),
        (#"{"type":"annotate","id":"r1","placement":"guess","frameId":1,"tap":{"x":0.5,"y":0.5}}"#, .invalidValue, "placement"),
        (#"{"type":"voice","id":"r1"}"#, .missingField, "muted"),
        (#"{"type":"voice","id":"r1","muted":"yes"}"#, .invalidValue, "muted"),
        (#"{"type":"receiving","id":"rx1","frameId":3}"#, .missingField, "captureTimeNs"),
        (#"{"type":"receiving","id":"rx1","frameId":3,"captureTimeNs":1790000000123456789}"#, .invalidValue, "captureTimeNs"),
        (#"{"type":"receiving","id":"rx1","frameId":3,"captureTimeNs":"-5"}"#, .invalidValue, "captureTimeNs"),
        (#"{"type":"receiving","id":"rx1","frameId":3,"captureTimeNs":"18446744073709551616"}"#, .invalidValue, "captureTimeNs"),
    ])
    func badRequests(text: String, code: ControlErrorCode, mentions: String) {
        #expect(throws: ControlError.self) { try ControlCodec.decodeRequest(text) }
        do { _ = try ControlCodec.decodeRequest(text) } catch {
            #expect(error.code == code, "\(text) → \(error)")
            #expect(error.message.contains(mentions), "\(text) → \(error.message)")
        }
        // The publisher answers it and stays usable.
        let outcome = control.handle(text, from: "s1", role: .expert)
        guard case .error(let e) = outcome.reply else { Issue.record("no error reply for \(text)"); return }
        #expect(e.code == code)
        #expect(!outcome.annotationsChanged)
        #expect(control.handle(annotate(), from: "s1", role: .expert).annotationsChanged)
    }

    @Test("an oversized message is refused before parsing")
    func tooLarge() {
        let text = #"{"type":"clearAnnotations","id":"r1","pad":""# + String(repeating: "x", count: ControlCodec.maxMessageBytes) + #""}"#
        guard case .error(let e) = control.handle(text, from: "s1", role: .expert).reply else { Issue.record("accepted"); return }
        #expect(e.code == .tooLarge)
    }

    @Test("annotate, remove and clear are acknowledged and change the shared list")
    func annotationLifecycle() throws {
        let first = control.handle(annotate(id: "r1"), from: "expert-1", role: .expert)
        #expect(first.reply == .ack(id: "r1", annotationId: "a1"))
        #expect(first.annotationsChanged)
        _ = control.handle(annotate(id: "r2", x: 0.75), from: "expert-1", role: .expert)
        let stored = control.board.all
        #expect(stored.map(\.id) == ["a1", "a2"])
        #expect(stored[0].kind == .arrow && stored[0].label == "valve" && stored[0].color == "#00FF00" && stored[0].frameId == 42)
        #expect(stored[0].position == Vector3(0.1, 0.2, -1.5) && stored[0].author == "expert-1")

        #expect(control.handle(#"{"type":"removeAnnotation","id":"r3","annotationId":"a1"}"#, from: "e", role: .expert).reply
                == .ack(id: "r3", annotationId: "a1"))
        #expect(control.board.all.map(\.id) == ["a2"])
        guard case .error(let missing) = control.handle(#"{"type":"removeAnnotation","id":"r4","annotationId":"a1"}"#,
                                                        from: "e", role: .expert).reply else { Issue.record("removed twice"); return }
        #expect(missing.code == .notFound && missing.id == "r4")
        #expect(control.handle(#"{"type":"clearAnnotations","id":"r5"}"#, from: "e", role: .expert).reply == .ack(id: "r5", annotationId: nil))
        #expect(control.board.all.isEmpty)
    }

    @Test("the board holds at most its limit")
    func limit() {
        for i in 0..<AnnotationBoard.maxAnnotations {
            #expect(control.handle(annotate(id: "r\(i)"), from: "e", role: .expert).annotationsChanged)
        }
        guard case .error(let e) = control.handle(annotate(id: "over"), from: "e", role: .expert).reply else {
            Issue.record("over the limit accepted"); return
        }
        #expect(e.code == .limitReached && e.id == "over")
    }

    @Test("a viewer may not annotate or steer the camera")
    func viewerRefused() {
        for text in [annotate(), #"{"type":"focus","id":"r9","point":{"x":0.5,"y":0.5}}"#,
                     #"{"type":"meteringMode","id":"r10","mode":"spot"}"#] {
            guard case .error(let e) = control.handle(text, from: "v", role: .viewer).reply else { Issue.record("viewer accepted"); continue }
            #expect(e.code == .notAllowed)
        }
        #expect(control.board.all.isEmpty)
    }

    @Test("meteringMode changes the publisher's metering mode and nothing else: acknowledged, no routine metered once or locked")
    func meteringModeOnly() throws {
        let meter = CameraMeter(backend: SimulatedCameraBackend(lens: LensControl()))
        let control = PublisherControl(board: board, placer: AnnotationPlacer(history: history), camera: CameraMeterCommands(meter: meter))
        let outcome = control.handle(#"{"type":"meteringMode","id":"m1","mode":"spot"}"#, from: "e", role: .expert)
        #expect(outcome.reply == .ack(id: "m1", annotationId: nil))
        #expect(meter.status.meteringMode == .spot)
        #expect(meter.status.focus.state != .locked && meter.status.exposure.state != .locked
                && meter.status.whiteBalance.state != .locked, "\(meter.status)")
    }

    @Test("camera control is refused as unsupported until a backend exists")
    func cameraControlUnsupported() {
        for text in [#"{"type":"focus","id":"r1","point":{"x":0.5,"y":0.5},"mode":"auto"}"#,
                     #"{"type":"meter","id":"r2"}"#, #"{"type":"lock","id":"r3"}"#, #"{"type":"unlock","id":"r4"}"#,
                     #"{"type":"meteringMode","id":"r5","mode":"spot"}"#] {
            guard case .error(let e) = control.handle(text, from: "e", role: .expert).reply else { Issue.record("accepted \(text)"); continue }
            #expect(e.code == .unsupported)
        }
    }
}

@Suite("tap geometry (fixed depth)")
struct TapGeometryTests {
    @Test("the centre tap goes along the optical axis; the corners spread by the field of view")
    func rays() throws {
        let eye = Vector3(1, 1.5, 2)
        let pose = FramePose(frameID: 1, captureTimeNanos: 0, position: eye,
                             orientation: OrbitTrajectory.lookAt(eye: eye, target: Vector3(1, 1.5, 0)),
                             intrinsics: CameraIntrinsics(horizontalFOVDegrees: 90, aspect: 1))
        let centre = try #require(CameraRay(pose: pose, through: NormalizedPoint(x: 0.5, y: 0.5)))
        let p = centre.point(atDistance: 2)
        #expect(abs(p.x - 1) < 1e-5 && abs(p.y - 1.5) < 1e-5 && abs(p.z - 0) < 1e-5)
        // 90° horizontal FOV: the right edge at depth 2 is 2 m to the right; the top edge 2 m up.
        let right = try #require(CameraRay(pose: pose, through: NormalizedPoint(x: 1, y: 0.5)))
        let r = right.point(atDistance: 2 * 2.0.squareRoot().float)
        #expect(abs(r.x - 3) < 1e-4 && abs(r.z - 0) < 1e-4)
        let top = try #require(CameraRay(pose: pose, through: NormalizedPoint(x: 0.5, y: 0)))
        let t = top.point(atDistance: 2 * 2.0.squareRoot().float)
        #expect(abs(t.y - 3.5) < 1e-4, "image y grows downwards, world y up")
        var missing = pose
        missing.flags = .missing
        #expect(CameraRay(pose: missing, through: NormalizedPoint(x: 0.5, y: 0.5)) == nil)
    }
}

extension Double { var float: Float { Float(self) } }

@Suite("headless subscriber commands")
struct SubscriberCommandTests {
    @Test("commands parse, with defaults")
    func parse() throws {
        #expect(try SubscriberCommand.parse("tap 0.5 0.25 red valve") == .tap(NormalizedPoint(x: 0.5, y: 0.25), label: "red valve"))
        #expect(try SubscriberCommand.parse("focus 0.1 0.9") == .focus(NormalizedPoint(x: 0.1, y: 0.9), .tapToAutoFocus))
        #expect(try SubscriberCommand.parse("focus 0.1 0.9 tapToLockFocus") == .focus(NormalizedPoint(x: 0.1, y: 0.9), .tapToLockFocus))
        #expect(try SubscriberCommand.parse("meter") == .meter(MeterRequest()))
        #expect(try SubscriberCommand.parse("meter 0.5 0.5 3") == .meter(MeterRequest(point: NormalizedPoint(x: 0.5, y: 0.5), lockDuration: 3)))
        #expect(try SubscriberCommand.parse("meter 0.25 0.75 routines=exposure,whiteBalance mode=spot strict")
                == .meter(MeterRequest(point: NormalizedPoint(x: 0.25, y: 0.75), routines: [.exposure, .whiteBalance],
                                       meteringMode: .spot, throwIfUnsupported: true)))
        #expect(try SubscriberCommand.parse("meteringmode weighted") == .meteringMode(.weighted))
        #expect(try SubscriberCommand.parse("tapworld 0.6 0 0.3 naive red disc")
                == .tapWorld(Vector3(0.6, 0, 0.3), method: .naive, label: "red disc"))
        #expect(try SubscriberCommand.parse("tapworld 0.6 0 0.3 ground red disc")
                == .tapWorld(Vector3(0.6, 0, 0.3), method: .ground, label: "red disc"))
        #expect(try SubscriberCommand.parse("tapworld 0.6 0 0.3 red disc")
                == .tapWorld(Vector3(0.6, 0, 0.3), method: .configured, label: "red disc"))
        #expect(try SubscriberCommand.parse("  # comment") == nil)
        #expect(try SubscriberCommand.parse("") == nil)
        #expect(try SubscriberCommand.parse("sleep 0.5") == .sleep(0.5))
    }

    @Test("bad commands say what is wrong", arguments: [
        ("tap 0.5", "missing Y"), ("tap 1.5 0.5", "in the image"), ("tap nan 0.5", "finite"),
        ("focus 0.5 0.5 sideways", "mode"), ("remove", "annotation id"), ("warp 1 2", "unknown command"),
        ("sleep -1", "negative"), ("meter 1 2 3 4", "too many"), ("meter routines=iso", "routines"),
        ("meter mode=matrix", "mode"), ("meteringmode", "uniform"), ("tapworld 1 2", "missing WZ"),
    ])
    func bad(line: String, mentions: String) {
        do {
            _ = try SubscriberCommand.parse(line)
            Issue.record("\(line) accepted")
        } catch {
            #expect(error.description.contains(mentions), "\(line) → \(error)")
        }
    }
}

/// The publisher's own placements: from its depth of the tapped frame, or naively from
/// its newest pose, with the errors a demanding expert needs to see.
@Suite("publisher-side annotation placement")
struct PublisherPlacementTests {
    struct ConstantDepth: DepthSampler {
        var metres: Float?
        func depth(at point: NormalizedPoint) -> Float? { metres }
    }

    static let intrinsics = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3)

    static func pose(_ id: UInt32, eye: Vector3) -> FramePose {
        FramePose(frameID: id, captureTimeNanos: 1, position: eye,
                  orientation: .lookAt(eye: eye, target: Vector3(0, 0, 0)), intrinsics: intrinsics)
    }

    func annotate(_ placement: String, frame: UInt32, x: Double = 0.5, y: Double = 0.5) -> String {
        ##"{"type":"annotate","id":"q","placement":"\##(placement)","frameId":\##(frame),"tap":{"x":\##(x),"y":\##(y)}}"##
    }

    @Test("publisherDepth unprojects the tap with the depth and pose of the tapped frame, not the newest")
    func publisherDepth() throws {
        let history = FrameHistory(capacity: 4)
        let board = AnnotationBoard()
        let control = PublisherControl(board: board, placer: AnnotationPlacer(history: history))
        history.record(pose: Self.pose(1, eye: Vector3(0, 1.6, 3)))
        history.record(depth: ConstantDepth(metres: (Vector3(0, 1.6, 3)).length), frameID: 1)
        history.record(pose: Self.pose(2, eye: Vector3(3, 1.6, 0)))   // the camera has moved on
        let outcome = control.handle(annotate("publisherDepth", frame: 1), from: "e", role: .expert)
        #expect(outcome.reply == .ack(id: "q", annotationId: "a1"))
        let placed = try #require(board.all.first).position
        #expect(placed.distance(to: Vector3(0, 0, 0)) < 1e-4)   // the centre of frame 1 looks at the origin
    }

    @Test("publisherDepth errors: unknown frame, no depth, nothing under the tap")
    func publisherDepthErrors() {
        let history = FrameHistory(capacity: 2)
        let control = PublisherControl(board: AnnotationBoard(), placer: AnnotationPlacer(history: history))
        history.record(pose: Self.pose(5, eye: Vector3(0, 1.6, 3)))
        func code(_ text: String) -> ControlErrorCode? {
            if case .error(let e) = control.handle(text, from: "e", role: .expert).reply { return e.code }
            return nil
        }
        #expect(code(annotate("publisherDepth", frame: 5)) == .unsupported)      // no depth for this source
        history.record(depth: ConstantDepth(metres: nil), frameID: 5)
        #expect(code(annotate("publisherDepth", frame: 5)) == .invalidValue)     // sky under the tap
        history.record(pose: Self.pose(6, eye: Vector3(0, 1.6, 3)))
        history.record(pose: Self.pose(7, eye: Vector3(0, 1.6, 3)))
        #expect(code(annotate("publisherDepth", frame: 5)) == .notFound)         // forgotten (capacity 2)
    }

    @Test("auto: the publisher's depth where the frame has one, else the expert's point; the annotation says which; a tap on nothing is refused")
    func autoPlacement() throws {
        let history = FrameHistory(capacity: 4)
        let board = AnnotationBoard()
        let control = PublisherControl(board: board, placer: AnnotationPlacer(history: history))
        let eye = Vector3(0, 1.6, 3)
        history.record(pose: Self.pose(1, eye: eye))
        history.record(depth: ConstantDepth(metres: eye.length), frameID: 1)
        history.record(pose: Self.pose(2, eye: eye))   // no depth for this one
        // With depth: the expert's ground point (wrong on purpose) is ignored.
        let withDepth = ##"{"type":"annotate","id":"q1","placement":"auto","frameId":1,"tap":{"x":0.5,"y":0.5},"position":{"x":9,"y":0,"z":9}}"##
        #expect(control.handle(withDepth, from: "e", role: .expert).reply == .ack(id: "q1", annotationId: "a1"))
        // Without depth: the expert's point is used as it is.
        let without = ##"{"type":"annotate","id":"q2","placement":"auto","frameId":2,"tap":{"x":0.5,"y":0.5},"position":{"x":0.5,"y":0,"z":0.25}}"##
        #expect(control.handle(without, from: "e", role: .expert).reply == .ack(id: "q2", annotationId: "a2"))
        let placed = board.all
        #expect(placed.map(\.placement) == [.publisherDepth, .world])
        #expect(placed[0].position.distance(to: Vector3(0, 0, 0)) < 1e-4)
        #expect(placed[1].position == Vector3(0.5, 0, 0.25))
        // The list the experts get says how each was placed.
        let list = try ControlCodec.decodeReply(ControlCodec.encode(.annotations(placed)))
        #expect(list == .annotations(placed))
        // No depth and no point (the ray missed every plane): told, nothing stored.
        guard case .error(let e) = control.handle(annotate("auto", frame: 2), from: "e", role: .expert).reply else {
            Issue.record("a tap on nothing was accepted"); return
        }
        #expect(e.code == .invalidValue && e.message.contains("hits no surface"), "\(e.message)")
        #expect(board.all.count == 2)
    }

    @Test("screen placement uses the newest pose: right when the camera is still, wrong once it moved")
    func naiveScreen() throws {
        let history = FrameHistory()
        let board = AnnotationBoard()
        let control = PublisherControl(board: board, placer: AnnotationPlacer(history: history))
        #expect(control.handle(annotate("screen", frame: 1), from: "e", role: .expert).reply
                != .ack(id: "q", annotationId: "a1"))   // no pose yet
        history.record(pose: Self.pose(1, eye: Vector3(0, 1.6, 3)))
        #expect(control.handle(annotate("screen", frame: 1), from: "e", role: .expert).reply == .ack(id: "q", annotationId: "a1"))
        #expect(try #require(board.all.last).position.distance(to: .zero) < 1e-4)
        history.record(pose: Self.pose(2, eye: Vector3(3, 1.6, 0)))
        // The same tap on frame 1 now lands where frame 2's centre looks: still the origin
        // for a look-at camera, so tap off-centre to see the naive method drift.
        _ = control.handle(annotate("screen", frame: 1, x: 0.7, y: 0.7), from: "e", role: .expert)
        let naive = try #require(board.all.last).position
        let truth = try PlacementMode.groundPlane.place(NormalizedPoint(x: 0.7, y: 0.7), on: Self.pose(1, eye: Vector3(0, 1.6, 3)))
        #expect(naive.distance(to: truth) > 0.3)
    }

    @Test("--placement parses every mode and names what is wrong")
    func placementOption() throws {
        #expect(try PlacementOption.parse("ground") == .groundPlane)
        #expect(try PlacementOption.parse("depth:2.5") == .fixedDepth(2.5))
        #expect(try PlacementOption.parse("publisher") == .publisherDepth)
        #expect(try PlacementOption.parse("plane:0,2,0,1.5") == .planes([Plane(normal: Vector3(0, 1, 0), through: Vector3(0, 0.75, 0))]))
        for bad in ["", "depth:-1", "depth:x", "plane:0,0,0,1", "plane:1,2", "floor"] {
            #expect(throws: CommandError.self) { try PlacementOption.parse(bad) }
        }
    }
}

/// `voice`: an expert says it muted or unmuted; a viewer may not.
@Suite("the voice request")
struct VoiceRequestTests {
    @Test("an expert's voice request is acknowledged with its state; a viewer's is refused")
    func voiceRequest() {
        let control = PublisherControl(board: AnnotationBoard(), placer: AnnotationPlacer(history: FrameHistory()))
        let text = ControlCodec.encode(ControlEnvelope(id: "v1", request: .voice(muted: true)))
        let outcome = control.handle(text, from: "e1", role: .expert)
        #expect(outcome.reply == .ack(id: "v1", annotationId: nil) && outcome.voiceMuted == true, "\(outcome)")
        let refused = control.handle(text, from: "v", role: .viewer)
        guard case .error(let e) = refused.reply else { Issue.record("a viewer's voice request accepted"); return }
        #expect(e.code == .notAllowed && refused.voiceMuted == nil)
    }
}
