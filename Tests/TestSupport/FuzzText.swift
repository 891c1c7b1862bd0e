// JSON-aware generation of protocol text for fuzzing: valid seeds (from the real
// encoders) mutated structurally (type confusion, odd numbers, deep nesting, long and
// odd Unicode strings, duplicate, unknown and missing keys, splicing between seeds),
// then sometimes byte-mutated; plus random JSON and random text.

/// What kind of case `JSONTextFuzzer.make` produced (for the tallies).
public enum FuzzCaseKind: String, Sendable, CaseIterable {
    /// A seed as the encoder wrote it.
    case seed
    /// A seed with structural JSON mutations.
    case json
    /// A seed's text with byte mutations (lossily decoded as UTF-8, as a transport would).
    case bytes
    /// A random JSON value.
    case randomJSON
    /// Random Unicode text or random bytes.
    case randomText
}

public struct FuzzTextCase: Sendable {
    public var text: String
    public var kind: FuzzCaseKind
}

public struct JSONTextFuzzer: Sendable {
    public let seeds: [FuzzJSON]
    public let seedTexts: [String]
    /// Strings taken from the seeds (types, enum values, ids, keys) to confuse fields with.
    public let dictionary: [String]
    /// Longest text produced by byte mutation; structural mutations (deep nesting, long
    /// strings) may go well past it, on purpose, to hit the size limits.
    public let maxLength: Int
    private let bytes: ByteMutator

    /// - Parameters:
    ///   - seeds: valid messages, as written by the real encoders.
    ///   - extraWords: more strings for the dictionary (e.g. every `type` the protocol knows).
    public init(seeds: [String], extraWords: [String] = [], maxLength: Int) {
        let parsed = seeds.compactMap { FuzzJSON(parsing: $0) }
        precondition(parsed.count == seeds.count, "every seed must be valid JSON")
        self.seeds = parsed
        seedTexts = seeds
        dictionary = Array(Set(parsed.flatMap(\.strings) + extraWords)).sorted()
        self.maxLength = maxLength
        bytes = ByteMutator(seeds: seeds.map { Array($0.utf8) }, maxLength: maxLength)
    }

    public func make(_ rng: inout some RandomNumberGenerator) -> FuzzTextCase {
        switch rng.below(100) {
        case 0..<4: return FuzzTextCase(text: rng.pick(seedTexts), kind: .seed)
        case 4..<62: return FuzzTextCase(text: mutatedTree(&rng).text, kind: .json)
        case 62..<86:
            // Structure first, sometimes, then bytes.
            let start = rng.chance(0.3) ? Array(mutatedTree(&rng).text.utf8) : Array(rng.pick(seedTexts).utf8)
            var b = start
            for _ in 0..<(1 + rng.below(3)) { b = bytes.mutate(b, &rng) }
            return FuzzTextCase(text: String(decoding: b, as: UTF8.self), kind: .bytes)
        case 86..<93: return FuzzTextCase(text: randomJSON(depth: 0, &rng).text, kind: .randomJSON)
        default:
            let text = rng.chance(0.5) ? String(decoding: bytes.randomBytes(&rng), as: UTF8.self) : randomUnicode(&rng)
            return FuzzTextCase(text: text, kind: .randomText)
        }
    }

    /// A seed with one to four structural mutations.
    public func mutatedTree(_ rng: inout some RandomNumberGenerator) -> FuzzJSON {
        var tree = rng.pick(seeds)
        for _ in 0..<(1 + rng.below(4)) {
            let index = rng.below(tree.nodeCount)
            let choice = rng.below(12)
            tree = tree.replacingNode(index) { node in mutate(node, choice: choice, &rng) }
        }
        return tree
    }

    // MARK: mutations of one node

