import Foundation

/// A recorded camera path in the TUM RGB-D format, replayed by time: one sample per line,
/// `timestamp tx ty tz qx qy qz qw` (seconds, metres, camera-to-world quaternion),
/// whitespace separated; lines whose first non-blank character is `#`, and blank lines,
/// are ignored. Timestamps must increase strictly.
///
/// Between samples the position is interpolated linearly and the orientation by slerp,
/// so a 30 Hz recording plays smoothly at any frame rate.
public struct TUMTrajectory: CameraTrajectory {
    /// Which way the recorded camera's axes point.
    public enum AxisConvention: String, Sendable, Hashable, CaseIterable {
        /// Optical frame: +Z forward, +Y down (TUM RGB-D, ORB-SLAM, OpenCV). Converted on load.
        case opencv
        /// Already ours: −Z forward, +Y up (OpenGL, ARKit).
        case opengl
    }

    /// One recorded pose, already converted to our camera axes.
    public struct Sample: Sendable, Hashable {
        /// Seconds as written in the file.
        public var timestamp: Double
        public var pose: RigidPose
    }

    public let samples: [Sample]
    /// When true (the default), playback wraps around: after the last sample it starts again
    /// from the first. When false, times after the last sample have no pose.
    public var loop: Bool
    /// Recording seconds played per second (2 = twice as fast).
    public var playbackRate: Double

    /// Seconds from the first to the last sample.
    public var duration: Double { samples[samples.count - 1].timestamp - samples[0].timestamp }

    /// Parses `text`; throws on the first bad line, naming it.
    public init(text: String, convention: AxisConvention = .opencv, loop: Bool = true,
                playbackRate: Double = 1) throws(TUMTrajectoryError) {
        var samples: [Sample] = []
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            guard let sample = try Self.parse(line, number: index + 1, convention: convention) else { continue }
            if let previous = samples.last, sample.timestamp <= previous.timestamp {
                throw .nonIncreasingTimestamp(line: index + 1, timestamp: sample.timestamp, previous: previous.timestamp)
            }
            samples.append(sample)
        }
        guard !samples.isEmpty else { throw .noSamples }
        self.samples = samples; self.loop = loop; self.playbackRate = playbackRate
    }

    /// Reads and parses the file at `path`.
    public init(contentsOfFile path: String, convention: AxisConvention = .opencv, loop: Bool = true,
                playbackRate: Double = 1) throws(TUMTrajectoryError) {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw .unreadable(path: path, reason: (error as NSError).localizedDescription)
        }
        do { try self.init(text: text, convention: convention, loop: loop, playbackRate: playbackRate) } catch {
            throw .inFile(path: path, error)
        }
    }

    public func pose(at seconds: Double) -> RigidPose? {
        var t = seconds * playbackRate
        let span = duration
        guard t.isFinite else { return nil }
        if loop {
            guard span > 0 else { return samples[0].pose }
            t = t.truncatingRemainder(dividingBy: span)
            if t < 0 { t += span }
        } else if t < 0 || t > span {
            return nil
        }
        let time = samples[0].timestamp + t
        // The first sample later than `time`; the bracket is (upper − 1, upper).
        var low = 0, high = samples.count
        while low < high {
            let mid = (low + high) / 2
            if samples[mid].timestamp <= time { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return samples[0].pose }
        guard low < samples.count else { return samples[samples.count - 1].pose }
        let a = samples[low - 1], b = samples[low]
        let f = Float((time - a.timestamp) / (b.timestamp - a.timestamp))
        return RigidPose(position: a.pose.position + (b.pose.position - a.pose.position) * f,
                         orientation: Quaternion.slerp(a.pose.orientation, b.pose.orientation, f).normalized)
    }

    /// One line: nil for a comment or blank line.
    private static func parse(_ line: Substring, number: Int, convention: AxisConvention) throws(TUMTrajectoryError) -> Sample? {
        let content = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if content.isEmpty || content.hasPrefix("#") { return nil }
        let fields = content.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count == 8 else { throw .wrongFieldCount(line: number, count: fields.count) }
        var values: [Double] = []
        for (name, field) in zip(fieldNames, fields) {
            guard let value = Double(field) else { throw .notANumber(line: number, field: name, text: String(field)) }
            // Positions and quaternions travel as f32, so they must fit one too.
            guard value.isFinite, name == "timestamp" || Float(value).isFinite else {
                throw .nonFinite(line: number, field: name, text: String(field))
            }
            values.append(value)
        }
        let (qx, qy, qz, qw) = (values[4], values[5], values[6], values[7])
        let norm = (qx * qx + qy * qy + qz * qz + qw * qw).squareRoot()
        guard norm > 1e-9, norm.isFinite else { throw .zeroQuaternion(line: number) }
        var orientation = Quaternion(x: Float(qx / norm), y: Float(qy / norm), z: Float(qz / norm), w: Float(qw / norm))
        if convention == .opencv { orientation = (orientation * opencvToOpenGL).normalized }
        return Sample(timestamp: values[0],
                      pose: RigidPose(position: Vector3(Float(values[1]), Float(values[2]), Float(values[3])),
                                      orientation: orientation))
    }

    static let fieldNames = ["timestamp", "tx", "ty", "tz", "qx", "qy", "qz", "qw"]

    /// 180° about the camera's X axis: turns OpenCV camera axes (+Z forward, +Y down) into
    /// ours (−Z forward, +Y up). Right-multiplied because it acts in the camera's own frame.
    public static let opencvToOpenGL = Quaternion(x: 1, y: 0, z: 0, w: 0)
}

/// Why a TUM trajectory could not be loaded. Line numbers start at 1.
public indirect enum TUMTrajectoryError: Error, Sendable, Hashable, CustomStringConvertible {
    case wrongFieldCount(line: Int, count: Int)
    case notANumber(line: Int, field: String, text: String)
    case nonFinite(line: Int, field: String, text: String)
    case nonIncreasingTimestamp(line: Int, timestamp: Double, previous: Double)
    case zeroQuaternion(line: Int)
    case noSamples
    case unreadable(path: String, reason: String)
    case inFile(path: String, TUMTrajectoryError)

    /// The line the error is about, if any.
    public var line: Int? {
        switch self {
        case .wrongFieldCount(let line, _), .notANumber(let line, _, _), .nonFinite(let line, _, _),
             .nonIncreasingTimestamp(let line, _, _), .zeroQuaternion(let line): line
        case .noSamples, .unreadable: nil
        case .inFile(_, let error): error.line
        }
    }

    public var description: String {
        switch self {
        case .wrongFieldCount(let line, let count):
            "line \(line): expected 8 fields (timestamp tx ty tz qx qy qz qw), found \(count)"
        case .notANumber(let line, let field, let text): "line \(line): \(field) \"\(text)\" is not a number"
        case .nonFinite(let line, let field, let text):
            "line \(line): \(field) \(text) is not finite (or too large for a 32-bit float)"
        case .nonIncreasingTimestamp(let line, let timestamp, let previous):
            "line \(line): timestamp \(timestamp) does not increase (previous sample is at \(previous))"
        case .zeroQuaternion(let line): "line \(line): quaternion qx qy qz qw is zero, so it is no rotation"
        case .noSamples: "the trajectory has no samples (only comments or blank lines)"
        case .unreadable(let path, let reason): "cannot read trajectory file \(path): \(reason)"
        case .inFile(let path, let error): "\(path): \(error)"
        }
    }
}
