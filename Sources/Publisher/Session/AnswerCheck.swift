import PoseCastKit
import RTCModel

/// What a subscriber's answer must accept before it is applied:
/// webrtcbin 1.22 applies an answer whose video line lists only codecs we never offered,
/// and then sends our codec anyway. Plain SDP text, no GStreamer, so the session state
/// machine can check it.
public enum AnswerCheck {
    /// Why `sdp` does not accept video in `codec`, or nil when it does: its first video
    /// line must be accepted (port not 0, not `a=inactive`) and list a payload type whose
    /// `a=rtpmap` names the codec.
    public static func refusal(_ sdp: String, codec: VideoCodec) -> String? {
        var video: (port: Int, payloads: [String])?
        var names: [String: String] = [:]
        var inactive = false
        var inVideo = false
        for raw in sdp.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("m=") {
                if inVideo { break }                      // only the first video line
                let fields = line.dropFirst(2).split(separator: " ").map(String.init)
                inVideo = fields.first == "video"
                if inVideo {
                    guard fields.count >= 3, let port = Int(fields[1]) else {
                        return "its video line is malformed: \(line)"
                    }
                    video = (port, Array(fields.dropFirst(3)))
                }
            } else if inVideo, line.hasPrefix("a=rtpmap:") {
                let rest = line.dropFirst("a=rtpmap:".count).split(separator: " ", maxSplits: 1)
                if rest.count == 2, let name = rest[1].split(separator: "/").first {
                    names[String(rest[0])] = String(name)
                }
            } else if inVideo, line == "a=inactive" {
                inactive = true
            }
        }
        guard let video else { return "it has no video line" }
        guard video.port != 0 else { return "it rejects the video (port 0)" }
        guard !inactive else { return "it sets the video inactive" }
        let offered = video.payloads.map { pt in names[pt].map { "\($0) (\(pt))" } ?? pt }
        guard video.payloads.contains(where: { names[$0]?.uppercased() == codec.encodingName }) else {
            return "it accepts no \(codec.encodingName) video, only " + (offered.isEmpty ? "nothing" : offered.joined(separator: ", "))
        }
        return nil
    }

    /// Whether `sdp`'s first video line takes our pose header extension (`a=extmap:ID URI`).
    /// One that does not gets the video without poses: allowed (such a subscriber can send
    /// taps only as screen coordinates), but said, so nobody wonders where the poses went.
    public static func acceptsPoseExtension(_ sdp: String) -> Bool {
        var inVideo = false
        for raw in sdp.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("m=") {
                if inVideo { return false }
                inVideo = line.hasPrefix("m=video ")
            } else if inVideo, line.hasPrefix("a=extmap:") {
                let fields = line.split(separator: " ")
                if fields.count >= 2, fields[1] == PoseWireFormat.headerExtensionURI { return true }
            }
        }
        return false
    }
}
