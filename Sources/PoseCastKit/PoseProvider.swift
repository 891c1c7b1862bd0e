/// Gives the publisher the pose of each captured frame, whatever the video source.
/// The result always passes `PoseWireFormat.encode`: when there is no trustworthy pose the
/// frame is flagged (`.late`, `.missing`) rather than given an invented one.
public protocol PoseProvider: Sendable {
    /// The pose of frame `frameID`, captured at `captureTimeNanos` (host wall clock, ns
    /// since the Unix epoch).
    func pose(frameID: UInt32, captureTimeNanos: UInt64) -> FramePose
}

extension FramePose {
    /// A frame without a pose: flagged `.missing`, identity at the origin as a placeholder
    /// that readers must not use (the flag says so). The intrinsics stay meaningful.
    public static func missing(frameID: UInt32, captureTimeNanos: UInt64, intrinsics: CameraIntrinsics) -> FramePose {
        FramePose(flags: .missing, frameID: frameID, captureTimeNanos: captureTimeNanos,
                  position: .zero, orientation: .identity, intrinsics: intrinsics)
    }
}

/// Poses from a trajectory known in advance, timed from `startNanos`.
public struct TrajectoryPoseProvider: PoseProvider {
    public var trajectory: any CameraTrajectory
    public var intrinsics: CameraIntrinsics
    /// Host time (ns since the Unix epoch) that is second 0 of the trajectory.
    public var startNanos: UInt64

    /// `intrinsics` must pass `PoseFeedLine.validate` (check options with it first): every
    /// frame carries them, and invalid ones could not go on the wire.
    public init(trajectory: any CameraTrajectory, intrinsics: CameraIntrinsics, startNanos: UInt64) {
        precondition((try? PoseFeedLine.validate(intrinsics)) != nil, "invalid intrinsics \(intrinsics)")
        self.trajectory = trajectory; self.intrinsics = intrinsics; self.startNanos = startNanos
    }

    public func pose(frameID: UInt32, captureTimeNanos: UInt64) -> FramePose {
        // Signed: a frame stamped just before the start is a small negative time, not 584 years.
        let seconds = Double(Int64(bitPattern: captureTimeNanos &- startNanos)) / 1e9
        guard let rigid = trajectory.pose(at: seconds), let pose = WirePose(rigid) else {
            return .missing(frameID: frameID, captureTimeNanos: captureTimeNanos, intrinsics: intrinsics)
        }
        return FramePose(frameID: frameID, captureTimeNanos: captureTimeNanos, position: pose.position,
                         orientation: pose.orientation, intrinsics: intrinsics)
    }
}

/// Poses from a live tracker feed (`LivePoseStore`), matched to each frame by time.
///
/// The pose at the capture time is interpolated between the samples around it, or taken
/// from the nearest sample at either end. When the nearest sample is more than `lateAfter`
/// seconds from the capture time the frame is flagged `.late`; beyond `missingAfter`, or
/// with no sample at all, `.missing` with a placeholder pose. Intrinsics are the last ones
/// the feed sent (`k`), else `defaultIntrinsics`.
public struct LivePoseProvider: PoseProvider {
    public let store: LivePoseStore
    public var defaultIntrinsics: CameraIntrinsics
    public var lateAfter: Double
    public var missingAfter: Double

    /// `defaultIntrinsics` must pass `PoseFeedLine.validate` (check options with it first).
    public init(store: LivePoseStore, defaultIntrinsics: CameraIntrinsics, lateAfter: Double = 0.05,
                missingAfter: Double = 1) {
        precondition((try? PoseFeedLine.validate(defaultIntrinsics)) != nil, "invalid intrinsics \(defaultIntrinsics)")
        self.store = store; self.defaultIntrinsics = defaultIntrinsics
        self.lateAfter = lateAfter; self.missingAfter = missingAfter
    }

    public func pose(frameID: UInt32, captureTimeNanos: UInt64) -> FramePose {
        guard let found = store.resolve(atNanos: captureTimeNanos) else {
            return .missing(frameID: frameID, captureTimeNanos: captureTimeNanos, intrinsics: defaultIntrinsics)
        }
        let intrinsics = found.intrinsics ?? defaultIntrinsics
        let gap = Double(found.gapNanos) / 1e9
        guard gap <= missingAfter, let pose = WirePose(found.pose) else {
            return .missing(frameID: frameID, captureTimeNanos: captureTimeNanos, intrinsics: intrinsics)
        }
        return FramePose(flags: gap > lateAfter ? .late : [], frameID: frameID, captureTimeNanos: captureTimeNanos,
                         position: pose.position, orientation: pose.orientation, intrinsics: intrinsics)
    }
}

