import Foundation

// The control channel (a reliable, ordered WebRTC data channel labelled "control"):
// JSON objects with a `type` and, for requests, an `id`. Every request gets `ack`
// or `error {id, code, message}`. See docs/CONTROL_CHANNEL.md.

/// Focus modes of `focus` (as the 100ms and DeepMedia references name them).
public enum FocusMode: String, Sendable, Hashable, Codable, CaseIterable {
    case auto, tapToAutoFocus, tapToLockFocus
}

/// What a `meter`, `lock` or `unlock` acts on.
public enum MeteringRoutine: String, Sendable, Hashable, Codable, CaseIterable {
    case exposure, focus, whiteBalance
}

public enum MeteringMode: String, Sendable, Hashable, Codable, CaseIterable {
    case uniform, spot, weighted
}

/// Who turns an `annotate` tap into a world position.
public enum AnnotationPlacement: String, Sendable, Hashable, Codable, CaseIterable {
    /// The expert did (from the pose of the frame it tapped) and sends `position`.
    case world
    /// The publisher does, from its own depth of the tapped frame (`frameId`) at `tap`.
    case publisherDepth
    /// The publisher's depth of the tapped frame where its source has depth; otherwise
    /// `position`, the expert's own (from the frame's pose on its placement planes; may be
    /// left out when the tap hits none of them). The annotation says which was used.
    case auto
    /// Naive screen coordinates: the publisher unprojects `tap` with the pose of its newest
    /// frame on its placement planes. Wrong as soon as the camera moved while the message
    /// travelled; kept as the baseline the benchmark compares against.
    case screen
}

/// A new annotation as the expert asks for it.
public struct AnnotationRequest: Sendable, Hashable {
    public var annotationId: String?
    public var kind: AnnotationKind
    public var placement: AnnotationPlacement
    /// Required with `.world` placement, absent otherwise.
    public var position: Vector3?
    public var frameId: UInt32
    public var tap: NormalizedPoint
    public var label: String
    public var color: String
    public init(annotationId: String? = nil, kind: AnnotationKind = .pin, placement: AnnotationPlacement = .world,
                position: Vector3?, frameId: UInt32, tap: NormalizedPoint, label: String = "", color: String = "#FF3B30") {
        self.annotationId = annotationId; self.kind = kind; self.placement = placement; self.position = position
        self.frameId = frameId; self.tap = tap; self.label = label; self.color = color
    }
}

public struct MeterRequest: Sendable, Hashable {
    public var point: NormalizedPoint?
    /// Seconds to hold the result; nil, ≤ 0 or infinite: forever.
    public var lockDuration: Double?
    public var routines: [MeteringRoutine]
    public var meteringMode: MeteringMode?
    public var throwIfUnsupported: Bool
    public init(point: NormalizedPoint? = nil, lockDuration: Double? = nil, routines: [MeteringRoutine] = MeteringRoutine.allCases,
                meteringMode: MeteringMode? = nil, throwIfUnsupported: Bool = false) {
        self.point = point; self.lockDuration = lockDuration; self.routines = routines
        self.meteringMode = meteringMode; self.throwIfUnsupported = throwIfUnsupported
    }
}

/// Expert → publisher.
public enum ControlRequest: Sendable, Hashable {
    case annotate(AnnotationRequest)
    case removeAnnotation(annotationId: String)
    case clearAnnotations
    case focus(point: NormalizedPoint, mode: FocusMode)
    case meter(MeterRequest)
    case lock(routines: [MeteringRoutine])
    case unlock(routines: [MeteringRoutine])
    /// Digital zoom ×`factor` (1…4; 1 hands the view back to the framing) on `point` of
    /// frame `frameId` as the expert saw it (the latest frame when nil).
    case zoom(point: NormalizedPoint, factor: Double, frameId: UInt32?)
    /// Keep an annotation's 3D anchor in view at ×`factor`; nil stops following.
    case follow(annotationId: String?, factor: Double)
    /// Automatic framing: "off", "face" or "person".
    case framing(subject: String)
    /// The virtual background: only the field worker sets it; always refused.
    case background
    /// The sender muted or unmuted its microphone (the others see it in `voices`).
    case voice(muted: Bool)

