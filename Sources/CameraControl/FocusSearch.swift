#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Contrast-detect autofocus as a pure state machine: one call per frame with that
/// frame's sharpness and the lens position it was taken at; the answer says where the
/// lens goes next. No camera, no clock: `CameraMeter` feeds it and applies its moves.
///
/// 1. **Coarse sweep** over `coarseGrid` from infinity towards the near end (most things
///    worth focusing on are beyond a metre, so a far-first sweep usually ends early),
///    one move per frame, pipelined: the sweep does not wait for measurements to come
///    back. The grid is denser at the far end; it is even in dioptres, as lens position
///    is. The sweep stops once it has clearly passed a peak.
/// 2. **Fine search** around the best sample, one probe at a time. Defocus blurs
///    sharpness away roughly exponentially in dioptres, so log-sharpness near the peak is
///    a "V": each probe goes where two lines of equal and opposite slope through the best
///    sample and its neighbours meet (equiangular peak interpolation; with a parabola
///    through the best three as the fallback when the V is degenerate), tightened towards
///    the best sample while a bracket side is still too wide to give a local slope.
/// 3. **Settle**: the lens goes to the interpolated peak; the search ends on the
///    measurement of that position (`converged`), or goes back to the best sample when
///    the interpolation did worse.
///
/// A flat sweep (best over worst below `flatRatio`: no contrast) ends `diverged`.
///
/// A search compares frames taken one after another, so it assumes the view holds still
/// while it runs. When the view changed under it (a camera orbiting past a nearer object,
/// a hand moving through the frame) the peak it found belongs to a picture no longer
/// there: the last measurement at the chosen position comes out far below the sharpest
/// single frame of the search (`sceneChangeRatio`), and the search ends `sceneChanged`
/// instead of claiming a peak (the caller searches again).
///
/// Latency: a move made on frame n shows in the measurement of frame n + `latency`.
/// The caller passes, with every measurement, the lens position that frame really was
/// taken at (so pipelined probes are attributed correctly), and the search does not act
/// on a fine probe before `latency` frames have passed.
struct FocusSearch {
    struct Configuration: Sendable, Hashable {
        /// Lens positions of the coarse sweep, far (0) to near (1).
        var coarseGrid: [Double] = [0, 0.04, 0.1, 0.18, 0.3, 0.5, 0.75, 1]
        /// Lens-position precision at which the fine search stops.
        var tolerance = 0.0012
        /// A bracket side this narrow (lens position) gives a local slope: settle when the
        /// estimate agrees with the best sample.
        var localSpan = 0.02
        /// Frames (from the first, at latency 1) after which the search settles on its best
        /// estimate; each frame of latency beyond 1 adds `latencyAllowance` frames.
        var frameBudget = 12
        var latencyAllowance = 6
        /// Best over worst sharpness of the sweep below which there is no peak to find.
        var flatRatio = 1.25
        /// Frames between a move and a measurement that shows it.
        var latency = 1
        /// Positions closer than this are the same position (the camera may round what it
        /// is sent: half its step, at least float rounding).
        var positionEpsilon = 1e-5
        /// The view changed during the search when the frame measured at the chosen
        /// position is below this fraction of the sharpest frame the search saw.
        var sceneChangeRatio = 0.5
    }

    struct Sample: Sendable, Hashable {
        var position: Double
        var sharpness: Double
        var count: Int
    }

    enum Step: Sendable, Hashable {
        /// Move the lens there now.
        case move(Double)
        /// Leave the lens where it is this frame.
        case hold
        /// Done: the lens is at the peak (the position given).
        case converged(Double)
        /// Done without a peak; the lens is left at the position given.
        case diverged(Double)
        /// Done without a peak: the view changed during the search (the sharpest frame
        /// seen is no longer there to focus on). The lens is left where it is.
        case sceneChanged
    }

    private enum Phase: Sendable, Hashable {
        case coarse, fine, settle(Double), fallback(Double), finished
    }

    let configuration: Configuration
    let range: ClosedRange<Double>
    private(set) var samples: [Sample] = []
    private var phase = Phase.coarse
    private var queue: [Double]
    private let coarseOrder: [Double]
    /// Frame index from which the measurements show the last move.
    private var dueFrame = 0
    /// The last move, until a frame taken there has been measured (when frames come with
    /// their real lens position, this, not `latency`, says when a probe is back).
    private var awaited: Double?
    private var frame = 0
    /// Where the lens was last sent (or started).
    private var lens: Double
    /// The sharpest single frame of the search, and the last frame measured (each with the
    /// lens position it was taken at): the scene-change check compares them.
    private var sharpestFrame = 0.0
    private var lastFrame: (position: Double, sharpness: Double)?

