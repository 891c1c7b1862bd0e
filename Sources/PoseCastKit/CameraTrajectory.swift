#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a camera is and which way it faces: camera-to-world, camera looking down −Z with +Y up.
/// A `FramePose` without the frame bookkeeping, which is what a trajectory knows.
public struct RigidPose: Sendable, Hashable {
    public var position: Vector3
    /// Camera-to-world rotation (unit quaternion).
    public var orientation: Quaternion

    public init(position: Vector3, orientation: Quaternion) {
        self.position = position; self.orientation = orientation
    }

    /// True when every component is finite, so the pose can go on the wire.
    public var isFinite: Bool { position.isFinite && orientation.isFinite }
}

/// A camera path known in advance (synthetic, or replayed from a file), sampled by time.
public protocol CameraTrajectory: Sendable {
    /// The pose `seconds` after the trajectory's start; nil when it has no pose for that
    /// time (before the start or after the end of a recording that does not loop).
    func pose(at seconds: Double) -> RigidPose?
}

/// A person walking around the work area at eye height while looking at it: the camera
/// follows a rounded rectangle centred on the origin at constant speed, always facing `target`.
///
/// The loop is parametrised by arc length, so the speed is exactly `metresPerSecond`
/// everywhere, and the corners are quarter circles tangent to the sides, so neither the
/// position nor the heading jumps.
public struct WalkTrajectory: CameraTrajectory {
    /// Extent of the loop along world x (metres).
    public var width: Float = 7
    /// Extent of the loop along world z (metres).
    public var depth: Float = 5
    /// Radius of the rounded corners (metres), clamped to half the shorter side.
    public var cornerRadius: Float = 1.5
    /// Height of the camera above the ground, y = 0 (metres).
    public var eyeHeight: Float = 1.6
    public var metresPerSecond: Double = 0.6
    /// The point the camera keeps looking at.
    public var target = Vector3(0, 0.3, 0)

    public init(width: Float = 7, depth: Float = 5, cornerRadius: Float = 1.5, eyeHeight: Float = 1.6,
                metresPerSecond: Double = 0.6, target: Vector3 = Vector3(0, 0.3, 0)) {
        self.width = width; self.depth = depth; self.cornerRadius = cornerRadius
        self.eyeHeight = eyeHeight; self.metresPerSecond = metresPerSecond; self.target = target
    }

    /// Length of one lap (metres).
    public var perimeter: Double {
        let (w, d, r) = dimensions
        return 2 * (w - 2 * r) + 2 * (d - 2 * r) + 2 * .pi * r
    }

    public func pose(at seconds: Double) -> RigidPose? {
        let lap = perimeter
        let travelled = seconds * metresPerSecond
        guard travelled.isFinite, lap.isFinite, lap > 0 else { return nil }
        var s = travelled.truncatingRemainder(dividingBy: lap)
        if s < 0 { s += lap }
        let (x, z) = groundPoint(atArcLength: s)
        let eye = Vector3(Float(x), eyeHeight, Float(z))
        return RigidPose(position: eye, orientation: .lookAt(eye: eye, target: target))
    }

    /// Width, depth and corner radius in Double, made consistent: sides at least 1 cm,
    /// radius between 1 cm and half the shorter side.
    private var dimensions: (Double, Double, Double) {
        let w = max(Double(width), 0.01), d = max(Double(depth), 0.01)
        let r = min(max(Double(cornerRadius), 0.005), min(w, d) / 2)
        return (w, d, r)
    }

    /// The point at arc length `s` ∈ [0, perimeter) on the ground: starting at the left end
    /// of the +z side heading +x, then turning towards −z (counter-clockwise seen from above).
    private func groundPoint(atArcLength s: Double) -> (Double, Double) {
        let (w, d, r) = dimensions
        let hx = w / 2 - r, hz = d / 2 - r
        let straightX = 2 * hx, straightZ = 2 * hz, arc = .pi / 2 * r
        // Corner k is centred at (±hx, ±hz); its arc runs from angle kπ/2 to (k+1)π/2,
        // a point on it being centre + r (sin φ, cos φ): 0 points +z, π/2 points +x.
        let corners: [(Double, Double)] = [(hx, hz), (hx, -hz), (-hx, -hz), (-hx, hz)]
        // Each side leads into the corner of the same index.
        let sides: [(start: (Double, Double), direction: (Double, Double), length: Double)] = [
            ((-hx, d / 2), (1, 0), straightX), ((w / 2, hz), (0, -1), straightZ),
            ((hx, -d / 2), (-1, 0), straightX), ((-w / 2, -hz), (0, 1), straightZ),
        ]
        var rest = s
        for k in 0..<4 {
            let side = sides[k]
            if rest < side.length {
                return (side.start.0 + side.direction.0 * rest, side.start.1 + side.direction.1 * rest)
            }
            rest -= side.length
            if rest < arc || k == 3 {
                let phi = Double(k) * .pi / 2 + min(rest, arc) / r
                return (corners[k].0 + r * sin(phi), corners[k].1 + r * cos(phi))
            }
            rest -= arc
        }
        return (sides[0].start.0, sides[0].start.1)
    }
}

