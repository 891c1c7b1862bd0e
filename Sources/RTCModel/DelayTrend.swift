/// Whether a path's one-way delay is growing, from the *change* of delay between frames
/// (a trendline over delay gradients, as Google Congestion Control's delay-based
/// detector): a pure state machine fed each packet of one RTP stream as it arrives.
///
/// `OneWayQueue` reads the queue itself (this window's lowest transit over a base), so
/// it sees a queue once it is a few reports deep, and has to tell a longer path from a
/// queue by waiting. The gradient sees a queue start: a link that is full delays each
/// frame a little more than the one before, whatever the path's length, and a longer
/// path changes the delay once, which the gradient forgets within its window.
///
/// - **Groups**: the packets of one frame (one RTP timestamp) are a group; its send
///   time is the timestamp (the capture time: our sender has no send-time extension),
///   its arrival the arrival of its last packet, which is when a full link let it out.
/// - **Gradient**: between consecutive groups, arrival spacing − send spacing, at most
///   `stepShare` of the send spacing either way: a queue adds a little to every frame
///   (3 ms a frame at 10 % over the link), a longer path all at once, once (+40 ms in one
///   gradient read as overuse for half a second, and the sender cut); so is a keyframe's
///   burst, which the next frames give back. Summed
///   (the delay since the first group, any offset), smoothed exponentially
///   (`smoothing`), and the slope of the last `windowGroups` smoothed points against
///   their arrival times is the trend: how many ms of delay each ms adds.
/// - **Usage**: the trend times the number of gradients (up to 60) times `gain`,
///   against a threshold that adapts to the path's own jitter (up quickly towards large
///   values, down slowly; `thresholdMs…`): over it for `overuseMs` and two groups in a
///   row while the trend still rises: `overusing`; under minus it: `underusing` (a
///   queue draining); else `normal`.
public struct DelayTrend: Sendable {
    public enum Usage: String, Sendable, Codable, Hashable {
        case normal, overusing, underusing
    }

    public var windowGroups = 20
    public var smoothing = 0.9
    public var gain = 4.0
    public var thresholdRange = 6.0...600.0
    /// Threshold adaptation per ms (GCC's k_up and k_down).
    public var thresholdUp = 0.0087
    public var thresholdDown = 0.039
    public var overuseMs = 10.0
    /// The largest gradient taken, as a share of the send spacing (see above).
    public var stepShare = 0.5

    /// The current usage and the last modified trend (ms, comparable with the threshold).
    public private(set) var usage = Usage.normal
    public private(set) var modifiedTrend = 0.0
    public private(set) var threshold: Double

    private var current: (sendMs: Double, arrivalMs: Double)?
    private var previous: (sendMs: Double, arrivalMs: Double)?
    private var firstArrivalMs: Double?
    private var accumulated = 0.0
    private var smoothed = 0.0
    private var points: [(x: Double, y: Double)] = []
    private var gradients = 0
    private var lastTrend = 0.0
    private var overuseTime = 0.0
    private var overuseGroups = 0
    private var lastThresholdUpdateMs: Double?

    /// `thresholdMs`: where the adaptive threshold starts (GCC's 12.5).
    public init(thresholdMs: Double = 12.5) { threshold = thresholdMs }

    /// One packet: its send time (the RTP timestamp in ms, any origin) and arrival (ms,
    /// any origin). Packets of an older group than the current (reordered) are ignored.
    /// Returns the usage when this packet completed a group, else nil.
    @discardableResult
    public mutating func add(sendMs: Double, arrivalMs: Double) -> Usage? {
        guard let group = current else {
            current = (sendMs, arrivalMs)
            return nil
        }
        if sendMs == group.sendMs {
            current = (group.sendMs, max(group.arrivalMs, arrivalMs))
            return nil
        }
        guard sendMs > group.sendMs else { return nil }
        // A new frame: the current group is complete.
        current = (sendMs, arrivalMs)
        defer { previous = group }
        guard let before = previous else { return nil }
        let sendDelta = group.sendMs - before.sendMs
        let arrivalDelta = group.arrivalMs - before.arrivalMs
        // A gap of seconds (an outage, a wrap) is no gradient: start again.
        guard sendDelta < 1000, abs(arrivalDelta) < 3000 else {
            reset()
            return nil
        }
        let limit = stepShare * sendDelta
        let gradient = min(max(arrivalDelta - sendDelta, -limit), limit)
        return update(gradient: gradient, arrivalMs: group.arrivalMs, sendDelta: sendDelta)
    }

    private mutating func reset() {
        previous = nil
        firstArrivalMs = nil
        accumulated = 0
        smoothed = 0
        points.removeAll()
        gradients = 0
        lastTrend = 0
        overuseTime = 0
        overuseGroups = 0
        usage = .normal
    }

    private mutating func update(gradient: Double, arrivalMs: Double, sendDelta: Double) -> Usage {
        gradients += 1
        accumulated += gradient
        smoothed = smoothing * smoothed + (1 - smoothing) * accumulated
        let first = firstArrivalMs ?? arrivalMs
        firstArrivalMs = first
        points.append((arrivalMs - first, smoothed))
        if points.count > windowGroups { points.removeFirst(points.count - windowGroups) }
        var trend = lastTrend
        if points.count == windowGroups, let slope = Self.slope(points) { trend = slope }
        detect(trend: trend, sendDelta: sendDelta, nowMs: arrivalMs)
        lastTrend = trend
        return usage
    }

    private mutating func detect(trend: Double, sendDelta: Double, nowMs: Double) {
        guard gradients >= 2 else { return }
        modifiedTrend = Double(min(gradients, 60)) * trend * gain
        if modifiedTrend > threshold {
            overuseTime += sendDelta
            overuseGroups += 1
            if overuseTime > overuseMs, overuseGroups > 1, trend >= lastTrend {
                overuseTime = 0
                overuseGroups = 0
                usage = .overusing
            }
        } else if modifiedTrend < -threshold {
            overuseTime = 0
            overuseGroups = 0
            usage = .underusing
        } else {
            overuseTime = 0
            overuseGroups = 0
            usage = .normal
        }
        adaptThreshold(nowMs: nowMs)
    }

    /// Towards |trend| (a path whose jitter is large needs a larger threshold), but not
    /// for a single spike far over it.
    private mutating func adaptThreshold(nowMs: Double) {
        let last = lastThresholdUpdateMs ?? nowMs
        lastThresholdUpdateMs = nowMs
        let size = abs(modifiedTrend)
        guard size <= threshold + 15 else { return }
        let k = size < threshold ? thresholdDown : thresholdUp
        let elapsed = min(max(nowMs - last, 0), 100)
        threshold = min(max(threshold + k * (size - threshold) * elapsed, thresholdRange.lowerBound), thresholdRange.upperBound)
    }

    /// The least-squares slope of y over x; nil when x does not vary.
    static func slope(_ points: [(x: Double, y: Double)]) -> Double? {
        let n = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.x } / n, meanY = points.reduce(0) { $0 + $1.y } / n
        var numerator = 0.0, denominator = 0.0
        for p in points {
            numerator += (p.x - meanX) * (p.y - meanY)
            denominator += (p.x - meanX) * (p.x - meanX)
        }
        return denominator > 0 ? numerator / denominator : nil
    }
}
