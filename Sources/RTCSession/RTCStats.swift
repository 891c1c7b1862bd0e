internal import CGStreamer

/// webrtcbin's `get-stats` reply: stats id → fields (RTCStats dictionary shapes).
public struct RTCStats: Sendable {
    public enum Value: Sendable, Hashable {
        case number(Double), bool(Bool), string(String)
        public var number: Double? { if case .number(let d) = self { d } else { nil } }
        public var string: String? { if case .string(let s) = self { s } else { nil } }
    }

    public let entries: [String: [String: Value]]

    /// The entries whose `type` field is `type` (e.g. "inbound-rtp", "outbound-rtp", "data-channel").
    public func entries(ofType type: String) -> [[String: Value]] {
        entries.values.filter { $0["type"]?.string == type }
    }

    init(_ reply: OwnedStructure) {
        var result: [String: [String: Value]] = [:]
        let structureType = gst_structure_get_type()
        for i in 0..<gst_structure_n_fields(reply.raw) {
            let name = String(cString: gst_structure_nth_field_name(reply.raw, guint(i)))
            guard let v = gst_structure_get_value(reply.raw, name), v.pointee.g_type == structureType,
                  let inner = gst_value_get_structure(v) else { continue }
            var fields: [String: Value] = [:]
            for j in 0..<gst_structure_n_fields(inner) {
                let key = String(cString: gst_structure_nth_field_name(inner, guint(j)))
                guard let fv = gst_structure_get_value(inner, key), let s = gst_value_serialize(fv) else { continue }
                let text = String(cString: s)
                g_free(s)
                if let d = Double(text) { fields[key] = .number(d) }
                else if text == "true" || text == "false" { fields[key] = .bool(text == "true") }
                else { fields[key] = .string(text.trimmingCharacters(in: ["\""])) }
            }
            result[name] = fields
        }
        entries = result
    }
}

private extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