    private func mutate(_ node: FuzzJSON, choice: Int, _ rng: inout some RandomNumberGenerator) -> FuzzJSON {
        switch choice {
        case 0: return typeConfused(node, &rng)
        case 1: return oddNumber(&rng)
        case 2: return oddString(&rng)
        case 3: return .string(rng.pick(dictionary))
        case 4: return nested(node, &rng)
        case 5: // splice: a subtree of another seed
            let other = rng.pick(seeds)
            return other.node(rng.below(other.nodeCount))
        case 6: return oddToken(&rng)
        default: break
        }
        switch node {
        case .object(var members):
            switch rng.below(6) {
            case 0 where !members.isEmpty: members.remove(at: rng.below(members.count)) // a missing field
            case 1 where !members.isEmpty: // a duplicate key with another value
                let m = rng.pick(members)
                members.insert(FuzzMember(m.key, randomScalar(&rng)), at: rng.below(members.count + 1))
            case 2: members.append(FuzzMember(rng.chance(0.5) ? rng.pick(dictionary) : oddKey(&rng), randomJSON(depth: 2, &rng)))
            case 3 where !members.isEmpty: // a key renamed (case, spaces, unicode look-alike)
                let i = rng.below(members.count)
                members[i].key = rng.pick([members[i].key.uppercased(), " " + members[i].key, members[i].key + "\u{200B}",
                                           String(members[i].key.reversed()), ""])
            case 4: members.shuffle(using: &rng)
            default: members.removeAll()
            }
            return .object(members)
        case .array(var items):
            switch rng.below(4) {
            case 0: items.removeAll()
            case 1 where !items.isEmpty: items += Array(repeating: rng.pick(items), count: rng.length(upTo: 2000))
            case 2: items.append(randomJSON(depth: 2, &rng))
            default: items.shuffle(using: &rng)
            }
            return .array(items)
        default:
            return typeConfused(node, &rng)
        }
    }

    /// Same content, another JSON type: numbers ⇄ strings, null, bools, wrapped in arrays or objects.
    private func typeConfused(_ node: FuzzJSON, _ rng: inout some RandomNumberGenerator) -> FuzzJSON {
        switch (node, rng.below(5)) {
        case (.number(let n), 0): return .string(n)
        case (.string(let s), 0): return .number(s.allSatisfy { $0.isNumber || $0 == "." || $0 == "-" } && !s.isEmpty ? s : "0")
        case (.bool(let b), 0): return .number(b ? "1" : "0")
        case (_, 1): return .null
        case (_, 2): return .array([node])
        case (_, 3): return .object([FuzzMember(rng.pick(dictionary), node)])
        default: return rng.chance(0.5) ? .bool(rng.chance(0.5)) : .string("")
        }
    }

    static let oddNumbers = [
        "0", "-0", "1", "-1", "0.5", "1.5", "-0.0", "1e308", "-1e308", "1e-320", "4.9e-324", "2.2250738585072014e-308",
        "4294967295", "4294967296", "-2147483649", "9007199254740993", "18446744073709551615", "18446744073709551616",
        "-9223372036854775809", "123456789012345678901234567890", "1e400", "0.1e1", "1E+2", "10000.0001", "3.4028235e38",
        "1.0000001", "0.99999994", "100000000000000000000000000000000000000000",
    ]
    static let oddTokens = [
        "NaN", "-NaN", "Infinity", "-Infinity", "inf", "nan", "1e999", "-1e999", "01", "+1", ".5", "5.", "0x10", "1_000",
        "--1", "1e", "truee", "nul", "undefined", "\"\\ud800\"", "\"\\udc00\\ud800\"", "\"\\u00\"", "\"\\x41\"", "\"unterminated",
        "[1,]", "{\"a\":1,}", "{\"a\"}", "{,}", "[", "]", "{", "}", "\"\\u0000\"", "'single'", "/* comment */ 1", "[1 2]",
    ]
    static let oddStrings = [
        "", " ", "\u{0}", "\u{1}", "\t", "\n", "\"", "\\", "é", "e\u{301}", "😀", "👩‍🔧", "\u{202E}evil", "\u{FEFF}", "\u{FFFD}",
        "𝕏", "中文", "ﷺ", "\u{10FFFF}", "%s%n", "../../etc/passwd", "<script>", "null", "true", "0", "#FF3B30", "#ff3b3", "#GGGGGG",
        "a\u{0}b", "\u{200B}", "ＡＢＣ",
    ]

