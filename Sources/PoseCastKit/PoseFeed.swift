import Foundation
import Synchronization

// The live pose feed: one JSON object per line from an external tracker (a SLAM system,
// a phone), over stdin or UDP. See docs/POSE_SOURCES.md.
//
//     {"t":1700000000.123,"p":[0.1,1.5,2.0],"q":[0,0,0,1],"k":[0.87,1.15,0.5,0.5],"frame":"opengl"}
//
// | field (long name) | required | meaning |
// |---|---|---|
// | `p` (`position`) | yes | camera position in the world, metres, [x, y, z] |
// | `q` (`orientation`) | yes | camera-to-world rotation [qx, qy, qz, qw]; norm within 10 % of 1, normalised here |
// | `t` (`time`) | no | host wall-clock Unix seconds of the tracker sample; without it the arrival time is used |
// | `k` (`intrinsics`) | no | normalised [fx, fy, cx, cy]; applies from this sample on |
// | `frame` | no | camera axes: `"opengl"` (default: −Z forward, +Y up) or `"opencv"` (+Z forward, +Y down) |
//
// Anything else is rejected, so a misspelt field never passes unnoticed.

/// One tracker sample, converted to our camera axes.
public struct PoseFeedSample: Sendable, Hashable {
    /// Tracker time of the sample, ns since the Unix epoch; nil when the line had no `t`.
    public var timeNanos: UInt64?
    public var pose: RigidPose
    /// Intrinsics the tracker sent with this sample, if any.
    public var intrinsics: CameraIntrinsics?

    public init(timeNanos: UInt64?, pose: RigidPose, intrinsics: CameraIntrinsics?) {
        self.timeNanos = timeNanos; self.pose = pose; self.intrinsics = intrinsics
    }
}

/// Decoding of one feed line.
public enum PoseFeedLine {
    /// Longest accepted line (bytes, UTF-8). A pose line is ~150 bytes; anything this long is
    /// not one, and bounding it bounds the work a hostile sender can cause.
    public static let maxBytes = 4096
    /// Largest normalised focal length accepted (a 0.6° field of view); pixel focal
    /// lengths are far above it, which is the mistake this bound catches.
    public static let maxFocal: Double = 100
    /// Unix seconds of 2001-09-09 and 2286-11-20: a `t` outside is not wall-clock seconds.
    public static let plausibleUnixSeconds: ClosedRange<Double> = 1e9...1e10

    static let fields: [(short: String, long: String)] = [("t", "time"), ("p", "position"), ("q", "orientation"),
                                                          ("k", "intrinsics"), ("frame", "frame")]

    /// The sample on `line`; nil for a blank line (which senders may use as a keep-alive).
    public static func decode(_ line: some StringProtocol) throws(PoseFeedError) -> PoseFeedSample? {
        let bytes = line.utf8.count
        guard bytes <= maxBytes else { throw .lineTooLong(bytes: bytes) }
        let text = String(line).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { return nil }
        let parsed: Any
        do { parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw .invalidJSON(detail)
        }
        guard let object = parsed as? [String: Any] else { throw .notAnObject }
        let allowed = Set(fields.flatMap { [$0.short, $0.long] })
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) { throw .unknownField(unknown) }

        func value(_ short: String, _ long: String) throws(PoseFeedError) -> (name: String, value: Any)? {
            switch (object[short], object[long]) {
            case (nil, nil): return nil
            case (let v?, nil): return (short, v)
            case (nil, let v?): return (long, v)
            case (_?, _?): throw .duplicateField(short: short, long: long)
            }
        }

        guard let p = try value("p", "position") else { throw .missingField("p (position)") }
        guard let q = try value("q", "orientation") else { throw .missingField("q (orientation)") }
        let position = try numbers(p, count: 3)
        let quaternion = try numbers(q, count: 4)
        let norm = quaternion.reduce(0) { $0 + $1 * $1 }.squareRoot()
        guard abs(norm - 1) <= 0.1 else { throw .notUnitQuaternion(norm: norm) }
        var orientation = Quaternion(x: Float(quaternion[0] / norm), y: Float(quaternion[1] / norm),
                                     z: Float(quaternion[2] / norm), w: Float(quaternion[3] / norm))
        if let frame = object["frame"] {
            guard let name = frame as? String else { throw .wrongType(field: "frame", expected: "a string") }
            guard let convention = TUMTrajectory.AxisConvention(rawValue: name) else { throw .unknownConvention(name) }
            if convention == .opencv { orientation = (orientation * TUMTrajectory.opencvToOpenGL).normalized }
        }