    public var type: String {
        switch self {
        case .annotate: "annotate"
        case .removeAnnotation: "removeAnnotation"
        case .clearAnnotations: "clearAnnotations"
        case .focus: "focus"
        case .meter: "meter"
        case .lock: "lock"
        case .unlock: "unlock"
        case .zoom: "zoom"
        case .follow: "follow"
        case .framing: "framing"
        case .background: "background"
        case .voice: "voice"
        }
    }
}

/// A request with its id, as read off the channel.
public struct ControlEnvelope: Sendable, Hashable {
    public var id: String
    public var request: ControlRequest
    public init(id: String, request: ControlRequest) { self.id = id; self.request = request }
}

/// Machine-readable reason of an `error` reply.
public enum ControlErrorCode: String, Sendable, Hashable, Codable, CaseIterable {
    case malformed, unknownType, missingField, invalidValue, tooLarge
    /// The sender's role may not do this (a viewer steering the camera).
    case notAllowed
    /// Not available on this publisher (yet, or on this camera).
    case unsupported
    /// An annotation id that does not exist.
    case notFound
    /// Too many annotations.
    case limitReached
    /// Too many requests in too short a time on this session (`ControlRateLimiter`):
    /// the request was not executed; send it again later.
    case rateLimited
}

/// A refused request: what went wrong, for the reply and for logs.
public struct ControlError: Error, Sendable, Hashable, CustomStringConvertible {
    public var id: String?
    public var code: ControlErrorCode
    public var message: String
    public init(id: String?, code: ControlErrorCode, message: String) { self.id = id; self.code = code; self.message = message }
    public var description: String { "\(code.rawValue): \(message)" }
}

/// Publisher → expert.
public enum ControlReply: Sendable, Hashable {
    /// `skipped`: routines a `meter` left out as unsupported (`throwIfUnsupported` false).
    case ack(id: String, annotationId: String?, skipped: [MeteringRoutine] = [])
    case error(ControlError)
    /// The full list, on join and after every change.
    case annotations([Annotation])
    /// What the camera's metering routines are doing, streamed while they work.
    case sceneStatus(SceneStatus)
    /// Who is in the conversation and who is muted: on join and after every change.
    case voices([VoiceParticipant])
}

/// One voice in the conversation: the field (`id` "field", role "publisher") or a
/// session's consumer (its peer id and room role).
public struct VoiceParticipant: Sendable, Hashable {
    public var id: String
    public var role: String
    public var muted: Bool
    /// False for a viewer where viewers only listen.
    public var mayTalk: Bool
    public init(id: String, role: String, muted: Bool, mayTalk: Bool = true) {
        self.id = id; self.role = role; self.muted = muted; self.mayTalk = mayTalk
    }
}

/// Reading and writing control messages, strictly.
public enum ControlCodec {
    public static let maxMessageBytes = 4096
    public static let maxLabelCharacters = 64
    public static let maxIdCharacters = 64
    /// The largest digital zoom an expert may ask for.
    public static let maxZoom = 4.0
    /// Positions further than this from the world origin are refused (metres).
    public static let maxCoordinate: Float = 10_000

    // MARK: requests

