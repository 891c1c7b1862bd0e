import Foundation
import PoseCastKit
import Publisher
import Signaling
import Testing
import VideoEffects

/// The framing requests on the control channel, the background the expert may not touch,
/// and the effect options' grammar.
@Suite("effect control: zoom, follow, framing and background requests")
struct EffectControlTests {
    /// A chain without models (no assets needed): zoom and follow only move the crop.
    static func chain(_ control: FramingControl) -> EffectChain {
        var c = EffectChainConfiguration(captureWidth: 1280, captureHeight: 720, outputWidth: 640, outputHeight: 480,
                                         assets: EffectAssets(directory: "/nonexistent"))
        c.framingControl = control
        return EffectChain(configuration: c)
    }

    func reply(_ text: String, control: PublisherControl, role: RoomRole = .expert) -> ControlReply {
        control.handle(text, from: "expert-1", role: role).reply
    }

    @Test("the new requests round-trip through the codec and bad values are refused precisely")
    func codec() throws {
        let requests: [ControlRequest] = [
            .zoom(point: NormalizedPoint(x: 0.25, y: 0.5), factor: 2, frameId: 17), .zoom(point: NormalizedPoint(x: 0.5, y: 0.5), factor: 1, frameId: nil),
            .follow(annotationId: "a1", factor: 3), .follow(annotationId: nil, factor: 1), .framing(subject: "face"), .background,
        ]
        for (i, request) in requests.enumerated() {
            let envelope = ControlEnvelope(id: "r\(i)", request: request)
            #expect(try ControlCodec.decodeRequest(ControlCodec.encode(envelope)) == envelope)
        }
        for (text, code) in [(#"{"type":"zoom","id":"z","factor":5}"#, ControlErrorCode.invalidValue),
                             (#"{"type":"zoom","id":"z","factor":0.5}"#, .invalidValue),
                             (#"{"type":"zoom","id":"z","point":{"x":1.5,"y":0.5}}"#, .invalidValue),
                             (#"{"type":"framing","id":"f","subject":"cat"}"#, .invalidValue),
                             (#"{"type":"framing","id":"f"}"#, .missingField)] {
            #expect(throws: ControlError.self) { try ControlCodec.decodeRequest(text) }
            do { _ = try ControlCodec.decodeRequest(text) } catch { #expect(error.code == code, "\(text): \(error)") }
        }
    }

    @Test("an expert zooms, follows and switches framing in the cooperative mode; the crop follows")
    func cooperative() throws {
        let board = AnnotationBoard()
        let effects = Self.chain(.cooperative)
        let control = PublisherControl(board: board, placer: AnnotationPlacer(history: FrameHistory()), effects: effects)
        #expect(reply(#"{"type":"zoom","id":"z1","point":{"x":0.5,"y":0.5},"factor":2}"#, control: control) == .ack(id: "z1", annotationId: nil))
        #expect(effects.status.expertRequest == "zoom")
        // Follow needs an annotation that exists.
        guard case .error(let missing) = reply(#"{"type":"follow","id":"f1","annotationId":"a9"}"#, control: control) else {
            Issue.record("following an unknown annotation must be refused"); return
        }
        #expect(missing.code == .notFound && missing.id == "f1")
        let id = try board.add(AnnotationRequest(position: Vector3(0, 0, -2), frameId: 1, tap: NormalizedPoint(x: 0.5, y: 0.5)),
                               at: Vector3(0, 0, -2), author: "expert-1")
        #expect(reply(#"{"type":"follow","id":"f2","annotationId":"\#(id)","factor":2}"#, control: control) == .ack(id: "f2", annotationId: id))
        #expect(effects.followedAnnotation == id && effects.status.expertRequest == "follow")
        #expect(reply(#"{"type":"follow","id":"f3","annotationId":null}"#, control: control) == .ack(id: "f3", annotationId: nil))
        #expect(effects.followedAnnotation == nil)
        // Framing off needs no model; face needs one: refused as unsupported, naming the file.
        #expect(reply(#"{"type":"framing","id":"g1","subject":"off"}"#, control: control) == .ack(id: "g1", annotationId: nil))
        guard case .error(let noModel) = reply(#"{"type":"framing","id":"g2","subject":"face"}"#, control: control) else {
            Issue.record("face framing without the model must be refused"); return
        }
        #expect(noModel.code == .unsupported && noModel.message.contains("/nonexistent/libLiteRt.so")
                && noModel.message.contains("bash scripts/effects-setup"), "\(noModel)")
    }

    @Test("the framing control modes: user refuses experts, app refuses everyone; nobody remote touches the background; viewers ask nothing")
    func modes() throws {
        for mode in [FramingControl.user, .app] {
            let effects = Self.chain(mode)
            let control = PublisherControl(board: AnnotationBoard(), placer: AnnotationPlacer(history: FrameHistory()), effects: effects)
            guard case .error(let e) = reply(#"{"type":"zoom","id":"z","factor":2}"#, control: control) else {
                Issue.record("\(mode): an expert's zoom must be refused"); continue
            }
            #expect(e.code == .notAllowed && e.message.contains(mode.rawValue), "\(e)")
            #expect(effects.status.expertRequest == nil)
            // The field worker (stdin) may in the user mode, nobody in the app mode.
            let local = Result { () throws(EffectCommandError) in try effects.setZoom(at: NormalizedPoint(x: 0.5, y: 0.5), factor: 2, frameID: nil) }
            #expect((try? local.get()) != nil ? mode == .user : mode == .app)
        }
        let control = PublisherControl(board: AnnotationBoard(), placer: AnnotationPlacer(history: FrameHistory()), effects: Self.chain(.cooperative))
        guard case .error(let bg) = reply(#"{"type":"background","id":"b"}"#, control: control) else {
            Issue.record("an expert's background request must be refused"); return
        }
        #expect(bg.code == .notAllowed && bg.message.contains("field worker"))
        guard case .error(let viewer) = reply(#"{"type":"zoom","id":"v","factor":2}"#, control: control, role: .viewer) else {
            Issue.record("a viewer's zoom must be refused"); return
        }
        #expect(viewer.code == .notAllowed)
    }

    @Test("background specs parse, and bad ones say what is accepted")
    func backgroundSpecs() throws {
        #expect(try BackgroundSetting(spec: "off") == .off)
        #expect(try BackgroundSetting(spec: "blur") == BackgroundSetting(fill: .blur(radius: 10), depthMetres: nil))
        #expect(try BackgroundSetting(spec: "blur=4,depth=2.5") == BackgroundSetting(fill: .blur(radius: 4), depthMetres: 2.5))
        #expect(try BackgroundSetting(spec: "image=/tmp/x.png") == BackgroundSetting(fill: .image(path: "/tmp/x.png"), depthMetres: nil))
        for bad in ["", "blur=0", "blur=99", "depth=2", "image=", "blur,depth=-1", "sepia"] {
            #expect(throws: EffectCommandError.self, "\(bad)") { try BackgroundSetting(spec: bad) }
        }
        // A picture that is not there: the effect stays off and says which file.
        let effects = Self.chain(.cooperative)
        do {
            try effects.setBackground(BackgroundSetting(fill: .image(path: "/nonexistent/bg.png"), depthMetres: nil))
            Issue.record("a missing picture must be refused")
        } catch { #expect(error.message.contains("/nonexistent/bg.png")) }
        #expect(effects.status.background == "off")
        // A depth background needs no model, but a source with depth: this chain has none.
        do {
            try effects.setBackground(BackgroundSetting(fill: .blur(radius: 10), depthMetres: 3))
            Issue.record("a depth background without depth must be refused")
        } catch { #expect(error.kind == .unavailable && error.message.contains("--source synthetic")) }
        #expect(effects.status.background == "off")
    }
}
