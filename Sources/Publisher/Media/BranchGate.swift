import Synchronization

/// Drops a branch's frames until its peer has connected.
final class BranchGate: Sendable {
    private let flag = Atomic<Bool>(false)
    var isOpen: Bool { flag.load(ordering: .relaxed) }
    func open() { flag.store(true, ordering: .relaxed) }
}