    init(start: Double, range: ClosedRange<Double> = 0...1, configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.range = range
        let span = range.upperBound - range.lowerBound
        let grid = configuration.coarseGrid.map { range.lowerBound + span * min(max($0, 0), 1) }
        coarseOrder = grid
        // The first frame measures the starting position for free.
        queue = grid.filter { abs($0 - start) > 0.01 * span }
        lens = start
    }

    /// The best sample so far.
    var best: Sample? { samples.max { $0.sharpness < $1.sharpness } }

    /// Feeds one frame: its sharpness and the lens position it was taken at (nil when
    /// unknown). Returns what the lens does now.
    mutating func step(position: Double?, sharpness: Double) -> Step {
        defer { frame += 1 }
        if let position, sharpness.isFinite, sharpness >= 0 {
            record(position, sharpness)
            sharpestFrame = max(sharpestFrame, sharpness)
            lastFrame = (position, sharpness)
            if let a = awaited, abs(a - position) < configuration.positionEpsilon { awaited = nil }
        }
        // Back when the latency has passed and a frame at the new position was seen (or,
        // should the camera not get there, a few frames later anyway).
        let settled = frame >= dueFrame && (awaited == nil || frame >= dueFrame + Self.patience)
        switch phase {
        case .coarse:
            if !queue.isEmpty, !passedClearPeak() { return move(queue.removeFirst()) }
            queue.removeAll()
            guard settled else { return .hold }
            if isFlat() { phase = .finished; return .diverged(best?.position ?? lens) }
            phase = .fine
            return fineStep()
        case .fine:
            guard settled else { return .hold }
            return fineStep()
        case .settle(let target):
            guard settled else { return .hold }
            if viewChanged(at: target) { phase = .finished; return .sceneChanged }
            if let s = sample(at: target), let b = best, s.sharpness < 0.9 * b.sharpness,
               abs(b.position - target) > configuration.positionEpsilon {
                phase = .fallback(b.position)
                return move(b.position)
            }
            phase = .finished
            return .converged(target)
        case .fallback(let target):
            guard settled else { return .hold }
            phase = .finished
            return viewChanged(at: target) ? .sceneChanged : .converged(target)
        case .finished:
            return .hold
        }
    }

    /// True when the last frame, taken at `target`, is far below the sharpest frame of the
    /// search: what was sharpest is no longer in view.
    private func viewChanged(at target: Double) -> Bool {
        guard let last = lastFrame, abs(last.position - target) < configuration.positionEpsilon else { return false }
        return last.sharpness < configuration.sceneChangeRatio * sharpestFrame
    }

    /// Frames past the latency to wait for a frame at a probed position.
    static let patience = 8

    private mutating func move(_ p: Double) -> Step {
        dueFrame = frame + configuration.latency
        awaited = p
        lens = p
        return .move(p)
    }

    private mutating func record(_ position: Double, _ sharpness: Double) {
        if let i = samples.firstIndex(where: { abs($0.position - position) < configuration.positionEpsilon }) {
            let s = samples[i]
            samples[i].sharpness = (s.sharpness * Double(s.count) + sharpness) / Double(s.count + 1)
            samples[i].count += 1
        } else {
            samples.append(Sample(position: position, sharpness: sharpness, count: 1))
            samples.sort { $0.position < $1.position }
        }
    }

    private func sample(at p: Double) -> Sample? { samples.first { abs($0.position - p) < configuration.positionEpsilon } }

    private func isFlat() -> Bool {
        guard let hi = samples.map(\.sharpness).max(), let lo = samples.map(\.sharpness).min() else { return true }
        return hi <= 0 || hi < configuration.flatRatio * max(lo, 1e-12)
    }

    /// True once the sweep has clearly gone past a peak: two coarse samples after the best
    /// (in sweep order), both below it and the last under half of it, and the best well
    /// above the weakest.
    private func passedClearPeak() -> Bool {
        // The sweep so far: grid points in order, up to the first not yet measured.
        var measured: [Double] = []
        for p in coarseOrder {
            guard let s = sample(at: p) else { break }
            measured.append(s.sharpness)
        }
        guard measured.count >= 3, let b = measured.max(), let bi = measured.firstIndex(of: b),
              let lo = measured.min() else { return false }
        let after = measured[(bi + 1)...]
        guard after.count >= 2, let last = after.last else { return false }
        return last < 0.5 * b && b > 2 * lo
    }

