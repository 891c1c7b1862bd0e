@testable import CameraControl
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The autofocus state machine on model sharpness curves (no rendering).
@Suite struct FocusSearchTests {
    /// Sharpness like the renderer's: exponential fall-off from the peak in dioptres
    /// (lens position), over a noise floor.
    static func curve(peak: Double, slope: Double = 18) -> (Double) -> Double {
        { p in exp(-slope * abs(p - peak)) + 0.02 }
    }

    /// Runs a search on `curve` with moves taking effect `latency` frames later; returns
    /// the frames used and where it ended.
    static func run(_ curve: (Double) -> Double, start: Double, latency: Int = 1, limit: Int = 40)
        -> (frames: Int, step: FocusSearch.Step?) {
        var config = FocusSearch.Configuration()
        config.latency = latency
        var search = FocusSearch(start: start, configuration: config)
        var history = [start]  // lens after each frame
        for frame in 1...limit {
            let seen = history[max(0, history.count - latency)]
            let step = search.step(position: seen, sharpness: curve(seen))
            var lens = history.last!
            switch step {
            case .move(let p): lens = p
            case .hold: break
            case .converged, .diverged, .sceneChanged: return (frame, step)
            }
            history.append(lens)
        }
        return (limit, nil)
    }

    @Test(arguments: [0.0, 0.013, 0.05, 0.083, 0.13, 0.27, 0.44, 0.71, 0.93, 1.0])
    func findsThePeakQuickly(peak: Double) {
        for start in [0.0, 1.0, 0.5] {
            let (frames, step) = Self.run(Self.curve(peak: peak), start: start)
            guard case .converged(let p) = step else {
                Issue.record("no convergence for peak \(peak) from \(start): \(String(describing: step))")
                continue
            }
            #expect(abs(p - peak) < 0.003, "peak \(peak) from \(start): ended at \(p)")
            #expect(frames <= 15, "peak \(peak) from \(start): \(frames) frames")
        }
    }

    @Test(arguments: [2, 3])
    func longerLatencyStillConverges(latency: Int) {
        for peak in [0.03, 0.2, 0.8] {
            let (frames, step) = Self.run(Self.curve(peak: peak), start: 1, latency: latency)
            guard case .converged(let p) = step else { Issue.record("no convergence: \(String(describing: step))"); continue }
            #expect(abs(p - peak) < 0.003)
            #expect(frames <= 15 + 10 * (latency - 1))
        }
    }

    @Test func wrongLatencyIsWhatTheParameterIsFor() {
        // The same search told latency 1 while the camera takes 2 misattributes samples;
        // it must still end (not loop), wherever it lands.
        var search = FocusSearch(start: 1)
        let curve = Self.curve(peak: 0.1)
        var history = [1.0]
        var ended = false
        for _ in 0..<40 {
            let seen = history[max(0, history.count - 2)]
            switch search.step(position: seen, sharpness: curve(seen)) {
            case .move(let p): history.append(p)
            case .hold: history.append(history.last!)
            case .converged, .diverged, .sceneChanged: ended = true
            }
            if ended { break }
        }
        #expect(ended)
    }

    @Test func aViewThatChangesDuringTheSearchEndsItWithoutAPeak() {
        // The sweep passes a near object's peak (0.18) while it is in view; it is gone by
        // the time the search settles there, leaving a far scene whose peak is at 0.077.
        var frame = 0
        let near = Self.curve(peak: 0.18), far = { (p: Double) in 0.3 * Self.curve(peak: 0.077)(p) }
        let result = Self.run({ p in
            frame += 1
            return frame <= 8 ? near(p) : far(p)
        }, start: 0.077)
        #expect(result.step == .sceneChanged, "\(String(describing: result.step)) after \(result.frames) frames")
        // The same search on a view that holds still converges on it.
        let still = Self.run(near, start: 0.077)
        guard case .converged(let p) = still.step else { Issue.record("\(String(describing: still.step))"); return }
        #expect(abs(p - 0.18) < 0.01)
    }

    @Test func flatContrastDiverges() {
        let (frames, step) = Self.run({ _ in 0.01 }, start: 0.5)
        guard case .diverged = step else { Issue.record("expected diverged, got \(String(describing: step))"); return }
        #expect(frames <= 10)
    }

    @Test func parabolaVertex() {
        #expect(FocusSearch.parabolaVertex(0, 0, 1, 1, 2, 0) == 1)
        let v = FocusSearch.parabolaVertex(0, -1, 1, 0.5, 3, -2)!
        // y = −(x − v)² + c through the three points.
        #expect(v > 1 && v < 2)
        #expect(FocusSearch.parabolaVertex(0, 0, 1, 1, 2, 2) == nil)
    }
}