/// Hand-held shake on top of any trajectory: small rotation and position jitter from a sum
/// of a few incommensurate sinusoids per axis, so it looks irregular but is band-limited
/// (no frame-to-frame noise) and bounded by the amplitudes. Phases come from `seed`, so
/// the same seed gives the same shake, which tests and benchmarks rely on.
public struct ShakeTrajectory: CameraTrajectory {
    public var base: any CameraTrajectory
    /// Largest rotation jitter about each camera axis (degrees).
    public var rotationAmplitudeDegrees: Double = 0.8
    /// Largest position jitter along each camera axis (metres).
    public var positionAmplitudeMetres: Double = 0.004
    /// Multiplies every shake frequency (2 = twice as nervous).
    public var frequencyScale: Double = 1
    public let seed: UInt64
    /// Phases of the six channels (rx, ry, rz, px, py, pz), one per sinusoid.
    private let phases: [[Double]]

    /// Frequencies (Hz) and weights of the sinusoids of one channel. The ratios are
    /// irrational, so the sum never repeats; the weights add to 1, so the channel stays
    /// within ±1 × amplitude. Hand tremor and sway live roughly between 0.3 and 3 Hz.
    static let components: [(frequency: Double, weight: Double)] = [
        (0.37, 0.40), (0.37 * 2.0.squareRoot() * 1.5, 0.30), (0.37 * .pi * 1.1, 0.20), (0.37 * 5.0.squareRoot() * 3.3, 0.10),
    ]

    public init(base: any CameraTrajectory, rotationAmplitudeDegrees: Double = 0.8,
                positionAmplitudeMetres: Double = 0.004, frequencyScale: Double = 1, seed: UInt64 = 1) {
        self.base = base; self.rotationAmplitudeDegrees = rotationAmplitudeDegrees
        self.positionAmplitudeMetres = positionAmplitudeMetres; self.frequencyScale = frequencyScale
        self.seed = seed
        var random = SplitMix64(seed: seed)
        phases = (0..<6).map { _ in Self.components.map { _ in random.nextUnitDouble() * 2 * .pi } }
    }

    public func pose(at seconds: Double) -> RigidPose? {
        guard let pose = base.pose(at: seconds) else { return nil }
        let jitter = (0..<6).map { channel(at: seconds, $0) }
        guard jitter.allSatisfy(\.isFinite) else { return nil }
        let radians = rotationAmplitudeDegrees * .pi / 180
        let wobble = Quaternion(axis: Vector3(1, 0, 0), angleRadians: Float(jitter[0] * radians))
            * Quaternion(axis: Vector3(0, 1, 0), angleRadians: Float(jitter[1] * radians))
            * Quaternion(axis: Vector3(0, 0, 1), angleRadians: Float(jitter[2] * radians))
        let offset = Vector3(Float(jitter[3]), Float(jitter[4]), Float(jitter[5])) * Float(positionAmplitudeMetres)
        // Both jitters are in camera axes: a hand shakes the camera, not the world.
        return RigidPose(position: pose.position + pose.orientation.rotate(offset),
                         orientation: (pose.orientation * wobble).normalized)
    }

    /// Channel `index` at time `seconds`, in [−1, 1]. Phases are reduced to one cycle in
    /// Double so long runs keep their precision.
    private func channel(at seconds: Double, _ index: Int) -> Double {
        var sum = 0.0
        for (i, component) in Self.components.enumerated() {
            let cycles = (seconds * component.frequency * frequencyScale).truncatingRemainder(dividingBy: 1)
            sum += component.weight * sin(2 * .pi * cycles + phases[index][i])
        }
        return sum
    }
}
