import Synchronization

/// The tasks a node starts for its sessions, owned by it: each leaves the set when it
/// ends, a session's are cancelled by its key when the session ends, and all of them by
/// `cancelAll` when the node stops, which waits until they have ended. After that, new
/// ones are not started.
public final class OwnedTasks<Key: Hashable & Sendable>: Sendable {
    private struct Entry { let key: Key?; let task: Task<Void, Never> }
    private struct State {
        var next: UInt64 = 0
        var tasks: [UInt64: Entry] = [:]
        var closed = false
    }
    private let state = Mutex(State())

    public init() {}

    /// Starts `body` as a task of this set (under `key`, if given). Does nothing once closed.
    public func spawn(_ key: Key? = nil, _ body: @escaping @Sendable () async -> Void) {
        state.withLock { s in
            guard !s.closed else { return }
            let id = s.next
            s.next += 1
            // Made under the lock, so the task's own removal (which takes the lock) comes after its insertion.
            let task = Task { [weak self] in
                await body()
                _ = self?.state.withLock { $0.tasks.removeValue(forKey: id) }
            }
            s.tasks[id] = Entry(key: key, task: task)
        }
    }

    /// Cancels the tasks started under `key`.
    public func cancel(_ key: Key) {
        for entry in state.withLock({ s in s.tasks.values.filter { $0.key == key } }) { entry.task.cancel() }
    }

    /// How many are running.
    public var count: Int { state.withLock { $0.tasks.count } }

    /// Cancels every task, refuses new ones, and returns once all have ended.
    public func cancelAll() async {
        let tasks = state.withLock { s in
            s.closed = true
            return s.tasks.values.map(\.task)
        }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
}
