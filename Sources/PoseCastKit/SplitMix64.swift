/// SplitMix64: a small, well-mixed, seedable generator (the standard library's is not
/// seedable). Deterministic noise and jitter in the synthetic camera and trajectories,
/// and repeatable random cases in the tests.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    @inlinable
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 24 bits (a Float's precision).
    @inlinable
    public mutating func nextUnit() -> Float { Float(next() >> 40) * (1 / 16_777_216) }

    /// Uniform in [0, 1) with 53 bits (a Double's precision).
    @inlinable
    public mutating func nextUnitDouble() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
