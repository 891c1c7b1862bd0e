/// Decides, once a second, whether the camera has stalled and when to restart its path
/// (source → encoder queue): the publisher must recover by itself if frames ever stop
/// while the pipeline is PLAYING, whatever the cause. Pure: the
/// caller says whether frames came this second and whether the pipeline plays.
///
/// - After `stallAfter` silent seconds: `stalled` (said once per stall) and, if the
///   pipeline is PLAYING, a restart; then another every `retryEvery` silent seconds.
/// - The first second with frames after a stall: `recovered`, with how many restarts it took.
struct SourceWatchdog {
    enum Action: Equatable {
        case none
        /// Frames stopped `silentSeconds` ago; `restart`: the attempt to make now, if any.
        case stalled(silentSeconds: Int, restart: Int?)
        /// Another restart, still silent.
        case restart(attempt: Int, silentSeconds: Int)
        /// Frames flow again after `silentSeconds` without, `restarts` restarts made.
        case recovered(silentSeconds: Int, restarts: Int)
    }

    var stallAfter = 3
    var retryEvery = 5
    private(set) var silentSeconds = 0
    private(set) var restarts = 0
    /// Restarts over the process's life.
    private(set) var totalRestarts = 0

    mutating func second(framesArrived: Bool, playing: Bool) -> Action {
        if framesArrived {
            defer { silentSeconds = 0; restarts = 0 }
            return silentSeconds >= stallAfter ? .recovered(silentSeconds: silentSeconds, restarts: restarts) : .none
        }
        silentSeconds += 1
        guard silentSeconds >= stallAfter else { return .none }
        let due = (silentSeconds - stallAfter) % retryEvery == 0
        let attempt: Int? = due && playing ? nextAttempt() : nil
        if silentSeconds == stallAfter { return .stalled(silentSeconds: silentSeconds, restart: attempt) }
        return attempt.map { .restart(attempt: $0, silentSeconds: silentSeconds) } ?? .none
    }

    private mutating func nextAttempt() -> Int {
        restarts += 1
        totalRestarts += 1
        return restarts
    }
}
