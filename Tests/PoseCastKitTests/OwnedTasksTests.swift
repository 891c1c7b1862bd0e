import PoseCastKit
import Synchronization
import Testing

/// The tasks a node owns, and the one timer that keeps its machine's wakes.
@Suite("owned tasks and the wake timer")
struct OwnedTasksTests {
    @Test("a session's tasks are cancelled by its key, the rest by cancelAll, which waits for them; none start after it")
    func ownedTasks() async {
        let tasks = OwnedTasks<String>()
        let ended = Mutex<[String]>([])
        for name in ["a1", "a2", "b1"] {
            tasks.spawn(String(name.prefix(1))) {
                while (try? await Task.sleep(for: .seconds(30))) != nil {}
                ended.withLock { $0.append(name) }
            }
        }
        tasks.spawn { ended.withLock { $0.append("quick") } }
        #expect(tasks.count >= 3)
        tasks.cancel("a")
        for _ in 0..<200 where ended.withLock({ $0.count }) < 3 { try? await Task.sleep(for: .milliseconds(10)) }
        #expect(Set(ended.withLock { $0 }) == ["a1", "a2", "quick"], "b1 is still running")
        await tasks.cancelAll()
        #expect(ended.withLock { $0.contains("b1") }, "cancelAll returns once every task has ended")
        #expect(tasks.count == 0)
        tasks.spawn { ended.withLock { $0.append("late") } }
        try? await Task.sleep(for: .milliseconds(50))
        #expect(!ended.withLock { $0.contains("late") }, "no task starts after cancelAll")
    }

    @Test("wakes: served in time order, never early, wakes due together by one fire, a wake asked before arming kept; none after stop")
    func wakeTimer() async {
        let timer = WakeTimer()
        let fired = Mutex<[UInt64]>([])
        let start = MonotonicClock.nanos()
        let ms: UInt64 = 1_000_000
        timer.schedule(at: start + 20 * ms)  // before arm: kept
        timer.arm { fired.withLock { $0.append(MonotonicClock.nanos()) } }
        timer.schedule(at: start + 120 * ms)
        timer.schedule(at: start + 60 * ms)
        timer.schedule(at: start + 60 * ms)
        // Each wake is served by a fire at or after its time; wakes found due together (a
        // late sleeper on a busy machine) share one fire, so 1 to 3 fires.
        for _ in 0..<400 where (fired.withLock { $0.last } ?? 0) < start + 120 * ms {
            try? await Task.sleep(for: .milliseconds(5))
        }
        try? await Task.sleep(for: .milliseconds(50))
        let times = fired.withLock { $0 }
        #expect((1...3).contains(times.count), "\(times.map { ($0 - start) / ms }) ms")
        #expect(times.first.map { $0 >= start + 20 * ms } == true, "never early")
        #expect(times.last.map { $0 >= start + 120 * ms } == true, "the last wake is served")
        #expect(times == times.sorted())
        let count = times.count
        timer.stop()
        timer.schedule(at: MonotonicClock.nanos() + 10 * ms)
        try? await Task.sleep(for: .milliseconds(80))
        #expect(fired.withLock { $0.count } == count, "nothing fires after stop")
    }
}
