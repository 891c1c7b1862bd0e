import Foundation
import NodeOutput
import Testing
import TestSupport

/// The scripts read the event names from NodeEventName.swift itself
/// (scripts/lib/events.py); this checks they read exactly the names the executables print.
@Suite("event names: the scripts and the executables agree", .tags(.system))
struct EventNamesTests {
    @Test("scripts/lib/events.py reads every NodeEventName, and nothing else")
    func scriptsReadTheSwiftNames() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let run = try await ManagedProcess.run("/usr/bin/python3", [root.appendingPathComponent("scripts/lib/events.py").path],
                                               timeout: 30)
        #expect(run.status == 0, "events.py: \(run.stderrTail)")
        let names = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String], "output: \(run.stdout)")
        #expect(names == NodeEventName.allCases.map(\.rawValue).sorted())
    }
}
