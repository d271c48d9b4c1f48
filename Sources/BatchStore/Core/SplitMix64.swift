/// A small, fast, deterministic generator (SplitMix64): the demo database's rows, the bench's key
/// mix and the tests' random runs are exactly reproducible from a seed. Not part of the engine's
/// public API.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// A uniform integer in `0..<n`.
    package mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(n, 1))) }
}