        var timeNanos: UInt64?
        if let t = try value("t", "time") {
            let seconds = try number(t.value, field: t.name)
            guard plausibleUnixSeconds.contains(seconds) else { throw .implausibleTime(seconds) }
            timeNanos = UInt64((seconds * 1e9).rounded())
        }

        var intrinsics: CameraIntrinsics?
        if let k = try value("k", "intrinsics") {
            let v = try numbers(k, count: 4)
            let candidate = CameraIntrinsics(fx: Float(v[0]), fy: Float(v[1]), cx: Float(v[2]), cy: Float(v[3]))
            try validate(candidate)
            intrinsics = candidate
        }
        return PoseFeedSample(timeNanos: timeNanos,
                              pose: RigidPose(position: Vector3(Float(position[0]), Float(position[1]), Float(position[2])),
                                              orientation: orientation),
                              intrinsics: intrinsics)
    }

    /// Checks normalised intrinsics: focal lengths in (0, `maxFocal`], principal point in
    /// [0, 1]. Also used for intrinsics from command-line options.
    public static func validate(_ k: CameraIntrinsics) throws(PoseFeedError) {
        for (name, v) in [("fx", k.fx), ("fy", k.fy), ("cx", k.cx), ("cy", k.cy)] {
            guard v.isFinite else { throw .nonFinite(field: "k.\(name)") }
        }
        for (name, v) in [("fx", k.fx), ("fy", k.fy)] where !(v > 0 && Double(v) <= maxFocal) {
            throw .intrinsicsOutOfRange(field: name, value: Double(v),
                                        allowed: "0 < \(name) ≤ \(Int(maxFocal)) (normalised by the image size)")
        }
        for (name, v) in [("cx", k.cx), ("cy", k.cy)] where !(0...1).contains(v) {
            throw .intrinsicsOutOfRange(field: name, value: Double(v), allowed: "0 ≤ \(name) ≤ 1 (normalised by the image size)")
        }
    }

    private static func numbers(_ field: (name: String, value: Any), count: Int) throws(PoseFeedError) -> [Double] {
        guard let array = field.value as? [Any] else {
            throw .wrongType(field: field.name, expected: "an array of \(count) numbers")
        }
        guard array.count == count else { throw .wrongCount(field: field.name, expected: count, found: array.count) }
        var out: [Double] = []
        for (i, element) in array.enumerated() {
            let v = try number(element, field: "\(field.name)[\(i)]")
            // Everything but `t` travels as f32.
            guard Float(v).isFinite else { throw .nonFinite(field: "\(field.name)[\(i)]") }
            out.append(v)
        }
        return out
    }

    private static func number(_ value: Any, field: String) throws(PoseFeedError) -> Double {
        // JSONSerialization hands booleans over as NSNumbers of C type `char`.
        guard let n = value as? NSNumber, String(cString: n.objCType) != "c" else {
            throw .wrongType(field: field, expected: "a number")
        }
        let v = n.doubleValue
        guard v.isFinite else { throw .nonFinite(field: field) }
        return v
    }
}

/// Why a feed line was rejected.
public enum PoseFeedError: Error, Sendable, Hashable, CustomStringConvertible {
    case lineTooLong(bytes: Int)
    case invalidJSON(String)
    case notAnObject
    case unknownField(String)
    case duplicateField(short: String, long: String)
    case missingField(String)
    case wrongType(field: String, expected: String)
    case wrongCount(field: String, expected: Int, found: Int)
    case nonFinite(field: String)
    case notUnitQuaternion(norm: Double)
    case intrinsicsOutOfRange(field: String, value: Double, allowed: String)
    case unknownConvention(String)
    case implausibleTime(Double)
    /// `t` lies further ahead of the arrival time than clock skew explains.
    case timeInFuture(seconds: Double)
    /// `t` is older than the store keeps, so the sample could never be used.
    case timeTooOld(seconds: Double)

