import PoseCastKit
import Synchronization

/// Counters of a probe that writes or reads the pose inside encoded frames (the trailer,
/// `PoseTrailerWriter`/`PoseTrailerReader`; the H.264 SEI, `PoseSEIWriter`/`PoseSEIReader`).
public struct InBandPoseStats: Sendable, Equatable {
    /// Frames that carried the pose: written (left with one) or read (arrived with one).
    public var frames: UInt64 = 0
    /// Frames without: no pose meta to write (or, for the SEI, no slice), or none found.
    public var framesWithout: UInt64 = 0
    /// Bytes added, in all (writers).
    public var bytes: UInt64 = 0
    /// Carriers whose sizes could not be right, or whose element did not decode (readers;
    /// those are also in the reader's `PoseRejectionCounter`).
    public var malformed: UInt64 = 0
    public var lastProblem: String?
    /// Nanoseconds spent on it (CPU on the streaming thread).
    public var nanos: UInt64 = 0
    public init() {}

    /// Two probes' counters together (one reader per decode branch); the newer problem wins.
    public static func + (a: InBandPoseStats, b: InBandPoseStats) -> InBandPoseStats {
        var sum = a
        sum.frames += b.frames; sum.framesWithout += b.framesWithout; sum.bytes += b.bytes
        sum.malformed += b.malformed; sum.nanos += b.nanos
        sum.lastProblem = b.lastProblem ?? a.lastProblem
        return sum
    }

    /// Microseconds per carrying frame, to two decimals (0 before the first).
    var microsPerFrame: Double { frames == 0 ? 0 : (Double(nanos) / Double(frames) / 1000 * 100).rounded() / 100 }

    /// A writer's status fields, once it has written one: `PREFIX_frames`,
    /// `PREFIX_bytes_per_frame` and `PREFIX_add_us`.
    public func writerFields(prefix: String) -> [String: Any] {
        guard frames > 0 else { return [:] }
        var fields: [String: Any] = ["\(prefix)_frames": Int(frames), "\(prefix)_without": Int(framesWithout),
                                     "\(prefix)_bytes_per_frame": (Double(bytes) / Double(frames) * 10).rounded() / 10,
                                     "\(prefix)_add_us": microsPerFrame]
        if let lastProblem { fields["\(prefix)_problem"] = lastProblem }
        return fields
    }

    /// A reader's status fields: `PREFIX_frames`, `PREFIX_malformed`, `PREFIX_TIMING_us`
    /// once it has read one, and `PREFIX_problem` when there was one.
    public func readerFields(prefix: String, timing: String) -> [String: Any] {
        var fields: [String: Any] = ["\(prefix)_frames": Int(frames), "\(prefix)_malformed": Int(malformed)]
        if frames > 0 { fields["\(prefix)_\(timing)_us"] = microsPerFrame }
        if let lastProblem { fields["\(prefix)_problem"] = lastProblem }
        return fields
    }
}

/// What every in-band probe counts, as it goes (the probes' counters behind one lock).
final class InBandPoseCounter: Sendable {
    private let counters = Mutex(InBandPoseStats())

    var stats: InBandPoseStats { counters.withLock { $0 } }

    /// A frame without a pose to write, or without one found.
    func without(_ problem: String? = nil) {
        counters.withLock { $0.framesWithout += 1; if let problem { $0.lastProblem = problem } }
    }

    /// A carrier whose sizes did not add up.
    func malformed(_ problem: String) { counters.withLock { $0.malformed += 1; $0.lastProblem = problem } }

    /// A frame given its pose, `bytes` added, the work begun at `started` (monotonic ns).
    func wrote(_ bytes: Int, since started: UInt64) {
        let spent = MonotonicClock.nanos() &- started
        counters.withLock { $0.frames += 1; $0.bytes += UInt64(bytes); $0.nanos += spent }
    }

    /// A pose element read from a frame's `carrier` ("trailer", "SEI"): decoded with the
    /// wire format's rules, then `attach`ed and counted; a pose that does not decode is
    /// recorded as a rejection by reason and counted as malformed.
    func read(_ element: [UInt8], carrier: String, since started: UInt64, rejections: PoseRejectionCounter, attach: () -> Void) {
        do throws(PoseWireError) {
            _ = try PoseWireFormat.decode(element)
            attach()
            let spent = MonotonicClock.nanos() &- started
            counters.withLock { $0.frames += 1; $0.nanos += spent }
        } catch {
            rejections.record(error)
            malformed("pose in the \(carrier): \(error.reason)")
        }
    }
}
