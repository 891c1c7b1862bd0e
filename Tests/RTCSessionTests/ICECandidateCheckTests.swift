import RTCSession
import Testing

@Suite("ICE candidate check (RFC 8839 grammar, m-line index)")
struct ICECandidateCheckTests {
    static let good = [
        "candidate:f957a2332b1715da3b0ef8ba684454eb 1 udp 2130706431 192.0.2.2 37377 typ host",
        "candidate:1 1 UDP 2015363327 fd00::2 56782 typ host",
        "a=candidate:2 1 TCP 1015021823 10.0.0.1 9 typ host tcptype active",
        "candidate:3 1 udp 1686052607 203.0.113.7 40000 typ srflx raddr 10.0.0.1 rport 40000 generation 0",
        "candidate:4 1 udp 41885439 198.51.100.1 3478 typ relay raddr 203.0.113.7 rport 40000",
        "candidate:842163049 1 udp 1677729535 4b3d2f1c-9a6e-4c51-8d1e-3f2a1b0c9d8e.local 51234 typ host",
        "candidate:a+b/c 256 udp 1 127.0.0.1 0 typ prflx",
        "",
    ]

    static let bad: [(String, String)] = [
        ("candidate 1 1 udp 1 1.2.3.4 5 typ host", "must start with 'candidate:'"),
        ("candidate:1 1 udp 1 1.2.3.4 5 typ", "at least 8"),
        ("candidate:1 1 sctp 1 1.2.3.4 5 typ host", "transport"),
        ("candidate:1 0 udp 1 1.2.3.4 5 typ host", "component"),
        ("candidate:1 1 udp 99999999999 1.2.3.4 5 typ host", "priority"),
        ("candidate:1 1 udp 1 1.2.3.4 70000 typ host", "port"),
        ("candidate:1 1 udp 1 1.2.3.4 5 typ martian", "type"),
        ("candidate:1 1 udp 1 not_an@address 5 typ host", "address"),
        ("candidate:1 1 udp 1 1.2.3.4 5 typ host raddr", "no value"),
        ("candidate:1 1 udp 1 1.2.3.4 5 typ srflx raddr 1.2.3.4 rport x", "rport"),
        ("candidate:1  1 udp 1 1.2.3.4 5 typ host", "component"),
        ("candidate:" + String(repeating: "x", count: 40) + " 1 udp 1 1.2.3.4 5 typ host", "foundation"),
        ("candidate:1 1 udp 1 1.2.3.4 5 typ host " + String(repeating: "a b ", count: 200), "bytes"),
    ]

    @Test("real candidates of Chromium, aiortc and webrtcbin pass; end-of-candidates passes")
    func goodOnes() {
        for text in Self.good {
            #expect(ICECandidateCheck.refusal(ICECandidate(mlineIndex: 0, candidate: text), mediaCount: 2) == nil, "\(text)")
        }
    }

    @Test("each malformed candidate is refused, saying which field is wrong")
    func badOnes() {
        for (text, field) in Self.bad {
            let refusal = ICECandidateCheck.refusal(ICECandidate(mlineIndex: 0, candidate: text), mediaCount: 2)
            #expect(refusal?.kind == .malformed, "\(text)")
            #expect(refusal?.details.contains(field) == true, "\(refusal?.details ?? "accepted") should name \(field)")
        }
    }

    @Test("an m-line index the session does not have is refused; unknown until a description is set")
    func mlineIndex() {
        let candidate = ICECandidate(mlineIndex: 99, candidate: Self.good[0])
        let refusal = ICECandidateCheck.refusal(candidate, mediaCount: 2)
        #expect(refusal?.kind == .unknownMLine)
        #expect(refusal?.details == "ICE candidate for m-line 99, but the session has 2")
        #expect(ICECandidateCheck.refusal(ICECandidate(mlineIndex: 1, candidate: Self.good[0]), mediaCount: 2) == nil)
        #expect(ICECandidateCheck.refusal(candidate, mediaCount: nil) == nil)
        #expect(ICECandidateCheck.mediaCount(ofSDP: "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=x\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n") == 2)
    }
}