    public static func decodeRequest(_ text: String) throws(ControlError) -> ControlEnvelope {
        guard text.utf8.count <= maxMessageBytes else {
            throw ControlError(id: nil, code: .tooLarge, message: "message of \(text.utf8.count) bytes exceeds \(maxMessageBytes)")
        }
        let object = try jsonObject(text)
        let id: String
        switch object["id"] {
        case let s as String where !s.isEmpty && s.count <= maxIdCharacters: id = s
        case nil: throw ControlError(id: nil, code: .missingField, message: "missing field \"id\"")
        default: throw ControlError(id: nil, code: .invalidValue, message: "\"id\" must be a string of 1–\(maxIdCharacters) characters")
        }
        let fields = Fields(object: object, id: id)
        let type = try fields.string("type")
        let request: ControlRequest
        switch type {
        case "annotate":
            let placement = try fields.optionalEnum("placement", AnnotationPlacement.self) ?? .world
            let position: Vector3?
            if placement == .world {
                position = try fields.vector("position")
            } else if placement == .auto {
                position = object["position"] == nil ? nil : try fields.vector("position")
            } else {
                guard object["position"] == nil else {
                    throw ControlError(id: id, code: .invalidValue,
                                       message: "\"position\" must be left out with placement \"\(placement.rawValue)\": the publisher places it")
                }
                position = nil
            }
            request = .annotate(AnnotationRequest(
                annotationId: try fields.optionalString("annotationId", maxCount: maxIdCharacters),
                kind: try fields.optionalEnum("kind", AnnotationKind.self) ?? .pin,
                placement: placement,
                position: position,
                frameId: try fields.uint32("frameId"),
                tap: try fields.point("tap"),
                label: try fields.optionalString("label", maxCount: maxLabelCharacters) ?? "",
                color: try fields.color("color") ?? "#FF3B30"))
        case "removeAnnotation":
            request = .removeAnnotation(annotationId: try fields.string("annotationId"))
        case "clearAnnotations":
            request = .clearAnnotations
        case "focus":
            request = .focus(point: try fields.point("point"), mode: try fields.optionalEnum("mode", FocusMode.self) ?? .tapToAutoFocus)
        case "meter":
            let duration = try fields.optionalNumber("lockDuration", allowInfinite: true)
            request = .meter(MeterRequest(
                point: object["point"] == nil ? nil : try fields.point("point"),
                lockDuration: duration,
                routines: try fields.routines("routines") ?? MeteringRoutine.allCases,
                meteringMode: try fields.optionalEnum("meteringMode", MeteringMode.self),
                throwIfUnsupported: try fields.optionalBool("throwIfUnsupported") ?? false))
        case "lock":
            request = .lock(routines: try fields.routines("routines") ?? MeteringRoutine.allCases)
        case "unlock":
            request = .unlock(routines: try fields.routines("routines") ?? MeteringRoutine.allCases)
        case "zoom":
            let factor = try fields.optionalNumber("factor") ?? 2
            guard (1...maxZoom).contains(factor) else {
                throw ControlError(id: id, code: .invalidValue, message: "\"factor\" must be 1…\(maxZoom), got \(factor)")
            }
            request = .zoom(point: object["point"] == nil ? NormalizedPoint(x: 0.5, y: 0.5) : try fields.point("point"), factor: factor,
                            frameId: object["frameId"] == nil ? nil : try fields.uint32("frameId"))
        case "follow":
            let factor = try fields.optionalNumber("factor") ?? 2
            guard (1...maxZoom).contains(factor) else {
                throw ControlError(id: id, code: .invalidValue, message: "\"factor\" must be 1…\(maxZoom), got \(factor)")
            }
            request = .follow(annotationId: object["annotationId"] is NSNull ? nil : try fields.optionalString("annotationId", maxCount: maxIdCharacters),
                              factor: factor)
        case "framing":
            let subject = try fields.string("subject")
            guard ["off", "face", "person"].contains(subject) else {
                throw ControlError(id: id, code: .invalidValue, message: "\"subject\" must be off, face or person, got \"\(subject)\"")
            }
            request = .framing(subject: subject)
        case "background":
            request = .background
        case "voice":
            guard let muted = try fields.optionalBool("muted") else {
                throw ControlError(id: id, code: .missingField, message: "missing field \"muted\"")
            }
            request = .voice(muted: muted)
        default:
            throw ControlError(id: id, code: .unknownType, message: "unknown request type \"\(type)\"")
        }
        return ControlEnvelope(id: id, request: request)
    }

