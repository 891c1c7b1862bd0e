import CameraControl
import Foundation
import PoseCastKit
import PoseMedia
import Publisher
import Subscriber
import Publisher
import RTCSession
import Signaling
import Synchronization
import SyntheticCamera
import TestSupport
import Testing

/// Seeds and the publisher's control rules for fuzzing the control channel.
enum ControlFuzz {
    /// Every request kind, as the real encoder writes it.
    static let seeds: [String] = {
        let requests: [ControlRequest] = [
            .annotate(AnnotationRequest(annotationId: "mine", kind: .label, position: Vector3(1, 2, 3), frameId: 7,
                                        tap: NormalizedPoint(x: 0.25, y: 0.75), label: "valve", color: "#ABCDEF")),
            .annotate(AnnotationRequest(kind: .arrow, position: Vector3(0.1, 0, -1.5), frameId: 42, tap: NormalizedPoint(x: 0.5, y: 0.5))),
            .annotate(AnnotationRequest(placement: .publisherDepth, position: nil, frameId: 3, tap: NormalizedPoint(x: 0.5, y: 0.6))),
            .annotate(AnnotationRequest(placement: .screen, position: nil, frameId: 4, tap: NormalizedPoint(x: 0.5, y: 0.9))),
            .removeAnnotation(annotationId: "a1"), .removeAnnotation(annotationId: "mine"), .clearAnnotations,
            .focus(point: NormalizedPoint(x: 0.3, y: 0.7), mode: .tapToLockFocus), .focus(point: NormalizedPoint(x: 0, y: 1), mode: .auto),
            .meter(MeterRequest(point: NormalizedPoint(x: 0.5, y: 0.5), lockDuration: 2.5, routines: [.exposure, .whiteBalance],
                                meteringMode: .spot, throwIfUnsupported: true)),
            .meter(MeterRequest()), .lock(routines: [.focus]), .unlock(routines: MeteringRoutine.allCases), .meteringMode(.spot),
        ]
        return requests.enumerated().map { ControlCodec.encode(ControlEnvelope(id: "r\($0.offset)", request: $0.element)) }
    }()

    /// Protocol words the seeds may lack, so type and enum fields get swapped for them.
    static let words = ["annotate", "removeAnnotation", "clearAnnotations", "focus", "meter", "lock", "unlock", "ack", "error",
                        "annotations", "sceneStatus", "world", "publisherDepth", "screen", "pin", "arrow", "label", "uniform",
                        "weighted", "tapToAutoFocus", "exposure", "whiteBalance", "id", "type", "position", "tap", "frameId"]

