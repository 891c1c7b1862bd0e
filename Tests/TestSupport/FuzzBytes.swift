// Byte-level mutation and generation for fuzzing: every choice comes from the caller's
// random source, so a case is reproducible from its seed (PoseCastKit's SplitMix64 in
// the harnesses; TestSupport itself depends on nothing).

extension RandomNumberGenerator {
    /// Uniform in 0..<n (n > 0).
    public mutating func below(_ n: Int) -> Int { Int(next(upperBound: UInt64(n))) }
    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < p }
    /// One element of a non-empty collection.
    public mutating func pick<C: Collection>(_ c: C) -> C.Element { c[c.index(c.startIndex, offsetBy: below(c.count))] }
    /// A length that is usually small but sometimes large: 0…max, log-uniform-ish.
    public mutating func length(upTo max: Int) -> Int {
        guard max > 0 else { return 0 }
        let bits = below(Int.bitWidth - max.leadingZeroBitCount + 1)
        return min(max, below(1 << bits))
    }
}

/// Mutates byte strings: flips, interesting values, truncation, extension, insertion,
/// deletion, duplication and splicing with another seed.
public struct ByteMutator: Sendable {
    public let seeds: [[UInt8]]
    /// Longest output (extensions stop there).
    public let maxLength: Int

    public init(seeds: [[UInt8]], maxLength: Int) {
        precondition(!seeds.isEmpty, "a mutator needs at least one seed")
        self.seeds = seeds; self.maxLength = maxLength
    }

    static let interestingBytes: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF, 0x20, 0x22, 0x5C, 0x7B, 0x7D, 0xC0, 0xED, 0xF4, 0xFE]
    /// Little-endian 32-bit patterns that matter for floats and counters.
    static let interestingWords: [UInt32] = [
        0, 1, 0x8000_0000, 0x7FFF_FFFF, 0xFFFF_FFFF,
        0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0x7FA0_0001, // +inf, -inf, quiet NaN, signalling NaN
        0x0000_0001, 0x0080_0000, 0x3F80_0000, 0xBF80_0000, // denormal, smallest normal, 1, -1
        0x7F7F_FFFF, 0x3F80_0001, 0x3F7F_FFFF, 0x3A83_126F, // max float, 1 ± ulp, 0.001
    ]

    /// A new case: a seed mutated one to four times (or, sometimes, fully random bytes).
    public func make(_ rng: inout some RandomNumberGenerator) -> [UInt8] {
        if rng.chance(0.08) { return randomBytes(&rng) }
        var bytes = rng.pick(seeds)
        for _ in 0..<(1 + rng.below(4)) { bytes = mutate(bytes, &rng) }
        return bytes
    }

    public func randomBytes(_ rng: inout some RandomNumberGenerator) -> [UInt8] {
        (0..<rng.length(upTo: maxLength)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    public func mutate(_ input: [UInt8], _ rng: inout some RandomNumberGenerator) -> [UInt8] {
        var b = input
        switch rng.below(11) {
        case 0 where !b.isEmpty: // flip one bit
            let i = rng.below(b.count); b[i] ^= 1 << UInt8(rng.below(8))
        case 1 where !b.isEmpty: // one byte to an interesting or random value
            b[rng.below(b.count)] = rng.chance(0.5) ? rng.pick(Self.interestingBytes) : UInt8(truncatingIfNeeded: rng.next())
        case 2 where b.count >= 4: // an interesting 32-bit word, little-endian, anywhere
            let at = rng.below(b.count - 3), w = rng.pick(Self.interestingWords)
            for k in 0..<4 { b[at + k] = UInt8(truncatingIfNeeded: w >> (8 * UInt32(k))) }
        case 3: // truncate
            b = Array(b.prefix(rng.below(b.count + 1)))
        case 4: // extend with random bytes
            b += (0..<rng.length(upTo: max(0, maxLength - b.count))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        case 5 where !b.isEmpty: // delete a range
            let at = rng.below(b.count), n = 1 + rng.below(b.count - at)
            b.removeSubrange(at..<(at + n))
        case 6: // insert random bytes
            let at = rng.below(b.count + 1)
            b.insert(contentsOf: (0..<(1 + rng.below(16))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: at)
        case 7 where !b.isEmpty: // duplicate a range
            let at = rng.below(b.count), n = 1 + rng.below(min(64, b.count - at))
            b.insert(contentsOf: b[at..<(at + n)], at: rng.below(b.count + 1))
        case 8: // splice: our head, another seed's tail
            let other = rng.pick(seeds)
            b = Array(b.prefix(rng.below(b.count + 1))) + Array(other.suffix(rng.below(other.count + 1)))
        case 9 where !b.isEmpty: // a run of one byte
            let at = rng.below(b.count), n = 1 + rng.below(b.count - at), v = rng.pick(Self.interestingBytes)
            for i in at..<(at + n) { b[i] = v }
        default: // flip several random bits
            for _ in 0..<(1 + rng.below(8)) where !b.isEmpty { let i = rng.below(b.count); b[i] ^= UInt8(truncatingIfNeeded: rng.next()) }
        }
        return b.count > maxLength ? Array(b.prefix(maxLength)) : b
    }
}