    public static func encode(_ envelope: ControlEnvelope) -> String {
        var o: [String: Any] = ["type": envelope.request.type, "id": envelope.id]
        switch envelope.request {
        case .annotate(let a):
            o["annotationId"] = a.annotationId
            o["kind"] = a.kind.rawValue
            if a.placement != .world { o["placement"] = a.placement.rawValue }
            o["position"] = a.position.map(vector)
            o["frameId"] = a.frameId
            o["tap"] = point(a.tap)
            o["label"] = a.label
            o["color"] = a.color
        case .removeAnnotation(let annotationId): o["annotationId"] = annotationId
        case .clearAnnotations: break
        case let .focus(p, mode): o["point"] = point(p); o["mode"] = mode.rawValue
        case .meter(let m):
            o["point"] = m.point.map(point)
            if let d = m.lockDuration, d.isFinite { o["lockDuration"] = d }
            o["routines"] = m.routines.map(\.rawValue)
            o["meteringMode"] = m.meteringMode?.rawValue
            o["throwIfUnsupported"] = m.throwIfUnsupported
        case .lock(let r), .unlock(let r): o["routines"] = r.map(\.rawValue)
        case let .zoom(p, factor, frameId): o["point"] = point(p); o["factor"] = factor; o["frameId"] = frameId
        case let .follow(annotationId, factor): o["annotationId"] = annotationId ?? NSNull(); o["factor"] = factor
        case .framing(let subject): o["subject"] = subject
        case .background: break
        case .voice(let muted): o["muted"] = muted
        }
        return serialize(o)
    }

    // MARK: replies

    public static func encode(_ reply: ControlReply) -> String {
        switch reply {
        case let .ack(id, annotationId, skipped):
            var o: [String: Any] = ["type": "ack", "id": id]
            o["annotationId"] = annotationId
            if !skipped.isEmpty { o["skipped"] = skipped.map(\.rawValue) }
            return serialize(o)
        case .error(let e):
            var o: [String: Any] = ["type": "error", "code": e.code.rawValue, "message": e.message]
            o["id"] = e.id
            return serialize(o)
        case .annotations(let list):
            return serialize(["type": "annotations", "annotations": list.map { a -> [String: Any] in
                ["id": a.id, "kind": a.kind.rawValue, "position": vector(a.position), "frameId": a.frameId,
                 "tap": point(a.tap), "label": a.label, "color": a.color, "author": a.author, "placement": a.placement.rawValue]
            }])
        case .sceneStatus(let st):
            func routine(_ r: RoutineStatus) -> [String: Any] {
                var o: [String: Any] = ["state": r.state.rawValue]
                o["measure"] = r.measure.flatMap { $0.isFinite ? $0 : nil }
                return o
            }
            var values: [String: Any] = [:]
            values["lensPosition"] = st.lensPosition
            values["exposureMs"] = st.exposureMs
            values["gain"] = st.gain
            values["whiteBalanceKelvin"] = st.whiteBalanceKelvin
            var o: [String: Any] = [
                "type": "sceneStatus", "frameId": st.frameId, "focusMode": st.focusMode.rawValue,
                "meteringMode": st.meteringMode.rawValue,
                "region": ["x": Double(st.region.x), "y": Double(st.region.y),
                           "width": Double(st.region.width), "height": Double(st.region.height)],
                "routines": ["focus": routine(st.focus), "exposure": routine(st.exposure), "whiteBalance": routine(st.whiteBalance)],
                "values": values,
            ]
            o["lockRemaining"] = st.lockRemaining.flatMap { $0.isFinite ? $0 : nil }
            if let e = st.effects {
                var background: [String: Any] = ["mode": e.background, "segmentationFps": e.segmentationFPS,
                                                 "msPerFrame": (e.backgroundMs * 100).rounded() / 100]
                background["source"] = e.backgroundSource
                var framing: [String: Any] = ["subject": e.framing, "control": e.framingControl, "zoom": (e.zoom * 1000).rounded() / 1000,
                                              "msPerFrame": (e.framingMs * 100).rounded() / 100]
                framing["request"] = e.request
                o["effects"] = ["background": background, "framing": framing]
            }
            return serialize(o)
        case .voices(let list):
            return serialize(["type": "voices", "participants": list.map { p -> [String: Any] in
                ["id": p.id, "role": p.role, "muted": p.muted, "mayTalk": p.mayTalk]
            }])
        }
    }

