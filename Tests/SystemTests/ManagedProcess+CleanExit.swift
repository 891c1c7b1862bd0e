import Testing
import TestSupport

extension ManagedProcess {
    /// Waits for the exit and expects status 0. Otherwise the failure names the status (a
    /// signal's number when the child crashed: 4 is SIGILL, a Swift runtime trap) and the
    /// end of the child's stderr, where Swift prints the trap and its backtrace: a
    /// subscriber exited with a bare "status 4" once after `quit` and once in the SFU
    /// test, with nothing else to go on.
    func expectCleanExit(timeout: Double, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let status = try await waitForExit(timeout: timeout)
        #expect(status == 0, "\(name) exited with status \(status); stderr:\n\(stderrTail(6000))", sourceLocation: sourceLocation)
    }
}