    /// A stable short name, for counting rejections by kind.
    public var reason: String {
        switch self {
        case .lineTooLong: "lineTooLong"
        case .invalidJSON: "invalidJSON"
        case .notAnObject: "notAnObject"
        case .unknownField: "unknownField"
        case .duplicateField: "duplicateField"
        case .missingField: "missingField"
        case .wrongType: "wrongType"
        case .wrongCount: "wrongCount"
        case .nonFinite: "nonFinite"
        case .notUnitQuaternion: "notUnitQuaternion"
        case .intrinsicsOutOfRange: "intrinsicsOutOfRange"
        case .unknownConvention: "unknownConvention"
        case .implausibleTime: "implausibleTime"
        case .timeInFuture: "timeInFuture"
        case .timeTooOld: "timeTooOld"
        }
    }

    public var description: String {
        switch self {
        case .lineTooLong(let n): "line is \(n) bytes; at most \(PoseFeedLine.maxBytes) are accepted"
        case .invalidJSON(let detail): "not valid JSON: \(detail)"
        case .notAnObject: "the line must be one JSON object {…}"
        case .unknownField(let name):
            "unknown field \"\(name)\"; allowed: t/time, p/position, q/orientation, k/intrinsics, frame"
        case .duplicateField(let short, let long): "both \"\(short)\" and \"\(long)\" given; send one of them"
        case .missingField(let name): "required field \(name) is missing"
        case .wrongType(let field, let expected): "\"\(field)\" must be \(expected)"
        case .wrongCount(let field, let expected, let found): "\"\(field)\" must hold \(expected) numbers, found \(found)"
        case .nonFinite(let field): "\"\(field)\" is not finite (or too large for a 32-bit float)"
        case .notUnitQuaternion(let norm):
            "quaternion [qx, qy, qz, qw] has norm \(norm); a rotation needs norm 1 (within 0.1)"
        case .intrinsicsOutOfRange(let field, let value, let allowed):
            value > 1 && (field == "cx" || field == "cy" || value > PoseFeedLine.maxFocal)
                ? "intrinsics \(field) = \(value) is out of range (\(allowed)); it looks like pixels: divide fx and cx by the image width, fy and cy by its height"
                : "intrinsics \(field) = \(value) is out of range (\(allowed))"
        case .unknownConvention(let name): "\"frame\" is \"\(name)\"; expected \"opengl\" or \"opencv\""
        case .implausibleTime(let t):
            "t = \(t) is not wall-clock Unix seconds (expected about \(Int(Date().timeIntervalSince1970))); "
                + (t > PoseFeedLine.plausibleUnixSeconds.upperBound ? "milliseconds? divide by 1000" : "a monotonic clock? send Unix time or omit t")
        case .timeInFuture(let s): "t is \(s) s ahead of the arrival time; are the tracker's and this host's clocks synchronised?"
        case .timeTooOld(let s): "t is \(s) s older than the arrival time, beyond the pose window; are the clocks synchronised?"
        }
    }
}

/// The recent samples of a live feed, filled by a transport (stdin, UDP) and read by
/// `LivePoseProvider` for every frame; safe to use from any thread.
///
/// Samples are kept in time order (UDP may reorder) for `windowSeconds` behind the newest,
/// which is always kept, so the provider can tell how stale it is.
public final class LivePoseStore: Sendable {
    /// What the store has seen, for status lines and tests.
    public struct Statistics: Sendable, Hashable {
        public var accepted = 0
        public var rejected = 0
        public var lastError: PoseFeedError?
        /// Samples currently held.
        public var buffered = 0
    }

    /// A sample placed on the host time line: its `t`, or its arrival time without one.
    struct Entry: Sendable {
        var timeNanos: UInt64
        var pose: RigidPose
    }

    private struct State {
        var entries: [Entry] = []
        var intrinsics: CameraIntrinsics?
        var statistics = Statistics()
    }

