import Foundation
import Signaling
import TestSupport
import Testing

/// The server's part in keeping rooms usable: it sweeps idle peers off and closes their
/// connections, and counts every refusal by reason. Live on port 0, short timeouts.
@Suite("Server live: idle peers and refusal counts", .timeLimit(.minutes(1)))
struct ServerRoomsLiveTests {
    @Test func anIdleListenerIsToldWhyAndClosedWhileThePublisherAndItsExpertStay() async throws {
        try await ServerLiveTests.withServer(limits: HubLimits(listenerTimeout: 0.5)) { server in
            let publisher = try await ServerLiveTests.connect(server)
            let expert = try await ServerLiveTests.connect(server)
            let idle = try await ServerLiveTests.connect(server)
            _ = try await ServerLiveTests.declare(publisher, PeerStatus(roles: [.producer], room: "lab"))
            _ = try await ServerLiveTests.declare(expert, PeerStatus(roles: [.consumer], room: "lab", role: .expert))
            try expert.send(.startSession(peerId: publisher.peerId))
            guard case .sessionStarted = try await ServerLiveTests.next(expert, "sessionStarted") else {
                Issue.record("expected sessionStarted")
                return
            }
            guard case .startSession = try await ServerLiveTests.next(publisher, "startSession") else {
                Issue.record("expected startSession")
                return
            }
            // Its clock starts now; the expert already has its session.
            _ = try await ServerLiveTests.declare(idle, PeerStatus(roles: [.listener], room: "lab"))
            let told = try await ServerLiveTests.next(idle, "the idle listener's refusal")
            #expect(told.errorInfo?.code == .idleTimeout, "\(told)")
            try await withTimeout(5, "the idle listener's connection to close") {
                for await _ in idle.messages {}
            }
            #expect(await server.refusalCounts() == [.idleTimeout: 1])
            // The publisher and the expert in session are still served.
            try expert.send(.list)
            guard case .list(let producers) = try await ServerLiveTests.next(expert, "a list") else {
                Issue.record("expected a list")
                return
            }
            #expect(producers.map(\.id) == [publisher.peerId])
            try publisher.send(.endSession(sessionId: "nope"))
            #expect(try await ServerLiveTests.next(publisher, "a refusal").errorInfo?.code == .unknownSession)
            #expect(await server.refusalCounts() == [.idleTimeout: 1, .unknownSession: 1])
            publisher.close()
            expert.close()
        }
    }
}