    /// Chooses the next fine probe, or settles.
    private mutating func fineStep() -> Step {
        guard let bi = samples.indices.max(by: { samples[$0].sharpness < samples[$1].sharpness }) else {
            phase = .finished
            return .diverged(lens)
        }
        let b = samples[bi]
        let l: Sample? = bi > 0 ? samples[bi - 1] : nil
        let r: Sample? = bi < samples.count - 1 ? samples[bi + 1] : nil
        let tol = configuration.tolerance
        guard let estimate = peakEstimate(at: bi) else {
            // Best sample at the end of the sampled span with no slope to go on: halve the
            // gap to its only neighbour.
            guard let n = l ?? r, abs(n.position - b.position) > 2 * tol else { return settle(b.position) }
            return move((n.position + b.position) / 2)
        }
        // Room left on each side of the best sample (none at a range end).
        let wl = l.map { b.position - $0.position } ?? (b.position - range.lowerBound)
        let wr = r.map { $0.position - b.position } ?? (range.upperBound - b.position)
        let wide = max(wl, wr)
        let budget = configuration.frameBudget + configuration.latencyAllowance * max(configuration.latency - 1, 0)
        if wide <= 2 * tol || frame >= budget { return settle(estimate) }
        var probe: Double
        if abs(estimate - b.position) <= tol {
            if wide <= configuration.localSpan { return settle(estimate) }
            // The estimate rests on a wide side: measure closer in on it.
            probe = wr >= wl ? b.position + min(wr / 2, configuration.localSpan / 2)
                             : b.position - min(wl / 2, configuration.localSpan / 2)
        } else {
            probe = estimate
            // Stay clear of the bracket ends so the bracket always shrinks.
            let side = probe > b.position ? wr : wl
            let offset = min(abs(probe - b.position), 0.75 * side)
            probe = b.position + (probe > b.position ? offset : -offset)
            if samples.contains(where: { abs($0.position - probe) < tol }) {
                probe = wr >= wl ? b.position + wr / 2 : b.position - wl / 2
            }
        }
        probe = min(max(probe, range.lowerBound), range.upperBound)
        if samples.contains(where: { abs($0.position - probe) < configuration.positionEpsilon }) { return settle(estimate) }
        return move(probe)
    }

    private mutating func settle(_ target: Double) -> Step {
        let p = min(max(target, range.lowerBound), range.upperBound)
        phase = .settle(p)
        // Already there and measured: nothing to wait for.
        if abs(lens - p) < configuration.positionEpsilon, frame >= dueFrame, awaited == nil,
           let s = sample(at: p), let b = best, s.sharpness >= 0.9 * b.sharpness {
            phase = .finished
            return viewChanged(at: p) ? .sceneChanged : .converged(p)
        }
        return move(p)
    }

    /// Where the peak lies, from the best sample (index `bi`) and its neighbours:
    /// equiangular ("V") interpolation of log-sharpness, a parabola through the three when
    /// the V is degenerate. At the end of the sampled span the slope comes from the two
    /// samples on the other side, when they are close enough to lie on it; nil when there
    /// is nothing to go on.
    func peakEstimate(at bi: Int) -> Double? {
        let b = samples[bi]
        func y(_ s: Sample) -> Double { log(max(s.sharpness, 1e-12)) }
        guard bi > 0, bi < samples.count - 1 else {
            // One-sided: both neighbours on one side give the slope of that flank.
            let inward = bi == 0 ? 1 : -1
            let i1 = bi + inward, i2 = bi + 2 * inward
            guard samples.indices.contains(i1) else { return b.position }
            guard samples.indices.contains(i2), abs(samples[i2].position - b.position) <= 2 * configuration.localSpan else {
                return nil
            }
            let n1 = samples[i1], n2 = samples[i2]
            let k = (y(n1) - y(n2)) / abs(n2.position - n1.position)
            guard k > 1e-9, k.isFinite else { return nil }
            // Lines of slope ±k through b and n1 meet at the peak.
            let x = (b.position + n1.position) / 2 + Double(inward) * (y(n1) - y(b)) / (2 * k)
            return min(max(x, min(b.position, n1.position)), max(b.position, n1.position))
        }
        let l = samples[bi - 1], r = samples[bi + 1]
        let kl = (y(b) - y(l)) / (b.position - l.position), kr = (y(b) - y(r)) / (r.position - b.position)
        let k = max(kl, kr)
        if k > 1e-9 {
            let x = (l.position + r.position) / 2 + (y(r) - y(l)) / (2 * k)
            if x.isFinite { return min(max(x, l.position), r.position) }
        }
        return Self.parabolaVertex(l.position, l.sharpness, b.position, b.sharpness, r.position, r.sharpness) ?? b.position
    }

    /// Vertex of the parabola through three points, nil when they are collinear or it
    /// opens upwards.
    static func parabolaVertex(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double) -> Double? {
        let d0 = (y1 - y0) / (x1 - x0), d1 = (y2 - y1) / (x2 - x1)
        let a = (d1 - d0) / (x2 - x0)
        guard a < 0, a.isFinite else { return nil }
        // y = y0 + d0 (x − x0) + a (x − x0)(x − x1) has its vertex at (x0 + x1)/2 − d0/(2a).
        let x = (x0 + x1) / 2 - d0 / (2 * a)
        return x.isFinite ? min(max(x, min(x0, x2)), max(x0, x2)) : nil
    }
}