/// A pose made safe for the wire: finite, unit quaternion. Nil when it cannot be.
private struct WirePose {
    var position: Vector3
    var orientation: Quaternion

    init?(_ pose: RigidPose) {
        guard pose.isFinite, pose.orientation.norm > 0.5 else { return nil }
        let unit = pose.orientation.normalized
        guard unit.isFinite, abs(unit.norm - 1) <= PoseWireFormat.unitTolerance else { return nil }
        position = pose.position; orientation = unit
    }
}

/// Where the publisher's poses come from, as given on the command line (`--pose`).
public enum PoseSourceSpec: Sendable, Hashable, CustomStringConvertible {
    /// Synthetic paths a `shake` can wrap.
    public enum SyntheticPath: String, Sendable, Hashable, CaseIterable {
        case orbit, walk
    }

    /// `orbit`: circling the scene (`OrbitTrajectory`).
    case orbit
    /// `walk`: walking around the scene at eye height (`WalkTrajectory`).
    case walk
    /// `pan`: standing still, turning side to side at 30°/s (`PanTrajectory`).
    case pan
    /// `shake` (around the orbit) or `shake:walk`: hand-held jitter on a synthetic path.
    case shake(around: SyntheticPath)
    /// `tum:PATH`: replay of a TUM RGB-D trajectory file (OpenCV camera axes, looping).
    case tum(path: String)
    /// `stdin`: live JSON-lines feed on standard input.
    case stdin
    /// `udp:PORT` (on 127.0.0.1) or `udp:HOST:PORT` (`udp:[::1]:PORT` for IPv6): live
    /// JSON-lines feed in datagrams.
    case udp(host: String, port: Int)
    /// `apriltag` or `apriltag:MAP`: from the AprilTags each frame shows, placed by a tag
    /// map (a JSON file; without one, a 16 cm tag 0 lying at the origin). The pose is the
    /// frame's own, found in its pixels; a frame without a known tag is flagged missing.
    case apriltag(map: String?)

    /// Every accepted form, for help texts and error messages.
    public static let syntax = "orbit, walk, pan, shake, shake:walk, tum:PATH, stdin, udp:PORT, udp:HOST:PORT, apriltag or apriltag:MAP"
    /// Host of `udp:PORT`: loopback, so an unauthenticated pose input is not opened to the
    /// network unless asked for (`udp:0.0.0.0:PORT`).
    public static let defaultUDPHost = "127.0.0.1"

    public static func parse(_ text: String) throws(PoseSourceError) -> PoseSourceSpec {
        func fail(_ reason: String) -> PoseSourceError { .invalidSpec(text, reason: reason) }
        let name = text.prefix { $0 != ":" }
        let argument: Substring? = name.endIndex < text.endIndex ? text[text.index(after: name.endIndex)...] : nil
        switch name {
        case "orbit", "walk", "pan", "stdin":
            guard argument == nil else { throw fail("\(name) takes no argument") }
            return name == "orbit" ? .orbit : name == "walk" ? .walk : name == "pan" ? .pan : .stdin
        case "shake":
            guard let argument else { return .shake(around: .orbit) }
            guard let path = SyntheticPath(rawValue: String(argument)) else {
                throw fail("shake wraps orbit or walk, not \"\(argument)\"")
            }
            return .shake(around: path)
        case "tum":
            guard let argument, !argument.isEmpty else { throw fail("tum needs a file path, e.g. tum:groundtruth.txt") }
            return .tum(path: String(argument))
        case "apriltag":
            guard let argument else { return .apriltag(map: nil) }
            guard !argument.isEmpty else { throw fail("apriltag: names a tag map file after the colon") }
            return .apriltag(map: String(argument))
        case "udp":
            guard let argument, !argument.isEmpty else { throw fail("udp needs a port, e.g. udp:5005 or udp:0.0.0.0:5005") }
            return try parseUDP(argument, fail)
        case "":
            throw fail("empty pose source; expected \(syntax)")
        default:
            throw fail("unknown pose source \"\(name)\"; expected \(syntax)")
        }
    }