    public static func decodeReply(_ text: String) throws(ControlError) -> ControlReply {
        let object = try jsonObject(text)
        let fields = Fields(object: object, id: object["id"] as? String)
        switch try fields.string("type") {
        case "ack": return .ack(id: try fields.string("id"), annotationId: try fields.optionalString("annotationId", maxCount: maxIdCharacters),
                                skipped: try fields.routines("skipped") ?? [])
        case "error":
            return .error(ControlError(id: object["id"] as? String,
                                       code: try fields.optionalEnum("code", ControlErrorCode.self) ?? .malformed,
                                       message: try fields.string("message")))
        case "annotations":
            guard let list = object["annotations"] as? [[String: Any]] else {
                throw ControlError(id: nil, code: .invalidValue, message: "\"annotations\" must be an array of objects")
            }
            return .annotations(try list.map { item throws(ControlError) in
                let f = Fields(object: item, id: nil)
                return Annotation(id: try f.string("id"), kind: try f.optionalEnum("kind", AnnotationKind.self) ?? .pin,
                                  position: try f.vector("position"), frameId: try f.uint32("frameId"), tap: try f.point("tap"),
                                  label: try f.optionalString("label", maxCount: maxLabelCharacters) ?? "",
                                  color: try f.color("color") ?? "#FF3B30", author: try f.optionalString("author", maxCount: 256) ?? "",
                                  placement: try f.optionalEnum("placement", AnnotationPlacement.self) ?? .world)
            })
        case "sceneStatus":
            return .sceneStatus(try sceneStatus(object))
        case "voices":
            guard let list = object["participants"] as? [[String: Any]] else {
                throw ControlError(id: nil, code: .invalidValue, message: "\"participants\" must be an array of objects")
            }
            return .voices(try list.map { item throws(ControlError) in
                let f = Fields(object: item, id: nil)
                return VoiceParticipant(id: try f.string("id"), role: try f.string("role"),
                                        muted: try f.optionalBool("muted") ?? false, mayTalk: try f.optionalBool("mayTalk") ?? true)
            })
        case let other:
            throw ControlError(id: nil, code: .unknownType, message: "unknown reply type \"\(other)\"")
        }
    }