    /// The publisher's rules with a real annotation board, a frame history holding a
    /// few poses (so `screen` placement works) and, when `camera`, a real metering
    /// engine over the simulated camera.
    static func control(board: AnnotationBoard, camera: Bool) -> PublisherControl {
        let history = FrameHistory(capacity: 8)
        for id in UInt32(1)...4 {
            let eye = Vector3(0, 1.6, 3)
            history.record(pose: FramePose(frameID: id, captureTimeNanos: UInt64(id) * 33_000_000, position: eye,
                                           orientation: OrbitTrajectory.lookAt(eye: eye, target: .zero),
                                           intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3)))
        }
        let commands = camera ? CameraMeterCommands(meter: CameraMeter(backend: SimulatedCameraBackend(lens: LensControl()))) : nil
        return PublisherControl(board: board, placer: AnnotationPlacer(history: history), camera: commands)
    }

    /// Checks one outcome against what the codec alone says of the text; returns the
    /// rejection reason (nil: acknowledged) or a description of what is wrong.
    static func check(_ text: String, _ outcome: ControlOutcome, role: RoomRole) -> Result<String?, FuzzViolation> {
        // The reply must be a well-formed wire message that reads back as itself.
        let wire = ControlCodec.encode(outcome.reply)
        guard (try? ControlCodec.decodeReply(wire)) == outcome.reply else {
            return .failure(FuzzViolation("reply does not survive its own codec: \(wire.prefix(200))"))
        }
        let decoded: Result<ControlEnvelope, ControlError>
        do throws(ControlError) { decoded = .success(try ControlCodec.decodeRequest(text)) } catch { decoded = .failure(error) }
        switch (decoded, outcome.reply) {
        case (.failure(let expected), .error(let got)):
            guard got == expected, !outcome.annotationsChanged else {
                return .failure(FuzzViolation("codec says \(expected), publisher answered \(got)"))
            }
            return .success(got.code.rawValue)
        case (.success(let envelope), .ack(let id, _, _)):
            guard id == envelope.id, role == .expert else {
                return .failure(FuzzViolation("ack \(id) for request \(envelope.id) from a \(role.rawValue)"))
            }
            return .success(nil)
        case (.success(let envelope), .error(let got)):
            let semantic: Set<ControlErrorCode> = [.notAllowed, .unsupported, .notFound, .limitReached, .invalidValue, .missingField]
            guard got.id == envelope.id, semantic.contains(got.code), !outcome.annotationsChanged else {
                return .failure(FuzzViolation("a readable request \(envelope.id) was refused \(got)"))
            }
            return .success(got.code.rawValue)
        default:
            return .failure(FuzzViolation("unexpected reply \(outcome.reply) (decoded: \(decoded))"))
        }
    }
}