    private func oddNumber(_ rng: inout some RandomNumberGenerator) -> FuzzJSON {
        if rng.chance(0.3) {
            // A random double, sometimes fractional, sometimes enormous.
            let bits = rng.next()
            let d = Double(bitPattern: bits)
            if d.isFinite { return .number("\(d)") }
        }
        return .number(rng.pick(Self.oddNumbers))
    }

    private func oddToken(_ rng: inout some RandomNumberGenerator) -> FuzzJSON { .raw(rng.pick(Self.oddTokens)) }

    private func oddString(_ rng: inout some RandomNumberGenerator) -> FuzzJSON {
        switch rng.below(4) {
        case 0: // long
            let unit = rng.pick(["x", "é", "😀", "\\", "\"", "a\u{301}"])
            return .string(String(repeating: unit, count: rng.length(upTo: 70_000)))
        case 1: return .string(randomUnicode(&rng))
        case 2: return .string(rng.pick(dictionary) + rng.pick(Self.oddStrings))
        default: return .string(rng.pick(Self.oddStrings))
        }
    }

    private func oddKey(_ rng: inout some RandomNumberGenerator) -> String {
        rng.chance(0.5) ? rng.pick(Self.oddStrings) : "x" + String(rng.next() % 1000)
    }

    /// The node inside many levels of arrays or objects (1 to ~20 000 levels).
    private func nested(_ node: FuzzJSON, _ rng: inout some RandomNumberGenerator) -> FuzzJSON {
        let depth = 1 + rng.length(upTo: 20_000)
        let asArrays = rng.chance(0.5)
        // Built as raw text: a FuzzJSON tree this deep would recurse as deeply to render.
        let inner = node.text
        let open = asArrays ? "[" : "{\"a\":", close = asArrays ? "]" : "}"
        return .raw(String(repeating: open, count: depth) + inner + String(repeating: close, count: depth))
    }

    private func randomScalar(_ rng: inout some RandomNumberGenerator) -> FuzzJSON {
        switch rng.below(5) {
        case 0: return .null
        case 1: return .bool(rng.chance(0.5))
        case 2: return oddNumber(&rng)
        case 3: return oddString(&rng)
        default: return .string(rng.pick(dictionary))
        }
    }

    /// A random JSON value (keys and strings mostly from the dictionary, so some parts fit).
    public func randomJSON(depth: Int, _ rng: inout some RandomNumberGenerator) -> FuzzJSON {
        guard depth < 4, rng.chance(0.6) else { return randomScalar(&rng) }
        if rng.chance(0.3) {
            return .array((0..<rng.below(6)).map { _ in randomJSON(depth: depth + 1, &rng) })
        }
        return .object((0..<rng.below(8)).map { _ in
            FuzzMember(rng.chance(0.8) ? rng.pick(dictionary) : oddKey(&rng), randomJSON(depth: depth + 1, &rng))
        })
    }

    /// Random Unicode scalars from every plane, weighted towards ASCII and JSON punctuation.
    public func randomUnicode(_ rng: inout some RandomNumberGenerator) -> String {
        var s = String.UnicodeScalarView()
        for _ in 0..<rng.length(upTo: 600) {
            let v: UInt32
            switch rng.below(6) {
            case 0: v = UInt32(rng.pick(Array("{}[]\":,\\ 0123456789.-eE".unicodeScalars)).value)
            case 1, 2: v = UInt32(rng.below(0x80))
            case 3: v = UInt32(0x80 + rng.below(0x780))
            case 4: v = UInt32(0x800 + rng.below(0xF800))
            default: v = UInt32(0x10000 + rng.below(0x100000))
            }
            if let scalar = Unicode.Scalar(v) { s.append(scalar) }
        }
        return String(s)
    }
}