    private static func sceneStatus(_ object: [String: Any]) throws(ControlError) -> SceneStatus {
        let f = Fields(object: object, id: nil)
        guard let routines = object["routines"] as? [String: Any], let values = object["values"] as? [String: Any],
              let region = object["region"] as? [String: Any] else {
            throw ControlError(id: nil, code: .missingField, message: "sceneStatus needs \"routines\", \"values\" and \"region\" objects")
        }
        func routine(_ key: String) throws(ControlError) -> RoutineStatus {
            guard let r = routines[key] as? [String: Any] else {
                throw ControlError(id: nil, code: .missingField, message: "missing field \"routines.\(key)\"")
            }
            let rf = Fields(object: r, id: nil)
            guard let state = try rf.optionalEnum("state", RoutineState.self) else {
                throw ControlError(id: nil, code: .missingField, message: "missing field \"routines.\(key).state\"")
            }
            return RoutineStatus(state: state, measure: try rf.optionalNumber("measure"))
        }
        let vf = Fields(object: values, id: nil), rf = Fields(object: region, id: nil)
        func unit(_ key: String) throws(ControlError) -> Float {
            guard let v = try rf.optionalNumber(key), (0...1).contains(v) else {
                throw ControlError(id: nil, code: .invalidValue, message: "\"region.\(key)\" must be a number in 0…1")
            }
            return Float(v)
        }
        guard let focusMode = try f.optionalEnum("focusMode", FocusMode.self),
              let meteringMode = try f.optionalEnum("meteringMode", MeteringMode.self) else {
            throw ControlError(id: nil, code: .missingField, message: "sceneStatus needs \"focusMode\" and \"meteringMode\"")
        }
        var status = SceneStatus(
            focus: try routine("focus"), exposure: try routine("exposure"), whiteBalance: try routine("whiteBalance"),
            focusMode: focusMode, meteringMode: meteringMode,
            region: NormalizedRect(x: try unit("x"), y: try unit("y"), width: try unit("width"), height: try unit("height")),
            lensPosition: try vf.optionalNumber("lensPosition"), exposureMs: try vf.optionalNumber("exposureMs"),
            gain: try vf.optionalNumber("gain"), whiteBalanceKelvin: try vf.optionalNumber("whiteBalanceKelvin"),
            lockRemaining: try f.optionalNumber("lockRemaining"), frameId: try f.uint32("frameId"))
        if let effects = object["effects"] as? [String: Any] {
            guard let b = effects["background"] as? [String: Any], let fr = effects["framing"] as? [String: Any] else {
                throw ControlError(id: nil, code: .invalidValue, message: "sceneStatus \"effects\" needs \"background\" and \"framing\" objects")
            }
            let bf = Fields(object: b, id: nil), ff = Fields(object: fr, id: nil)
            status.effects = EffectsSummary(
                background: try bf.string("mode"), backgroundSource: try bf.optionalString("source", maxCount: 16),
                segmentationFPS: try bf.optionalNumber("segmentationFps") ?? 0, backgroundMs: try bf.optionalNumber("msPerFrame") ?? 0,
                framing: try ff.string("subject"), framingControl: try ff.optionalString("control", maxCount: 16) ?? "cooperative",
                framingMs: try ff.optionalNumber("msPerFrame") ?? 0, zoom: try ff.optionalNumber("zoom") ?? 1,
                request: try ff.optionalString("request", maxCount: 16))
        }
        return status
    }

    // MARK: helpers

