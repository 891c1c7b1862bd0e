import Foundation

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
        case "meteringMode":
            guard let mode = try fields.optionalEnum("mode", MeteringMode.self) else {
                throw ControlError(id: id, code: .missingField, message: "missing field \"mode\" (uniform, spot or weighted)")
            }
            request = .meteringMode(mode)
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
        case "receiving":
            request = .receiving(frameId: try fields.uint32("frameId"), captureTimeNanos: try fields.nanos("captureTimeNs"))
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
        case .meteringMode(let mode): o["mode"] = mode.rawValue
        case let .zoom(p, factor, frameId): o["point"] = point(p); o["factor"] = factor; o["frameId"] = frameId
        case let .follow(annotationId, factor): o["annotationId"] = annotationId ?? NSNull(); o["factor"] = factor
        case .framing(let subject): o["subject"] = subject
        case .background: break
        case .voice(let muted): o["muted"] = muted
        case let .receiving(frameId, nanos): o["frameId"] = frameId; o["captureTimeNs"] = String(nanos)
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
        case .annotationVisibility(let hidden):
            return serialize(["type": "annotationVisibility", "hidden": hidden])
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
        case .voiceRoute(let route):
            return serialize(["type": "voiceRoute", "room": route.room, "pin": route.pin, "display": route.display, "listen": route.listen])
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
        case "annotationVisibility":
            guard let hidden = object["hidden"] as? [String], hidden.allSatisfy({ $0.count <= maxIdCharacters }) else {
                throw ControlError(id: nil, code: .invalidValue, message: "\"hidden\" must be an array of annotation ids")
            }
            return .annotationVisibility(hidden: hidden)
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
        case "voiceRoute":
            guard let room = (object["room"] as? NSNumber)?.uint64Value, room > 0 else {
                throw ControlError(id: nil, code: .invalidValue, message: "\"room\" must be a positive whole number")
            }
            guard let listen = object["listen"] as? [String] ?? (object["listen"] == nil ? [] : nil) else {
                throw ControlError(id: nil, code: .invalidValue, message: "\"listen\" must be an array of strings")
            }
            return .voiceRoute(VoiceRoute(room: room, pin: try fields.string("pin"), display: try fields.string("display"), listen: listen))
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

    /// Nanoseconds as a decimal string (a JSON number loses them past 2^53; a browser
    /// holds them in a BigInt).
    func nanos(_ key: String) throws(ControlError) -> UInt64 {
        guard let value = object[key] else { throw fail(.missingField, "missing field \"\(key)\"") }
        guard let text = value as? String, text.count <= 20, text.allSatisfy(\.isASCII), let n = UInt64(text) else {
            throw fail(.invalidValue, "\"\(key)\" must be a string of decimal digits (nanoseconds, 0…\(UInt64.max))")
        }
        return n
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
