import CGstShim
import Foundation
import Imaging
import PoseCastKit
import Synchronization
import VideoEffects

/// The effects' models (person segmentation, face detection, the person gate) on a thread
/// of their own. When an analysis is due and the thread is free, the streaming thread
/// hands it a copy of the capture frame (0.1 ms at 640×480) and goes on; every frame uses
/// the latest results. A busy CPU then lowers the analysis rate, not the frame rate: run
/// inline, blur fell to 15 fps and face framing to 12 fps at load 14–18 while the video
/// without effects kept 28–30. A result is at most one analysis time old when it is used.
///
/// Ownership: the thread holds `Shared` (the mailbox and the analyzer), never this object;
/// when this object goes, its deinit stops the thread, which ends after the analysis it
/// is running.
final class AnalysisThread: Sendable {
    /// One analysis: the frame (owned by the job) and what to run on it.
    struct Job: Sendable {
        var frame: I420Image
        var captureNanos: UInt64
        var segmenter: PersonSegmenter?
        var kind: SceneAnalyzer.Subject
        var faces: FaceDetector?
        var personGate: PersonGate?
        var needsMatte: Bool
    }

    /// The latest analysis's results, as `SceneAnalyzer` left them.
    struct Results: Sendable {
        var matte: Matte?
        var matteGeneration = 0
        var subject: NormalizedRect?
        var subjectFaceHeight: Float?
        var personPresent = true
        var segmentationTimes: [UInt64] = []
        var error: String?
        /// Counts finished analyses, and how long the last one took (its cost, counted by
        /// the first frame that uses it).
        var sequence = 0
        var analysisNanos: UInt64 = 0
    }

    private final class Shared: Sendable {
        struct State {
            var job: Job?
            var running = false
            var stopped = false
            var results = Results()
        }
        let state = Mutex(State())
        let wake = DispatchSemaphore(value: 0)
        /// Touched only by the analysis thread.
        nonisolated(unsafe) let analyzer: SceneAnalyzer
        init(fps: Double) { analyzer = SceneAnalyzer(fps: fps) }

        func run() {
            // Nice 5 on this thread alone (Linux's nice is per thread): on a busy machine
            // the streaming thread and the encoder go first, and the analyses, not the
            // frames, are what gets fewer.
            pcg_set_current_thread_name("posecast-analysis")
            _ = pcg_nice_current_thread(5)
            while true {
                wake.wait()
                let job: Job? = state.withLock { s in
                    guard !s.stopped else { return nil }
                    let job = s.job
                    s.job = nil
                    s.running = job != nil
                    return job
                }
                guard let job else {
                    if state.withLock({ $0.stopped }) { return }
                    continue
                }
                let started = MonotonicClock.nanos()
                analyzer.needsMatte = job.needsMatte
                let outcome = job.frame.withFrameView { view in
                    analyzer.analyse(view, captureNanos: job.captureNanos, segmenter: job.segmenter, subject: job.kind,
                                     faces: job.faces, personGate: job.personGate)
                }
                let took = MonotonicClock.nanos() - started
                let a = analyzer
                state.withLock { s in
                    s.results = Results(matte: a.matte, matteGeneration: a.matteGeneration, subject: outcome.subject,
                                        subjectFaceHeight: a.subjectFaceHeight, personPresent: a.personPresent, segmentationTimes: a.segmentationTimes,
                                        error: outcome.error, sequence: s.results.sequence + 1, analysisNanos: took)
                    s.running = false
                }
            }
        }
    }

    private let shared: Shared
    private let periodNanos: UInt64
    /// The capture time of the last frame handed over, and whether the thread was started
    /// (only the streaming thread touches these, through `submitIfDue`).
    private let submitted = Mutex<(lastNanos: UInt64?, started: Bool)>((nil, false))

    init(fps: Double) {
        shared = Shared(fps: fps)
        periodNanos = UInt64(1e9 / max(fps, 0.1))
    }

    deinit {
        shared.state.withLock { $0.stopped = true }
        shared.wake.signal()
    }

    var results: Results { shared.state.withLock { $0.results } }

    /// Whether a frame captured at `captureNanos` should be analysed: the period has passed
    /// since the last one handed over (5 ms of slack: a 30 fps source analysed 15 times a
    /// second runs every other frame) and the thread is free.
    func isDue(_ captureNanos: UInt64) -> Bool {
        let busy = shared.state.withLock { $0.running || $0.job != nil }
        guard !busy else { return false }
        return submitted.withLock { s in s.lastNanos.map { captureNanos &- $0 + 5_000_000 >= periodNanos } ?? true }
    }

    /// Hands `job` to the thread (started at the first job).
    func submit(_ job: Job) {
        let start = submitted.withLock { s -> Bool in
            s.lastNanos = job.captureNanos
            defer { s.started = true }
            return !s.started
        }
        if start {
            let shared = shared
            Thread.detachNewThread { shared.run() }
        }
        shared.state.withLock { $0.job = job }
        shared.wake.signal()
    }
}
