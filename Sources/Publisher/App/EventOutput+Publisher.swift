import NodeOutput
import PoseCastKit
import Signaling
import PoseMedia

/// The publisher node's events as output lines (README "Events").
extension EventOutput {
    func publisherEvent(_ event: PublisherNodeEvent) {
        switch event {
        case let .voiceMuted(consumer, muted):
            self.event(.muted, ["who": consumer, "muted": muted, "atNanos": WallClock.nowNanos()],
                       human: "voice: \(consumer) \(muted ? "muted" : "unmuted")")
        case let .signalingConnected(url, peerId):
            self.event(.signalingConnected, ["url": url, "peerId": peerId], human: "signaling: connected to \(url) as \(peerId)")
        case .signalingLost(let reason):
            self.event(.signalingLost, ["reason": reason], human: "signaling: \(reason); reconnecting")
        case let .serverError(code, details):
            self.event(.serverError, ["code": code?.rawValue ?? "", "details": details], human: "signaling error: \(details)")
        case let .roomBusy(room, details, retryIn):
            self.event(.roomBusy, ["room": room, "details": details, "retryInMs": Int(RetryBackoff.nanos(retryIn) / 1_000_000)],
                       human: "signaling: room \(room) is busy (\(details)); asking again in \(retryIn)")
        case let .sessionStarted(sessionId, consumer, role, poseTransport):
            self.event(.sessionStarted, ["sessionId": sessionId, "consumer": consumer, "role": role.rawValue,
                                         "poseTransport": poseTransport.rawValue],
                       human: "session \(sessionId): \(role.rawValue) \(consumer) joining"
                           + (poseTransport == .trailer ? " (pose in a trailer on each frame)" : poseTransport == .sei ? " (pose in an SEI in each frame)" : ""))
        case .subscriberWithoutPose(let sessionId):
            self.event(.subscriberWithoutPose, ["sessionId": sessionId, "extension": PoseHeaderExtension.uri],
                       human: "session \(sessionId): its answer does not take the pose extension (\(PoseHeaderExtension.uri)): "
                           + "it gets the video without poses and can tap only in screen coordinates")
        case .subscriberConnected(let sessionId):
            self.event(.subscriberConnected, ["sessionId": sessionId], human: "session \(sessionId): connected")
        case let .mediaRoute(sessionId, route):
            mediaRoute(sessionId: sessionId, local: (route.local.kind, route.local.address, route.local.port),
                       remote: (route.remote.kind, route.remote.address, route.remote.port), transport: route.local.transport)
        case let .sessionEnded(sessionId, reason):
            self.event(.sessionEnded, ["sessionId": sessionId, "reason": reason], human: "session \(sessionId): ended (\(reason))")
        case let .candidateRefused(sessionId, kind, details, unreported, total):
            candidateRefused(sessionId: sessionId, kind: kind, details: details, unreported: unreported, total: total)
        case let .control(sessionId, request, reply):
            let answer = ControlCodec.encode(reply)
            self.event(.control, ["sessionId": sessionId, "request": request ?? "", "reply": answer],
                       human: "session \(sessionId): \(request ?? "unreadable request") → \(answer)")
        case let .sessionWarning(sessionId, message):
            self.event(.pipelineWarning, ["sessionId": sessionId, "message": message],
                       human: "session \(sessionId): warning: \(message)")
        case .error(let message):
            self.event(.error, ["message": message], human: "error: \(message)")
        }
    }
}

extension PublisherApp {
    /// The SFU link's events as output lines.
    static func report(_ event: PublisherSFUEvent, out: EventOutput) {
        switch event {
        case let .publishing(room, feed, poseTransport):
            out.event(.sfuPublishing, ["room": Int(room), "feed": Int(feed), "poseTransport": poseTransport.rawValue],
                      human: "sfu: publishing in room \(room) as feed \(feed) (pose in \(poseTransport == .sei ? "an SEI" : "a trailer") in each frame)")
        case .connected:
            out.event(.sfuConnected, [:], human: "sfu: connected to Janus, its certificate checked; frames flow")
        case let .lost(reason, retryIn):
            out.event(.sfuLost, ["reason": reason, "retryInMs": Int(RetryBackoff.nanos(retryIn) / 1_000_000)],
                      human: "sfu: \(reason); publishing again in \(retryIn)")
        }
    }

    static func report(_ event: PublisherSFUVoiceEvent, out: EventOutput) {
        switch event {
        case .roomOpened(let room):
            out.event(.sfuVoiceRoom, ["room": Int(room)], human: "sfu: the experts' voices go through room \(room)")
        case let .roomLost(room, reason):
            out.event(.sfuVoiceRoomLost, ["room": Int(room), "reason": reason], human: "sfu: voice room \(room) lost (\(reason))")
        case let .voiceHeard(sessionId, feed):
            out.event(.sfuVoiceHeard, ["sessionId": sessionId, "feed": Int(feed)], human: "sfu: hearing \(sessionId) (feed \(feed))")
        case let .voiceEnded(sessionId, reason):
            out.event(.sfuVoiceEnded, ["sessionId": sessionId, "reason": reason], human: "sfu: no longer hearing \(sessionId): \(reason)")
        case let .voiceLost(sessionId, reason, retryIn):
            out.event(.sfuVoiceLost, ["sessionId": sessionId, "reason": reason, "retryInMs": Int(RetryBackoff.nanos(retryIn) / 1_000_000)],
                      human: "sfu: the voice of \(sessionId) failed (\(reason)); again in \(retryIn)")
        case let .strangerFeed(feed, display):
            out.event(.sfuStrangerFeed, ["feed": Int(feed), "display": display],
                      human: "sfu: feed \(feed) in the voice room is nobody we told: not listened to")
        }
    }
}
