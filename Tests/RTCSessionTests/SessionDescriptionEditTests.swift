import RTCSession
import Testing

/// `SessionDescription.addingFeedback`: REMB in our offer, which webrtcbin will not put there.
@Suite("SDP: feedback added to an offer")
struct AddingFeedbackTests {
    @Test("goog-remb after each codec's last rtcp-fb line, not for RTX, not twice")
    func addsREMB() {
        let sdp = ["v=0", "m=video 9 UDP/TLS/RTP/SAVPF 96 97", "a=rtpmap:96 VP8/90000", "a=rtcp-fb:96 nack",
                   "a=rtcp-fb:96 nack pli", "a=rtcp-fb:96 transport-cc", "a=extmap:1 urn:x-posecast:rtp-hdrext:pose:1",
                   "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96", ""].joined(separator: "\r\n")
        let offer = SessionDescription(kind: .offer, sdp: sdp).addingFeedback("goog-remb")
        let lines = offer.sdp.components(separatedBy: "\r\n")
        #expect(lines.filter { $0.contains("goog-remb") } == ["a=rtcp-fb:96 goog-remb"])
        #expect(lines.firstIndex(of: "a=rtcp-fb:96 goog-remb") == lines.firstIndex(of: "a=rtcp-fb:96 transport-cc")! + 1)
        #expect(offer.addingFeedback("goog-remb") == offer)
        #expect(offer.kind == .offer && offer.sdp.hasSuffix("\r\n"))
    }
}

/// `SessionDescription.addingSSRC`: the SSRC Janus routes our video by.
@Suite("SDP: our SSRC added to an offer")
struct AddingSSRCTests {
    @Test("a=ssrc at the end of the video section only, not twice, nothing without a video section")
    func addsSSRC() {
        let sdp = ["v=0", "a=group:BUNDLE video0 audio1", "m=video 9 UDP/TLS/RTP/SAVPF 96", "a=mid:video0", "a=rtpmap:96 H264/90000",
                   "m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:audio1", "a=rtpmap:111 OPUS/48000/2", ""].joined(separator: "\r\n")
        let offer = SessionDescription(kind: .offer, sdp: sdp).addingSSRC(1234, cname: "posecast")
        let lines = offer.sdp.components(separatedBy: "\r\n")
        #expect(lines.filter { $0.hasPrefix("a=ssrc:") } == ["a=ssrc:1234 cname:posecast"])
        #expect(lines.firstIndex(of: "a=ssrc:1234 cname:posecast") == lines.firstIndex(of: "a=rtpmap:96 H264/90000")! + 1)
        #expect(offer.addingSSRC(99, cname: "other") == offer, "a section that names an SSRC keeps it")
        #expect(offer.kind == .offer && offer.sdp.hasSuffix("\r\n"))
        let audioOnly = SessionDescription(kind: .offer, sdp: "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n")
        #expect(audioOnly.addingSSRC(1, cname: "x") == audioOnly)
        // The last section: before the SDP's final empty line.
        let last = SessionDescription(kind: .offer, sdp: "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\n").addingSSRC(7, cname: "c")
        #expect(last.sdp == "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=ssrc:7 cname:c\r\n")
    }
}

/// `SessionDescription.settingDTLSRole`: our answer to Janus waits for its ClientHello.
@Suite("SDP: the DTLS role of an answer")
struct SettingDTLSRoleTests {
    @Test("every a=setup:active or passive line says the role; actpass, other lines and the line ends are kept")
    func setsRole() {
        let sdp = ["v=0", "m=video 9 UDP/TLS/RTP/SAVPF 96", "a=setup:active", "a=mid:0",
                   "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "a=setup:active", "a=setup:actpass", ""].joined(separator: "\r\n")
        let answer = SessionDescription(kind: .answer, sdp: sdp).settingDTLSRole(.passive)
        let lines = answer.sdp.components(separatedBy: "\r\n")
        #expect(lines.filter { $0.hasPrefix("a=setup:") } == ["a=setup:passive", "a=setup:passive", "a=setup:actpass"])
        #expect(answer.kind == .answer && answer.sdp.hasSuffix("\r\n") && lines.count == sdp.components(separatedBy: "\r\n").count)
        #expect(answer.settingDTLSRole(.active).sdp == sdp.replacingOccurrences(of: "a=setup:actpass", with: "a=setup:actpass"))
    }
}
