internal import CGStreamer

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
        // GStreamer's parser is lenient (it skips lines it does not know), so check the
        // mandatory shape first: "v=0" then an origin line.
        guard text.hasPrefix("v=0"), text.split(whereSeparator: \.isNewline).contains(where: { $0.hasPrefix("o=") }) else {
            throw .invalidDescription("SDP must start with 'v=0' and have an 'o=' line")
        }
        var message: UnsafeMutablePointer<GstSDPMessage>? = nil
        guard gst_sdp_message_new_from_text(text, &message) == GST_SDP_OK, let message else {
            throw .invalidDescription("SDP does not parse")
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
