/// The size the shared encoder gets under congestion control, as a pure state machine:
/// feed it the rate congestion control allows (`PublisherMedia.adaptBitrate`, a few times
/// a second), read `width` × `height`. Below a bitrate the camera's full size is too big
/// for the link: the encoder then skips frames unevenly (vp8enc's `dropframe-threshold`)
/// and every keyframe is a burst the link's buffer barely holds. A picture half as wide
/// and half as high needs about a quarter of the bits for the same quality, its
/// keyframes are a quarter of the size, and the frame rate stays (libwebrtc's
/// "maintain frame rate" degradation, its quality scaler's steps).
///
/// The pose needs nothing: intrinsics are normalised to the picture (docs/POSE_WIRE_FORMAT.md),
/// so a uniformly scaled frame keeps its pose exact; the publisher scales after the pose
/// is attached and the annotations drawn, just before the encoder.
///
/// - **Down** one step (half the width and height, never below `minimumWidth` ×
///   `minimumHeight`, nor past `maxDownscale`) once the allowed rate has been under
///   `downKbps` for the current size for `downAfterNanos`.
/// - **Up** one step once it has been over `upKbps` for the larger size for the up
///   wait (`upAfterNanos`). The band between the two keeps one size while the rate
///   hovers. A step down within `failedUpNanos` of a step up means the larger size did
///   not fit: the next up wait doubles (to at most `maxUpAfterNanos`); a size held for
///   `failedUpNanos` resets it.
/// - No step within `spacingNanos` of the last (each costs a keyframe and the encoder's
///   rate control starts over).
///
/// Thresholds scale with the pixel rate: `downKbpsVGA30` and `upKbpsVGA30` are for
/// 640×480 at 30 fps (measured here: under about 350 kbit/s VP8 at 640×480 skips frames;
/// 320×240 at 200 kbit/s keeps 30 fps; docs/NETWORK.md).
public struct ResolutionLadder: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// The camera's size and frame rate (what step 0 is).
        public var width: Int, height: Int, fps: Int
        /// The largest divisor of the width and height (1: never scale; 2: half; 4: a quarter).
        public var maxDownscale = 4
        public var minimumWidth = 320, minimumHeight = 180
        public var downKbpsVGA30 = 350.0
        public var upKbpsVGA30 = 490.0
        public var downAfterNanos: UInt64 = 1_000_000_000
        public var upAfterNanos: UInt64 = 3_000_000_000
        public var maxUpAfterNanos: UInt64 = 24_000_000_000
        public var failedUpNanos: UInt64 = 10_000_000_000
        public var spacingNanos: UInt64 = 4_000_000_000

        public init(width: Int, height: Int, fps: Int, maxDownscale: Int = 4) {
            self.width = width; self.height = height; self.fps = fps; self.maxDownscale = maxDownscale
        }

        /// The divisors allowed: 1, 2, 4 … while within `maxDownscale` and the minimum size.
        public var divisors: [Int] {
            var out = [1]
            while let last = out.last, last * 2 <= maxDownscale,
                  width / (last * 2) >= minimumWidth, height / (last * 2) >= minimumHeight {
                out.append(last * 2)
            }
            return out
        }

        /// The size at a divisor: each side divided and rounded down to even (I420's chroma).
        public func size(divisor: Int) -> (width: Int, height: Int) {
            (width / divisor & ~1, height / divisor & ~1)
        }

        /// The rate (kbit/s) a size needs at this frame rate, from a 640×480@30 figure.
        func kbps(_ vga30: Double, divisor: Int) -> Double {
            let s = size(divisor: divisor)
            return vga30 * Double(s.width * s.height * fps) / Double(640 * 480 * 30)
        }
    }

    public let configuration: Configuration
    /// The current divisor of the camera's width and height (1: full size).
    public private(set) var divisor = 1
    /// Steps taken so far, down and up.
    public private(set) var stepsDown = 0, stepsUp = 0
    private var belowSince: UInt64?
    private var aboveSince: UInt64?
    private var lastStep: (nanos: UInt64, up: Bool)?
    private var upWaitNanos: UInt64

    public init(configuration: Configuration) {
        self.configuration = configuration
        upWaitNanos = configuration.upAfterNanos
    }

    public var width: Int { configuration.size(divisor: divisor).width }
    public var height: Int { configuration.size(divisor: divisor).height }
    /// How long the rate must stay high before the next step up (it doubles after a failed one).
    public var upWait: UInt64 { upWaitNanos }

    /// Feeds the rate allowed now; true when the size changed.
    public mutating func update(allowedKbps: Int, nowNanos: UInt64) -> Bool {
        let c = configuration
        let divisors = c.divisors
        let index = divisors.firstIndex(of: divisor) ?? 0
        let rate = Double(allowedKbps)
        // A size held long enough after a step up fits: the up wait starts over.
        if let last = lastStep, last.up, nowNanos &- last.nanos >= c.failedUpNanos { upWaitNanos = c.upAfterNanos }
        let canDown = index + 1 < divisors.count && rate < c.kbps(c.downKbpsVGA30, divisor: divisor)
        let canUp = index > 0 && rate > c.kbps(c.upKbpsVGA30, divisor: divisors[index - 1])
        belowSince = canDown ? (belowSince ?? nowNanos) : nil
        aboveSince = canUp ? (aboveSince ?? nowNanos) : nil
        let spaced = lastStep.map { nowNanos &- $0.nanos >= c.spacingNanos } ?? true
        guard spaced else { return false }
        if let since = belowSince, nowNanos &- since >= c.downAfterNanos {
            if let last = lastStep, last.up, nowNanos &- last.nanos < c.failedUpNanos {
                upWaitNanos = min(upWaitNanos * 2, c.maxUpAfterNanos)
            }
            divisor = divisors[index + 1]
            stepsDown += 1
            step(up: false, at: nowNanos)
            return true
        }
        if let since = aboveSince, nowNanos &- since >= upWaitNanos {
            divisor = divisors[index - 1]
            stepsUp += 1
            step(up: true, at: nowNanos)
            return true
        }
        return false
    }

    private mutating func step(up: Bool, at nowNanos: UInt64) {
        lastStep = (nowNanos, up)
        belowSince = nil
        aboveSince = nil
    }
}