    private static func parseUDP(_ argument: Substring, _ fail: (String) -> PoseSourceError) throws(PoseSourceError) -> PoseSourceSpec {
        var host = defaultUDPHost
        var portText = argument
        if argument.hasPrefix("[") {
            guard let close = argument.firstIndex(of: "]"), argument[argument.index(after: close)...].hasPrefix(":") else {
                throw fail("an IPv6 host is written [ADDRESS]:PORT")
            }
            host = String(argument[argument.index(after: argument.startIndex)..<close])
            portText = argument[argument.index(close, offsetBy: 2)...]
        } else if let colon = argument.lastIndex(of: ":") {
            host = String(argument[..<colon])
            portText = argument[argument.index(after: colon)...]
            guard !host.contains(":") else { throw fail("write an IPv6 host in brackets: udp:[\(host)]:\(portText)") }
        }
        guard !host.isEmpty else { throw fail("the host before the port is empty") }
        guard let port = Int(portText) else { throw fail("port \"\(portText)\" is not a number") }
        guard (0...65535).contains(port) else { throw fail("port \(port) is outside 0…65535") }
        return .udp(host: host, port: port)
    }

    /// True for the feeds a tracker sends while running (stdin, UDP).
    public var isLive: Bool {
        switch self {
        case .stdin, .udp: true
        case .orbit, .walk, .pan, .shake, .tum, .apriltag: false
        }
    }

    /// The trajectory of a synthetic or file source, nil for a live feed. `speed` multiplies
    /// the orbit's angular speed, the walking speed, the shake frequencies (not the path
    /// under it) or the replay rate; a live feed runs at the tracker's pace, so only 1 is
    /// accepted there. Loads the TUM file.
    public func trajectory(speed: Double = 1, seed: UInt64 = 1) throws(PoseSourceError) -> (any CameraTrajectory)? {
        guard speed.isFinite, speed > 0, speed <= 1000 else { throw .invalidSpeed(speed) }
        switch self {
        case .orbit: return Self.orbit(speed: speed)
        case .pan: return PanTrajectory(degreesPerSecond: 30 * speed)
        case .walk: return Self.walk(speed: speed)
        case .shake(let around):
            let base: any CameraTrajectory = around == .orbit ? Self.orbit(speed: 1) : Self.walk(speed: 1)
            return ShakeTrajectory(base: base, frequencyScale: speed, seed: seed)
        case .tum(let path):
            do { return try TUMTrajectory(contentsOfFile: path, playbackRate: speed) } catch { throw .trajectory(error) }
        case .stdin, .udp, .apriltag:
            guard speed == 1 else { throw .speedNotApplicable(self) }
            return nil
        }
    }

    /// The provider for this source: a trajectory timed from `startNanos`, or the live
    /// `store` (which a receiver must fill; see PoseFeedReceiver in Publisher).
    public func makeProvider(speed: Double = 1, intrinsics: CameraIntrinsics, startNanos: UInt64,
                             store: LivePoseStore) throws(PoseSourceError) -> any PoseProvider {
        do { try PoseFeedLine.validate(intrinsics) } catch { throw .invalidIntrinsics(error) }
        guard let trajectory = try trajectory(speed: speed) else {
            return LivePoseProvider(store: store, defaultIntrinsics: intrinsics)
        }
        return TrajectoryPoseProvider(trajectory: trajectory, intrinsics: intrinsics, startNanos: startNanos)
    }

    private static func orbit(speed: Double) -> OrbitTrajectory {
        // The provider stamps the frame's intrinsics; the orbit's own are unused here.
        OrbitTrajectory(degreesPerSecond: Float(30 * speed), intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4 / 3))
    }

    private static func walk(speed: Double) -> WalkTrajectory { WalkTrajectory(metresPerSecond: 0.6 * speed) }

    public var description: String {
        switch self {
        case .orbit: "orbit"
        case .walk: "walk"
        case .pan: "pan"
        case .shake(let around): around == .orbit ? "shake" : "shake:\(around.rawValue)"
        case .tum(let path): "tum:\(path)"
        case .stdin: "stdin"
        case .udp(let host, let port): host.contains(":") ? "udp:[\(host)]:\(port)" : "udp:\(host):\(port)"
        case .apriltag(let map): map.map { "apriltag:\($0)" } ?? "apriltag"
        }
    }
}

/// Why a pose source could not be set up.
public enum PoseSourceError: Error, Sendable, Hashable, CustomStringConvertible {
    case invalidSpec(String, reason: String)
    case invalidSpeed(Double)
    case speedNotApplicable(PoseSourceSpec)
    case invalidIntrinsics(PoseFeedError)
    case trajectory(TUMTrajectoryError)

    public var description: String {
        switch self {
        case .invalidSpec(let text, let reason): "pose source \"\(text)\": \(reason)"
        case .invalidSpeed(let speed): "pose speed \(speed) must be a finite number in (0, 1000]"
        case .speedNotApplicable(let spec): "pose speed applies to synthetic and file sources, not to \(spec), which runs at the camera's pace"
        case .invalidIntrinsics(let error): "camera intrinsics: \(error)"
        case .trajectory(let error): "pose trajectory: \(error)"
        }
    }
}
