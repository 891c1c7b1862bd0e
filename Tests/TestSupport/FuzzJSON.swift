import Foundation

// A JSON tree for fuzzing: unlike Foundation's, it keeps key order, allows duplicate
// keys and holds raw tokens (NaN, 1e999, a lone surrogate escape …) that no encoder
// would write, so a mutated tree can be rendered into exactly the bad text we want.

/// One JSON value, or a raw token written verbatim.
public indirect enum FuzzJSON: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number's text as written (so `-0`, `1e999` and 30-digit integers survive).
    case number(String)
    case string(String)
    case array([FuzzJSON])
    /// Members in order; a key may repeat.
    case object([FuzzMember])
    /// Written as is: invalid JSON on purpose.
    case raw(String)

    /// Reads valid JSON text (the seeds, written by the real encoders); nil when Foundation cannot.
    public init?(parsing text: String) {
        guard let any = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else { return nil }
        self.init(foundation: any)
    }

    private init(foundation value: Any) {
        switch value {
        case is NSNull: self = .null
        case let s as String: self = .string(s)
        case let n as NSNumber:
            // JSONSerialization hands booleans over as NSNumbers of C type `char`.
            if String(cString: n.objCType) == "c" { self = .bool(n.boolValue); return }
            let d = n.doubleValue
            self = .number(d.rounded() == d && abs(d) < 9e15 ? String(Int64(d)) : "\(d)")
        case let a as [Any]: self = .array(a.map { FuzzJSON(foundation: $0) })
        case let o as [String: Any]:
            self = .object(o.keys.sorted().map { FuzzMember($0, FuzzJSON(foundation: o[$0]!)) })
        default: self = .raw("\(value)")
        }
    }

    /// The JSON text (compact; strings escaped as JSON requires, non-ASCII written raw).
    public var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    public func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += n
        case .string(let s): Self.writeString(s, into: &out)
        case .raw(let r): out += r
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, m) in members.enumerated() {
                if i > 0 { out += "," }
                Self.writeString(m.key, into: &out)
                out += ":"
                m.value.write(into: &out)
            }
            out += "}"
        }
    }

    static func writeString(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// Every string held anywhere in the tree, keys included (a mutation dictionary).
    public var strings: [String] {
        switch self {
        case .string(let s): [s]
        case .array(let items): items.flatMap(\.strings)
        case .object(let members): members.flatMap { [$0.key] + $0.value.strings }
        default: []
        }
    }

    /// Number of nodes (for picking one uniformly).
    public var nodeCount: Int {
        switch self {
        case .array(let items): 1 + items.reduce(0) { $0 + $1.nodeCount }
        case .object(let members): 1 + members.reduce(0) { $0 + $1.value.nodeCount }
        default: 1
        }
    }

    /// The tree with node number `index` (pre-order) replaced by `transform` of it.
    public func replacingNode(_ index: Int, _ transform: (FuzzJSON) -> FuzzJSON) -> FuzzJSON {
        var counter = index
        return replacing(&counter, transform)
    }

    private func replacing(_ counter: inout Int, _ transform: (FuzzJSON) -> FuzzJSON) -> FuzzJSON {
        if counter == 0 { counter = -1; return transform(self) }
        guard counter > 0 else { return self }
        counter -= 1
        switch self {
        case .array(let items):
            var copy = items
            for i in copy.indices {
                copy[i] = copy[i].replacing(&counter, transform)
                if counter < 0 { break }
            }
            return .array(copy)
        case .object(let members):
            var copy = members
            for i in copy.indices {
                copy[i].value = copy[i].value.replacing(&counter, transform)
                if counter < 0 { break }
            }
            return .object(copy)
        default:
            return self
        }
    }

    /// The subtree at node number `index` (pre-order).
    public func node(_ index: Int) -> FuzzJSON {
        var counter = index
        var found: FuzzJSON = self
        _ = replacing(&counter) { found = $0; return $0 }
        return found
    }
}

/// One `"key": value` of an object.
public struct FuzzMember: Sendable, Hashable {
    public var key: String
    public var value: FuzzJSON
    public init(_ key: String, _ value: FuzzJSON) { self.key = key; self.value = value }
}