@Suite("control channel fuzz")
struct ControlFuzzTests {
    @Test("every generated or mutated request is answered with ack or a matching error; the publisher still works after")
    func fuzzPublisherControl() throws {
        let count = FuzzRun.caseCount(), seed = FuzzRun.seed
        let fuzzer = JSONTextFuzzer(seeds: ControlFuzz.seeds, extraWords: ControlFuzz.words, maxLength: 6000)
        let board = AnnotationBoard()
        let withCamera = ControlFuzz.control(board: board, camera: true)
        let withoutCamera = ControlFuzz.control(board: board, camera: false)
        var tally = FuzzTally(harness: "control", seed: seed)
        for index in FuzzRun.indices(count: count) {
            var rng = SplitMix64(seed: FuzzRun.caseSeed(seed, index))
            let fuzzCase = fuzzer.make(&rng)
            let role: RoomRole = rng.chance(0.1) ? .viewer : .expert
            let control = rng.chance(0.5) ? withCamera : withoutCamera
            let outcome = control.handle(fuzzCase.text, from: "fuzz-expert", role: role)
            switch ControlFuzz.check(fuzzCase.text, outcome, role: role) {
            case .success(nil): tally.accept(kind: fuzzCase.kind.rawValue)
            case .success(let reason?): tally.reject(reason, kind: fuzzCase.kind.rawValue)
            case .failure(let violation): tally.fail(case: index, violation.description, input: fuzzCase.text)
            }
            #expect(board.all.count <= AnnotationBoard.maxAnnotations)
        }
        print(tally.resultLine())
        #expect(tally.failed == 0, "\(tally.failures.joined(separator: "\n"))")
        #expect(tally.cases == FuzzRun.indices(count: count).count)
        if count >= 1000 { #expect(tally.accepted > 0 && tally.rejected > 0, "the generator reaches both outcomes") }

        // The publisher still works: clear, annotate, steer the camera.
        #expect(withCamera.handle(#"{"type":"clearAnnotations","id":"after-1"}"#, from: "e", role: .expert).reply
                == .ack(id: "after-1", annotationId: nil))
        let annotate = ControlCodec.encode(ControlEnvelope(id: "after-2", request: .annotate(AnnotationRequest(
            position: Vector3(0.5, 0, -1), frameId: 9, tap: NormalizedPoint(x: 0.5, y: 0.5), label: "after"))))
        let outcome = withoutCamera.handle(annotate, from: "e", role: .expert)
        guard case .ack(let id, let annotationId?, _) = outcome.reply else { Issue.record("annotate after the run: \(outcome.reply)"); return }
        #expect(id == "after-2" && outcome.annotationsChanged)
        #expect(board.all.map(\.id) == [annotationId] && board.all.first?.label == "after")
        #expect(withCamera.handle(#"{"type":"focus","id":"after-3","point":{"x":0.5,"y":0.5}}"#, from: "e", role: .expert).reply
                == .ack(id: "after-3", annotationId: nil))
    }

    @Test("a slice of the cases over a real WebRTC data channel: each gets its reply, in order, and the channel stays up")
    func fuzzOverDataChannel() async throws {
        let count = min(500, FuzzRun.caseCount()), seed = FuzzRun.seed
        let fuzzer = JSONTextFuzzer(seeds: ControlFuzz.seeds, extraWords: ControlFuzz.words, maxLength: 6000)
        // What the expert sends: fuzz texts (not empty and no NUL, which DataChannel.send
        // refuses, see below; at most 16 KB, under SCTP's message size), binary frames
        // and oversized frames.
        var messages: [DataChannelMessage] = []
        var index = 0
        while messages.count < count {
            var rng = SplitMix64(seed: FuzzRun.caseSeed(seed, index)); index += 1
            let text = fuzzer.make(&rng).text
            guard !text.isEmpty, !text.unicodeScalars.contains("\u{0}"), text.utf8.count <= 16_384 else { continue }
            messages.append(rng.chance(0.03) ? .binary(Array(text.utf8)) : .text(text))
        }
        messages += [.text(String(repeating: "x", count: ControlCodec.maxMessageBytes + 1)),
                     .binary([UInt8](repeating: 0x7B, count: 10_000)), .text(#"{"type":"clearAnnotations","id":"last"}"#)]
        let total = messages.count
        // The replies the publisher's rules give, computed on a twin with the same state.
        let twin = ControlFuzz.control(board: AnnotationBoard(), camera: false)
        let expected = messages.map { twin.handle($0, from: "expert", role: .expert).reply }

        var pubConfig = PublisherMediaConfig()
        pubConfig.width = 160; pubConfig.height = 120; pubConfig.fps = 10
        let generator = OrbitTrajectory(intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
        let publisher = try PublisherMedia(config: pubConfig, poseSource: { id, t in
            generator.pose(at: Double(id) / 10, frameID: id, captureTimeNanos: t)
        })
        let subscriber = try SubscriberMedia(config: SubscriberMediaConfig())
        try await publisher.start()
        try subscriber.start()
        let peer = try await publisher.addPeer(name: "fuzz-expert")
        let link = LoopbackLink(publisher: peer, subscriber: subscriber)
        defer { link.cancel(); subscriber.stop(); publisher.removePeer(peer); publisher.stop() }
        let publisherChannel = try await link.negotiate()

        // The publisher side, as PublisherNode answers: every message through the rules, reply on the channel.
        let control = ControlFuzz.control(board: AnnotationBoard(), camera: false)
        let publisherSide = Mutex((received: 0, problems: [String]()))
        let answering = Task {
            for await event in link.publisherEvents {
                switch event {
                case .dataChannelMessage(_, let message):
                    publisherSide.withLock { $0.received += 1 }
                    do throws(RTCError) {
                        try publisherChannel.send(ControlCodec.encode(control.handle(message, from: "expert", role: .expert).reply))
                    } catch {
                        publisherSide.withLock { $0.problems.append("reply not sent: \(error)") }
                    }
                case .dataChannelError(_, let message): publisherSide.withLock { $0.problems.append("channel error: \(message)") }
                case .dataChannelClosed: publisherSide.withLock { $0.problems.append("channel closed") }
                case .pipelineError(let error): publisherSide.withLock { $0.problems.append("pipeline: \(error)") }
                default: break
                }
            }
        }
        defer { answering.cancel() }
        let expertChannel: DataChannel = try await withTimeout(15, "the control channel to open on the expert's side") {
            for await event in link.subscriberEvents {
                if case .dataChannel(let channel) = event { return channel }
                if case .pipelineError(let error) = event { throw error }
            }
            throw RTCError.closed("subscriber events")
        }
        try await waitUntil(10, "both ends open") { expertChannel.readyState == .open && publisherChannel.readyState == .open }

        let replies = Mutex<[String]>([])
        let collecting = Task {
            for await event in link.subscriberEvents {
                if case .dataChannelMessage(_, .text(let text)) = event { replies.withLock { $0.append(text) } }
            }
        }
        defer { collecting.cancel() }
        // Texts GStreamer 1.22 cannot carry are refused before they reach it (an empty one
        // would stall or close the channel); the channel stays open for what follows.
        #expect(throws: RTCError.self) { try expertChannel.send("") }
        #expect(throws: RTCError.self) { try expertChannel.send("a\u{0}b") }
        for (i, message) in messages.enumerated() {
            do throws(RTCError) {
                switch message {
                case .text(let text): try expertChannel.send(text)
                case .binary(let bytes): try expertChannel.send(bytes)
                }
            } catch {
                let side = publisherSide.withLock { $0 }, count = replies.withLock { $0.count }
                Issue.record("message \(i) (\(message)) not sent: \(error); \(count) replies so far, publisher side \(side)")
                throw error
            }
        }
        try await waitUntil(60, "\(total) replies", progress: {
            "\(replies.withLock { $0.count }) replies; publisher received \(publisherSide.withLock { $0.received }), "
                + "problems \(publisherSide.withLock { $0.problems.prefix(5) })"
        }) {
            replies.withLock { $0.count } >= total
        }
        let got = replies.withLock { $0 }
        #expect(got.count == messages.count, "one reply per message, no more")
        var mismatches = 0
        for (i, (text, want)) in zip(got, expected).enumerated() {
            let reply = try? ControlCodec.decodeReply(text)
            if reply != want {
                mismatches += 1
                if mismatches <= 5 { Issue.record("message \(i): got \(text.prefix(200)), expected \(want)") }
            }
        }
        #expect(mismatches == 0)
        #expect(expertChannel.readyState == .open && publisherChannel.readyState == .open, "the channel survived")
        print("control fuzz over a data channel: \(messages.count) messages, \(got.count) replies, \(mismatches) mismatches")
    }

    @Test("oversized text and binary frames are answered, not parsed")
    func oversizedFrames() {
        let control = ControlFuzz.control(board: AnnotationBoard(), camera: false)
        for size in [ControlCodec.maxMessageBytes + 1, 65_536, 1 << 20] {
            let text = #"{"type":"clearAnnotations","id":"big","pad":""# + String(repeating: "x", count: size) + #""}"#
            guard case .error(let e) = control.handle(.text(text), from: "e", role: .expert).reply else { Issue.record("accepted \(size)"); continue }
            #expect(e.code == .tooLarge && e.id == nil && e.message.contains("\(text.utf8.count) bytes"))
            guard case .error(let b) = control.handle(.binary([UInt8](repeating: 0x7B, count: size)), from: "e", role: .expert).reply else {
                Issue.record("binary accepted"); continue
            }
            #expect(b.code == .tooLarge && b.message.contains("\(size) bytes"))
        }
        guard case .error(let small) = control.handle(.binary([1, 2, 3]), from: "e", role: .expert).reply else { Issue.record("binary accepted"); return }
        #expect(small.code == .malformed)
        // Exactly at the limit is read (and here acknowledged).
        let prefix = #"{"type":"clearAnnotations","id":"edge","pad":""#
        let edge = prefix + String(repeating: "x", count: ControlCodec.maxMessageBytes - prefix.utf8.count - 2) + #""}"#
        #expect(edge.utf8.count == ControlCodec.maxMessageBytes)
        #expect(control.handle(.text(edge), from: "e", role: .expert).reply == .ack(id: "edge", annotationId: nil))
    }
}
