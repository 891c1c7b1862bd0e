internal import CGStreamer

/// An SDP offer or answer as text.
public struct SessionDescription: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable { case offer, answer, pranswer, rollback }
    public var kind: Kind
    public var sdp: String
    public init(kind: Kind, sdp: String) { self.kind = kind; self.sdp = sdp }
}

/// A trickled ICE candidate for the media line `mlineIndex`.
public struct ICECandidate: Sendable, Hashable, Codable {
    public var mlineIndex: UInt32
    public var candidate: String
    public init(mlineIndex: UInt32, candidate: String) { self.mlineIndex = mlineIndex; self.candidate = candidate }
}

extension SessionDescription.Kind {
    var gstType: GstWebRTCSDPType {
        switch self {
        case .offer: GST_WEBRTC_SDP_TYPE_OFFER
        case .answer: GST_WEBRTC_SDP_TYPE_ANSWER
        case .pranswer: GST_WEBRTC_SDP_TYPE_PRANSWER
        case .rollback: GST_WEBRTC_SDP_TYPE_ROLLBACK
        }
    }
}

/// A parsed SDP message (full ownership; freed in deinit).
final class SDPMessage {
    private(set) var raw: UnsafeMutablePointer<GstSDPMessage>?

    init(parsing text: String) throws(RTCError) {
        var message: UnsafeMutablePointer<GstSDPMessage>? = nil
        guard gst_sdp_message_new_from_text(text, &message) == GST_SDP_OK, let message else {
            throw .invalidDescription("SDP does not parse")
        }
        guard gst_sdp_message_medias_len(message) > 0 || text.contains("v=0") else {
            gst_sdp_message_free(message)
            throw .invalidDescription("SDP has no session")
        }
        raw = message
    }

    deinit { if let raw { gst_sdp_message_free(raw) } }

    /// Hands the message to a new GstWebRTCSessionDescription (which takes ownership).
    func takeDescription(_ kind: SessionDescription.Kind) -> UnsafeMutablePointer<GstWebRTCSessionDescription> {
        let description = gst_webrtc_session_description_new(kind.gstType, raw)!
        raw = nil
        return description
    }
}