    private static func jsonObject(_ text: String) throws(ControlError) -> [String: Any] {
        let parsed: Any
        do { parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) } catch {
            throw ControlError(id: nil, code: .malformed, message: "not valid JSON")
        }
        guard let object = parsed as? [String: Any] else {
            throw ControlError(id: nil, code: .malformed, message: "expected a JSON object")
        }
        return object
    }

    private static func vector(_ v: Vector3) -> [String: Any] { ["x": Double(v.x), "y": Double(v.y), "z": Double(v.z)] }
    private static func point(_ p: NormalizedPoint) -> [String: Any] { ["x": Double(p.x), "y": Double(p.y)] }

    private static func serialize(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return #"{"code":"malformed","message":"reply could not be encoded","type":"error"}"#
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Typed, strict access to the fields of one JSON object; every failure names the field.
private struct Fields {
    let object: [String: Any]
    let id: String?

    func fail(_ code: ControlErrorCode, _ message: String) -> ControlError { ControlError(id: id, code: code, message: message) }

    func string(_ key: String) throws(ControlError) -> String {
        guard let value = object[key] else { throw fail(.missingField, "missing field \"\(key)\"") }
        guard let s = value as? String, !s.isEmpty else { throw fail(.invalidValue, "\"\(key)\" must be a non-empty string") }
        return s
    }

    func optionalString(_ key: String, maxCount: Int) throws(ControlError) -> String? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard let s = value as? String else { throw fail(.invalidValue, "\"\(key)\" must be a string") }
        guard s.count <= maxCount else { throw fail(.invalidValue, "\"\(key)\" is longer than \(maxCount) characters") }
        return s
    }

    func optionalEnum<E: RawRepresentable>(_ key: String, _: E.Type) throws(ControlError) -> E?
    where E.RawValue == String, E: CaseIterable {
        guard let raw = try optionalString(key, maxCount: 64) else { return nil }
        guard let value = E(rawValue: raw) else {
            throw fail(.invalidValue, "\"\(key)\" must be one of \(E.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), not \"\(raw)\"")
        }
        return value
    }

    /// JSON numbers only (a JSON bool is not a number here).
    private func number(_ value: Any, _ key: String) throws(ControlError) -> Double {
        guard let n = value as? NSNumber, !isBool(n) else { throw fail(.invalidValue, "\"\(key)\" must be a number") }
        return n.doubleValue
    }

    /// JSONSerialization hands booleans over as NSNumbers of C type `char`.
    private func isBool(_ n: NSNumber) -> Bool { String(cString: n.objCType) == "c" }

    func optionalNumber(_ key: String, allowInfinite: Bool = false) throws(ControlError) -> Double? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        let n = try number(value, key)
        guard !n.isNaN, allowInfinite || n.isFinite else { throw fail(.invalidValue, "\"\(key)\" must be finite") }
        return n
    }

    func optionalBool(_ key: String) throws(ControlError) -> Bool? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard let b = value as? Bool, let n = value as? NSNumber, isBool(n) else { throw fail(.invalidValue, "\"\(key)\" must be true or false") }
        return b
    }

    func uint32(_ key: String) throws(ControlError) -> UInt32 {
        guard let value = object[key] else { throw fail(.missingField, "missing field \"\(key)\"") }
        let n = try number(value, key)
        guard n.isFinite, n >= 0, n <= Double(UInt32.max), n.rounded() == n else {
            throw fail(.invalidValue, "\"\(key)\" must be an integer in 0…\(UInt32.max)")
        }
        return UInt32(n)
    }

    private func components(_ key: String, _ names: [String]) throws(ControlError) -> [Double] {
        guard let value = object[key] else { throw fail(.missingField, "missing field \"\(key)\"") }
        guard let o = value as? [String: Any] else {
            throw fail(.invalidValue, "\"\(key)\" must be an object with \(names.joined(separator: ", "))")
        }
        var result: [Double] = []
        for name in names {
            guard let v = o[name] else { throw fail(.missingField, "missing field \"\(key).\(name)\"") }
            let n = try number(v, "\(key).\(name)")
            guard n.isFinite else { throw fail(.invalidValue, "\"\(key).\(name)\" must be finite") }
            result.append(n)
        }
        return result
    }

    func vector(_ key: String) throws(ControlError) -> Vector3 {
        let c = try components(key, ["x", "y", "z"])
        let limit = Double(ControlCodec.maxCoordinate)
        guard c.allSatisfy({ abs($0) <= limit }) else {
            throw fail(.invalidValue, "\"\(key)\" is more than \(Int(limit)) m from the origin")
        }
        return Vector3(Float(c[0]), Float(c[1]), Float(c[2]))
    }

    func point(_ key: String) throws(ControlError) -> NormalizedPoint {
        let c = try components(key, ["x", "y"])
        let p = NormalizedPoint(x: Float(c[0]), y: Float(c[1]))
        guard p.isInImage else { throw fail(.invalidValue, "\"\(key)\" must lie in the image: x and y in 0…1, got (\(c[0]), \(c[1]))") }
        return p
    }

    func color(_ key: String) throws(ControlError) -> String? {
        guard let s = try optionalString(key, maxCount: 7) else { return nil }
        let hex = s.dropFirst()
        guard s.first == "#", hex.count == 6, hex.allSatisfy(\.isHexDigit) else {
            throw fail(.invalidValue, "\"\(key)\" must look like #RRGGBB")
        }
        return s.uppercased()
    }

    func routines(_ key: String) throws(ControlError) -> [MeteringRoutine]? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard let list = value as? [String], !list.isEmpty else {
            throw fail(.invalidValue, "\"\(key)\" must be a non-empty array of \"exposure\", \"focus\", \"whiteBalance\"")
        }
        var result: [MeteringRoutine] = []
        for raw in list {
            guard let r = MeteringRoutine(rawValue: raw) else {
                throw fail(.invalidValue, "\"\(key)\" holds \"\(raw)\"; allowed: \"exposure\", \"focus\", \"whiteBalance\"")
            }
            if !result.contains(r) { result.append(r) }
        }
        return result
    }
}
