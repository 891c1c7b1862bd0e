@testable import RTCSession
import Testing
import TestSupport

/// Harness for the session layer alone: two webrtcbins (data channel only, no media)
/// in one process, candidates handed across directly.
@Suite("RTCSession")
struct RTCSessionTests {
    @Test("an offer/answer pair connects and carries data-channel messages both ways, with stats")
    func dataChannelPair() async throws {
        let pipeA = try Pipeline(name: "a"), pipeB = try Pipeline(name: "b")
        let a = try WebRTCPeer(name: "a", pipeline: pipeA), b = try WebRTCPeer(name: "b", pipeline: pipeB)
        try pipeA.play(); try pipeB.play()
        defer { a.close(); b.close(); pipeA.stop(); pipeB.stop() }

        let fromB = AsyncStream.makeStream(of: RTCEvent.self)
        let relayA = Task { for await e in a.events { if case .localCandidate(let c) = e { try? b.addICECandidate(c) } } }
        let relayB = Task {
            for await e in b.events {
                if case .localCandidate(let c) = e { try? a.addICECandidate(c) } else { fromB.continuation.yield(e) }
            }
        }
        defer { relayA.cancel(); relayB.cancel() }

        let channel = try a.createDataChannel("control")
        let offer = try await a.createOffer()
        #expect(offer.kind == .offer && offer.sdp.contains("webrtc-datachannel"))
        try await a.setLocalDescription(offer)
        try await b.setRemoteDescription(offer)
        let answer = try await b.createAnswer()
        try await b.setLocalDescription(answer)
        try await a.setRemoteDescription(answer)

        var iterator = fromB.stream.makeAsyncIterator()
        func next(_ what: String, _ match: (RTCEvent) -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                guard let event = await iterator.next() else { break }
                if match(event) { return }
            }
            Issue.record("no \(what) within 20 s")
            throw RTCError.closed(what)
        }
        var remote: DataChannel?
        try await next("remote data channel") { if case .dataChannel(let c) = $0 { remote = c; return true }; return false }
        try await waitUntil(10, "the data channel to open") { channel.readyState == .open }
        try channel.send("ping")
        try channel.send([9, 8, 7])
        var got: [DataChannelMessage] = []
        try await next("messages") { if case .dataChannelMessage(_, let m) = $0 { got.append(m) }; return got.count == 2 }
        #expect(remote?.label == "control")
        #expect(got == [.text("ping"), .binary([9, 8, 7])])
        #expect(a.connectionState == .connected || a.connectionState == .connecting)
        let stats = try await a.stats()
        #expect(!stats.entries(ofType: "peer-connection").isEmpty)
    }

    @Test("ICE gathers UDP host candidates only, unless ICE-TCP is asked for")
    func iceTCPOnRequest() async throws {
        func gathered(iceTCP: Bool) async throws -> [String] {
            let pipe = try Pipeline(name: "tcp-\(iceTCP)")
            var config = RTCConfiguration()
            config.iceTCP = iceTCP
            let peer = try WebRTCPeer(name: "tcp-\(iceTCP)", pipeline: pipe, configuration: config)
            try pipe.play()
            defer { peer.close(); pipe.stop() }
            _ = try peer.createDataChannel("control")
            try await peer.setLocalDescription(try await peer.createOffer())
            var candidates: [String] = []
            let collect = Task {
                for await e in peer.events { if case .localCandidate(let c) = e { candidates.append(c.candidate) } }
                return candidates
            }
            try await Task.sleep(for: .seconds(2))
            collect.cancel()
            peer.close()
            return await collect.value
        }
        let plain = try await gathered(iceTCP: false)
        #expect(!plain.isEmpty, "no candidate gathered")
        #expect(plain.allSatisfy { $0.uppercased().contains(" UDP ") }, "\(plain)")
        let withTCP = try await gathered(iceTCP: true)
        #expect(withTCP.contains { $0.uppercased().contains(" TCP ") }, "ICE-TCP asked for, none gathered: \(withTCP)")
    }

    @Test("a missing element is an error naming it, its plugin and the Debian package")
    func missingElement() throws {
        try GStreamer.initialize()
        #expect(throws: RTCError.elementMissing(factory: "posecast-no-such-element", plugin: "unknown",
                                                package: "the GStreamer plugin package providing 'posecast-no-such-element'")) {
            _ = try ElementFactory.make("posecast-no-such-element")
        }
        let known = ElementFactory.missing("openh264enc")
        #expect(known == .elementMissing(factory: "openh264enc", plugin: "openh264", package: "gstreamer1.0-plugins-bad"))
        #expect(known.description.contains("apt-get install gstreamer1.0-plugins-bad"))
    }

    @Test("malformed SDP and ICE input are refused with precise errors, and the peer keeps working")
    func badInput() async throws {
        let pipe = try Pipeline(name: "bad")
        let peer = try WebRTCPeer(name: "p", pipeline: pipe)
        try pipe.play()
        defer { peer.close(); pipe.stop() }
        await #expect(throws: RTCError.invalidDescription("SDP must start with 'v=0' and have an 'o=' line")) {
            try await peer.setRemoteDescription(SessionDescription(kind: .offer, sdp: "garbage"))
        }
        // Parses, but webrtcbin refuses it (no BUNDLE/ICE/DTLS): the error is webrtcbin's own.
        await #expect(throws: RTCError.self) {
            try await peer.setRemoteDescription(SessionDescription(kind: .answer, sdp: "v=0\r\no=- 0 0 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"))
        }
        #expect(throws: RTCError.self) { try peer.addICECandidate(ICECandidate(mlineIndex: 0, candidate: "nonsense")) }
        // Still usable afterwards.
        _ = try peer.createDataChannel("after")
        let offer = try await peer.createOffer()
        #expect(offer.sdp.hasPrefix("v=0"))
    }

    @Test("a closed peer refuses further calls")
    func closedPeer() async throws {
        let pipe = try Pipeline(name: "closed")
        let peer = try WebRTCPeer(name: "c", pipeline: pipe)
        peer.close()
        await #expect(throws: RTCError.closed("peer c")) { _ = try await peer.createOffer() }
    }
}
