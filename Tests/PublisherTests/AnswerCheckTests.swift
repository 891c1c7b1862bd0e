import Signaling
import PoseMedia
import Publisher
import Testing

@Suite("publisher: answers are checked before they are applied")
struct AnswerCheckTests {
    static let vp8Answer = """
        v=0
        o=- 1 0 IN IP4 0.0.0.0
        s=-
        t=0 0
        m=video 9 UDP/TLS/RTP/SAVPF 96 97
        c=IN IP4 0.0.0.0
        a=rtpmap:96 VP8/90000
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=extmap:1 urn:x-posecast:rtp-hdrext:pose:1
        a=recvonly
        m=application 9 UDP/DTLS/SCTP webrtc-datachannel
        a=sctp-port:5000

        """
    static let h264OnlyAnswer = vp8Answer.replacingOccurrences(of: "96 97", with: "102")
        .replacingOccurrences(of: "a=rtpmap:96 VP8/90000", with: "a=rtpmap:102 H264/90000")
        .replacingOccurrences(of: "a=rtpmap:97 rtx/90000\na=fmtp:97 apt=96\n", with: "")

    @Test("an answer that accepts our codec passes, in either codec, whatever the case of its name")
    func accepted() {
        #expect(AnswerCheck.refusal(Self.vp8Answer, codec: .vp8) == nil)
        #expect(AnswerCheck.refusal(Self.h264OnlyAnswer, codec: .h264) == nil)
        #expect(AnswerCheck.refusal(Self.vp8Answer.replacingOccurrences(of: "VP8/", with: "vp8/"), codec: .vp8) == nil)
        // CRLF line ends, as browsers send them.
        #expect(AnswerCheck.refusal(Self.vp8Answer.replacingOccurrences(of: "\n", with: "\r\n"), codec: .vp8) == nil)
    }

    @Test("refusals name what is wrong", arguments: [
        (h264OnlyAnswer, "it accepts no VP8 video, only H264 (102)"),
        (vp8Answer.replacingOccurrences(of: "m=video 9", with: "m=video 0"), "it rejects the video (port 0)"),
        (vp8Answer.replacingOccurrences(of: "a=recvonly", with: "a=inactive"), "it sets the video inactive"),
        ("v=0\no=- 1 0 IN IP4 0.0.0.0\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\n", "it has no video line"),
        (vp8Answer.replacingOccurrences(of: "m=video 9 UDP/TLS/RTP/SAVPF 96 97", with: "m=video x"), "its video line is malformed: m=video x"),
        // The payload type must be one the video line lists, not just any rtpmap.
        (vp8Answer.replacingOccurrences(of: "SAVPF 96 97", with: "SAVPF 97"), "it accepts no VP8 video, only rtx (97)"),
    ])
    func refused(_ sdp: String, _ reason: String) {
        #expect(AnswerCheck.refusal(sdp, codec: .vp8) == reason)
    }

    @Test("the pose extension: taken when the video line maps its URI; a pose-less answer is said and still applied")
    func poseExtension() {
        let withPose = Self.vp8Answer
        let bareAnswer = withPose.replacingOccurrences(of: "a=extmap:1 \(PoseHeaderExtension.uri)\n", with: "")
        #expect(AnswerCheck.acceptsPoseExtension(withPose))
        #expect(AnswerCheck.acceptsPoseExtension(withPose.replacingOccurrences(of: "\n", with: "\r\n")))
        #expect(!AnswerCheck.acceptsPoseExtension(bareAnswer))
        // The URI on another line than the video's does not count.
        let elsewhere = bareAnswer.replacingOccurrences(of: "a=sctp-port:5000", with: "a=sctp-port:5000\na=extmap:1 \(PoseHeaderExtension.uri)")
        #expect(!AnswerCheck.acceptsPoseExtension(elsewhere))
        var h = PublisherHarness.connected(starting: "s1", "s2")
        let bare = h.handle(.server(.peer(PeerMessage(sessionId: "s1", payload: .sdp(SignalingSDP(type: "answer", sdp: bareAnswer))))))
        #expect(bare.events.contains { if case .subscriberWithoutPose("s1") = $0 { true } else { false } })
        #expect(bare.contains { if case .applyAnswer("s1", _) = $0 { true } else { false } })
        let posed = h.handle(.server(.peer(PeerMessage(sessionId: "s2", payload: .sdp(SignalingSDP(type: "answer", sdp: withPose))))))
        #expect(posed.events.isEmpty)
    }
}