    public let windowSeconds: Double
    /// How far `t` may run ahead of the arrival time (clock skew between hosts).
    public let maxAheadSeconds: Double
    /// Most samples held, whatever their rate.
    public let capacity: Int
    private let state = Mutex(State())

    public init(windowSeconds: Double = 2, maxAheadSeconds: Double = 1, capacity: Int = 4096) {
        self.windowSeconds = max(windowSeconds, 0); self.maxAheadSeconds = max(maxAheadSeconds, 0)
        self.capacity = max(capacity, 2)
    }

    /// Decodes and stores one line that arrived at `arrivalNanos` (host wall clock, ns since
    /// the Unix epoch). Returns nil for a blank line; throws, and counts, a rejected line.
    @discardableResult
    public func ingest(line: some StringProtocol, arrivalNanos: UInt64) throws(PoseFeedError) -> PoseFeedSample? {
        do {
            guard let sample = try PoseFeedLine.decode(line) else { return nil }
            try insert(sample, arrivalNanos: arrivalNanos)
            return sample
        } catch {
            state.withLock { $0.statistics.rejected += 1; $0.statistics.lastError = error }
            throw error
        }
    }

    /// Stores a sample decoded elsewhere (not counted as a rejection when it throws).
    public func insert(_ sample: PoseFeedSample, arrivalNanos: UInt64) throws(PoseFeedError) {
        let time = sample.timeNanos ?? arrivalNanos
        let lead = (Double(time) - Double(arrivalNanos)) / 1e9
        guard lead <= maxAheadSeconds else { throw .timeInFuture(seconds: lead) }
        guard -lead <= windowSeconds else { throw .timeTooOld(seconds: -lead) }
        let windowNanos = UInt64(windowSeconds * 1e9)
        state.withLock { s in
            let entry = Entry(timeNanos: time, pose: sample.pose)
            // Usually the newest: append. Otherwise insert in order, a repeated time replacing.
            var index = s.entries.count
            while index > 0 && s.entries[index - 1].timeNanos > time { index -= 1 }
            if index > 0 && s.entries[index - 1].timeNanos == time {
                s.entries[index - 1] = entry
            } else {
                s.entries.insert(entry, at: index)
            }
            let newest = s.entries[s.entries.count - 1].timeNanos
            let expired = s.entries.prefix { newest - $0.timeNanos > windowNanos }.count
            let excess = max(s.entries.count - capacity, 0)
            s.entries.removeFirst(min(max(expired, excess), s.entries.count - 1))
            if let k = sample.intrinsics { s.intrinsics = k }
            s.statistics.accepted += 1
            s.statistics.buffered = s.entries.count
        }
    }

    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// The pose at host time `nanos` and how far it is from the nearest sample, or nil with no
    /// samples: interpolated between the samples bracketing `nanos`, else the nearest end.
    func resolve(atNanos nanos: UInt64) -> (pose: RigidPose, gapNanos: UInt64, intrinsics: CameraIntrinsics?)? {
        state.withLock { s -> (RigidPose, UInt64, CameraIntrinsics?)? in
            let entries = s.entries
            guard let first = entries.first, let last = entries.last else { return nil }
            if nanos <= first.timeNanos { return (first.pose, first.timeNanos - nanos, s.intrinsics) }
            if nanos >= last.timeNanos { return (last.pose, nanos - last.timeNanos, s.intrinsics) }
            var low = 0, high = entries.count - 1
            // Invariant: entries[low].time < nanos < entries[high].time, or equal at an end.
            while high - low > 1 {
                let mid = (low + high) / 2
                if entries[mid].timeNanos <= nanos { low = mid } else { high = mid }
            }
            let a = entries[low], b = entries[high]
            let f = Float(Double(nanos - a.timeNanos) / Double(b.timeNanos - a.timeNanos))
            let pose = RigidPose(position: a.pose.position + (b.pose.position - a.pose.position) * f,
                                 orientation: Quaternion.slerp(a.pose.orientation, b.pose.orientation, f).normalized)
            return (pose, min(nanos - a.timeNanos, b.timeNanos - nanos), s.intrinsics)
        }
    }
}
