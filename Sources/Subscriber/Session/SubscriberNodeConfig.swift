import Dispatch
import Logging
import PoseCastKit
import PoseMedia
import RTCSession
import SFU
import Signaling
import Synchronization

public struct SubscriberNodeConfig: Sendable {
    public var signalingURL: String
    public var room = "default"
    public var token: String?
    /// How a `wss://` signaling server is checked (a CA file of its own, or the system's).
    public var signalingTLS: SignalingClientTLS?
    public var role: RoomRole = .expert
    /// Only this producer; nil: the room's first.
    public var producerId: String?
    public var media = SubscriberMediaConfig()
    /// How a tap becomes a world point: from the pose of the frame on screen onto the
    /// ground plane (default), other planes or a fixed depth; or by the publisher's depth.
    public var placement: PlacementMode = .groundPlane
    /// Holds outgoing control messages this long (simulates a slow control channel).
    public var controlDelay: Duration = .zero
    public var reconnectDelay: Duration = .seconds(1)
    /// Waits between attempts while the server answers that the room (or the publisher) is busy.
    public var roomRetry = RetryBackoff()
    /// A session that decodes nothing for this long is torn down and sought again.
    public var stallTimeout: Duration = .seconds(5)
    /// Through an SFU: how often a decoded frame is named to the publisher (`receiving`);
    /// well within its `receptionTimeout` (10 s).
    public var receptionProofInterval: Duration = .seconds(2)
    /// A connected session whose video decodes nothing for `initial` asks for a keyframe,
    /// then again after each wait (doubling, at most `maximum`) until a frame decodes.
    public var keyframeRetry = RetryBackoff(initial: .seconds(1), maximum: .seconds(2))
    /// Through an SFU, the first ask when nothing decoded this long after the session's
    /// start (then `keyframeRetry`'s waits).
    public var firstKeyframeAskThroughSFU: Duration = .milliseconds(400)
    /// How often we tell the publisher what we received (`ReceptionReport`, its
    /// congestion control's loss and queueing signal).
    public var receptionReportInterval: Duration = .milliseconds(200)
    /// The jitter buffer's latency follows retransmission's needs (`JitterLatency`), from
    /// `media.rtc.jitterBufferLatencyMs` up to a ceiling the path's round trip sets
    /// (within `maxJitterLatencyMs`); off: it stays there.
    public var adaptJitterLatency = true
    /// The most the jitter buffer's latency may reach (`JitterLatency`): its ceiling is two
    /// retransmission round trips of the path plus a margin, within this.
    public var maxJitterLatencyMs = 1000
    /// Where an adapting jitter buffer starts, until the publisher's echo of our first
    /// reception report tells the path's round trip (`JitterLatency.unknownPathMs`): room
    /// for one retransmission on a path of up to 250 ms; nil starts at the floor.
    public var unknownPathJitterLatencyMs: Int? = 300

    /// The jitter buffer's latency machine these settings ask for.
    var jitterLatencyConfiguration: JitterLatency.Configuration {
        var c = JitterLatency.Configuration(floorMs: media.rtc.jitterBufferLatencyMs)
        c.maximumMs = maxJitterLatencyMs
        c.unknownPathMs = unknownPathJitterLatencyMs
        return c
    }

    /// The media settings a session starts with: an adapting jitter buffer at its start.
    var sessionMedia: SubscriberMediaConfig {
        var m = media
        if adaptJitterLatency { m.rtc.jitterBufferLatencyMs = JitterLatency(configuration: jitterLatencyConfiguration).latencyMs }
        return m
    }
    /// How long the media is watched when the room's publisher shows up under a new peer
    /// id while a session runs: frames in its second half keep the session (a signaling
    /// restart), none end it and ask the new publisher (the old one died meanwhile).
    public var liveMediaWindow: Duration = .seconds(1)
    /// A control request with no reply after this long is reported (`requestUnanswered`).
    public var controlReplyTimeout: Duration = .seconds(5)
    /// Checks the publisher's marks in the decoded pictures (`--check-markers`); the
    /// executable feeds it this node's events and `media.onPicture`.
    public var markerWatcher: MarkerWatcher?
    /// Take the media from an SFU (Janus) instead of the publisher: the session on
    /// signaling then carries control only (`{"via": "sfu"}` in our meta).
    public var sfu: SubscriberSFUConfig?
    public init(signalingURL: String) { self.signalingURL = signalingURL }
}
