import PoseMedia
import Publisher
import RTCSession
import TestSupport
import Testing

/// A branch that declares its SSRC (the publisher's into an SFU): webrtcbin writes the
/// media's SSRC and its retransmissions' in an `ssrc-group:FID`, which is what Janus
/// routes by. Without the group Janus dropped every retransmission: through Janus with 5 %
/// loss on the publisher's uplink two subscribers missed 535 of 1274 frames each and
/// asked for 17 keyframes; with it, none missed (docs/SCALING.md).
@Suite("declared SSRCs for an SFU", .serialized)
struct DeclaredSSRCTests {
    @Test("the offer names the payloader's SSRC and its RTX SSRC in one FID group; a direct branch names at most the same stream")
    func fidGroup() async throws {
        var config = PublisherMediaConfig()
        config.width = 160; config.height = 120
        let publisher = try PublisherMedia(config: config, poseSource: { id, t in PoseGenerator().pose(frameID: id, captureTimeNanos: t) })
        try await publisher.start()
        defer { publisher.stop() }
        let declaring = try await publisher.addPeer(name: "sfu", declaresSSRC: true)
        defer { publisher.removePeer(declaring) }
        // Known once a frame reached the payloader (addPeer waited for it).
        let ssrc = try #require(publisher.sentSSRC(.headerExtension))
        let offer = try await declaring.createOffer().sdp
        let group = try #require(offer.split(separator: "\r\n").first { $0.hasPrefix("a=ssrc-group:FID ") }, "\(offer)")
        let members = group.dropFirst("a=ssrc-group:FID ".count).split(separator: " ").compactMap { UInt32($0) }
        #expect(members.count == 2 && members[0] == ssrc && members[1] != ssrc, "\(group) for the payloader's \(ssrc)")
        if let rtx = members.last {
            #expect(offer.contains("a=ssrc:\(rtx) "), "the RTX SSRC has its own lines: \(offer)")
        }

        let direct = try await publisher.addPeer(name: "direct")
        defer { publisher.removePeer(direct) }
        let plain = try await direct.createOffer().sdp
        // A direct branch may name SSRCs too: once the payloader's caps reached it before
        // the offer, webrtcbin writes what they carry, group and all (seen 10.8 s into a
        // slow parallel run). Whatever it names is the payloader's stream, never another.
        if let directGroup = plain.split(separator: "\r\n").first(where: { $0.hasPrefix("a=ssrc-group:FID ") }) {
            let first = directGroup.dropFirst("a=ssrc-group:FID ".count).split(separator: " ").first.flatMap { UInt32($0) }
            #expect(first == ssrc, "a direct branch names another stream: \(directGroup) for the payloader's \(ssrc)")
        }
    }
}
