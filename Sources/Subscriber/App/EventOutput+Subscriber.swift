import Foundation
import NodeOutput
import PoseCastKit
import Signaling

/// The subscriber's output: its node's events, the pose of the frame on screen and the
/// once-a-second status, as JSON lines or as lines a person reads (docs/SUBSCRIBER.md).
extension EventOutput {
    func subscriberPose(_ node: SubscriberNode) {
        guard let frame = node.frameWindow.lastFrame else {
            self.event(.pose, ["frameId": NSNull()], human: "pose: no frame on screen yet")
            return
        }
        guard let p = frame.pose else {
            self.event(.pose, ["frameId": NSNull(), "error": frame.poseError.map { "\($0)" } ?? "no pose"],
                      human: "pose: the frame on screen carries no pose")
            return
        }
        let fields: [String: Any] = [
            "frameId": p.frameID, "captureTimeNs": p.captureTimeNanos,
            "position": [p.position.x, p.position.y, p.position.z].map(Double.init),
            "orientation": [p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w].map(Double.init),
            "intrinsics": [p.intrinsics.fx, p.intrinsics.fy, p.intrinsics.cx, p.intrinsics.cy].map(Double.init),
            "flags": Int(p.flags.rawValue),
        ]
        self.event(.pose, fields, human: String(
            format: "pose of frame %u: position (%.3f, %.3f, %.3f) m  orientation (%.4f, %.4f, %.4f, %.4f)  fx %.3f fy %.3f",
            p.frameID, p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y, p.orientation.z,
            p.orientation.w, p.intrinsics.fx, p.intrinsics.fy))
    }

    func subscriberStatus(_ node: SubscriberNode) {
        let w = node.frameWindow
        var fields: [String: Any] = [
            "connected": node.isConnected, "fps": (w.fps * 10).rounded() / 10, "frames": w.framesDecoded,
            "frames_with_pose": w.framesWithPose, "pose_pct": (w.posePercent * 100).rounded() / 100,
            "rejected_poses": node.rejections?.total ?? 0, "candidates_refused": node.candidatesRefused,
        ]
        fields["latency_ms_p50"] = w.latencyMsP50.map { ($0 * 10).rounded() / 10 }
        // The decoded picture's size: the publisher sends a smaller one when the link is slow.
        var size = ""
        if let frame = w.lastFrame, frame.width > 0 {
            fields["width"] = frame.width; fields["height"] = frame.height
            size = "  \(frame.width)×\(frame.height)"
        }
        let media = node.mediaStats
        if let carrier = media?.poseCarrier { fields["pose_carrier"] = carrier }
        if let sei = media?.sei { fields.merge(sei.readerFields(prefix: "sei", timing: "read")) { _, new in new } }
        if let trailer = media?.trailer { fields.merge(trailer.readerFields(prefix: "trailer", timing: "strip")) { _, new in new } }
        var voiceLine = ""
        if let voice = node.voice {
            // The level meters: our microphone (as sent) and what we hear.
            fields["voice_muted"] = voice.isMuted
            fields["voice_sent_packets"] = Int(voice.packetsSent)
            fields["voice_sent_bytes"] = Int(voice.bytesSent)
            if let mic = voice.microphoneLevel { fields["voice_mic_db"] = (mic.decibels * 10).rounded() / 10; voiceLine += "  mic \(voice.isMuted ? "muted" : mic.bar)" }
            if let heard = voice.speakerLevel { fields["voice_heard_db"] = (heard.decibels * 10).rounded() / 10; voiceLine += "  heard \(heard.bar)" }
        }
        var scene = voiceLine
        // The camera's state is the publisher's: not shown once the session is gone.
        if node.isConnected, let st = node.sceneStatus {
            fields.merge(st.statusFields) { _, new in new }
            scene = "  " + st.summary
        }
        status(fields, human: String(
            format: "%@  %.1f fps  latency p50 %@  frames %d  with pose %.2f%%",
            node.isConnected ? "connected" : "waiting for the publisher", w.fps,
            w.latencyMsP50.map { String(format: "%.1f ms", $0) } ?? "–", w.framesDecoded, w.posePercent) + size + scene)
    }

    func subscriberEvent(_ event: SubscriberNodeEvent) {
        switch event {
        case let .signalingConnected(url, peerId):
            self.event(.signalingConnected, ["url": url, "peerId": peerId], human: "signaling: connected to \(url) as \(peerId)")
        case .signalingLost(let reason):
            self.event(.signalingLost, ["reason": reason], human: "signaling: \(reason); retrying")
        case let .serverError(code, details):
            self.event(.serverError, ["code": code?.rawValue ?? "", "details": details], human: "signaling error: \(details)")
        case let .roomBusy(room, details, retryIn):
            self.event(.roomBusy, ["room": room, "details": details, "retryInMs": Int(RetryBackoff.nanos(retryIn) / 1_000_000)],
                       human: "signaling: room \(room) is busy (\(details)); asking again in \(retryIn)")
        case let .sessionStarted(sessionId, producer):
            self.event(.sessionStarted, ["sessionId": sessionId, "producer": producer], human: "session \(sessionId) with \(producer)")
        case .connected(let sessionId):
            self.event(.connected, ["sessionId": sessionId], human: "session \(sessionId): connected")
        case let .jitterLatency(sessionId, ms, rtt):
            self.event(.jitterLatency, ["sessionId": sessionId, "latencyMs": ms, "retransmissionRoundTripMs": (rtt * 10).rounded() / 10],
                       human: "session \(sessionId): jitter buffer \(ms) ms (retransmission round trip \(Int(rtt)) ms)")
        case let .mediaRoute(sessionId, route):
            mediaRoute(sessionId: sessionId, local: (route.local.kind, route.local.address, route.local.port),
                       remote: (route.remote.kind, route.remote.address, route.remote.port), transport: route.local.transport)
        case let .keyframeRequested(sessionId, attempt, silentFor):
            let ms = Int(RetryBackoff.nanos(silentFor) / 1_000_000)
            self.event(.keyframeRequested, ["sessionId": sessionId, "attempt": attempt, "silentMs": ms],
                       human: "session \(sessionId): no frame decoded for \(ms) ms, keyframe asked for (\(attempt))")
        case let .sessionEnded(sessionId, reason):
            self.event(.sessionEnded, ["sessionId": sessionId, "reason": reason], human: "session \(sessionId): ended (\(reason))")
        case let .candidateRefused(sessionId, kind, details, unreported, total):
            candidateRefused(sessionId: sessionId, kind: kind, details: details, unreported: unreported, total: total)
        case let .publisherWithoutPose(sessionId, producer, frames):
            self.event(.publisherWithoutPose, ["sessionId": sessionId, "producer": producer, "frames": frames],
                       human: "session \(sessionId): publisher \(producer) sends no pose with its frames (none of the first \(frames)): "
                           + "taps cannot be placed in the world, only sent as screen coordinates (tapnaive)")
        case let .requestUnanswered(id, type, reason):
            self.event(.requestUnanswered, ["id": id, "type": type, "reason": reason], human: "← no reply to \(id) (\(type)): \(reason)")
        case .controlOpen:
            self.event(.controlOpen, [:], human: "control channel open")
        case let .sfuVoice(sessionId, note):
            switch note {
            case let .published(room, feed):
                self.event(.sfuVoicePublishing, ["sessionId": sessionId, "state": "published", "room": Int(room), "feed": Int(feed)],
                           human: "session \(sessionId): our voice published in voice room \(room) as feed \(feed)")
            case .talking(let room):
                self.event(.sfuVoicePublishing, ["sessionId": sessionId, "state": "talking", "room": Int(room)],
                           human: "session \(sessionId): our voice flows to the field through the SFU")
            case let .lost(reason, retryIn):
                self.event(.sfuVoiceLost, ["sessionId": sessionId, "reason": reason, "retryInMs": Int(RetryBackoff.nanos(retryIn) / 1_000_000)],
                           human: "session \(sessionId): our voice through the SFU failed (\(reason)); again in \(retryIn)")
            }
        case let .sfuSubscribed(sessionId, room, feed, server):
            self.event(.sfuSubscribed, ["sessionId": sessionId, "room": Int(room), "feed": Int(feed), "server": server],
                       human: "session \(sessionId): subscribed to feed \(feed) of room \(room) through the SFU at \(server); control over signaling")
        case let .requestSent(id, type, text):
            self.event(.requestSent, ["id": id, "type": type, "text": text], human: "→ \(id) \(type)")
        case .reply(let reply):
            switch reply {
            case let .ack(id, annotationId, skipped):
                var fields: [String: Any] = ["id": id]
                fields["annotationId"] = annotationId
                if !skipped.isEmpty { fields["skipped"] = skipped.map(\.rawValue) }
                self.event(.ack, fields, human: "← ack \(id)" + (annotationId.map { " (annotation \($0))" } ?? "")
                          + (skipped.isEmpty ? "" : " (skipped as unsupported: \(skipped.map(\.rawValue).joined(separator: ", ")))"))
            case .error(let e):
                var fields: [String: Any] = ["code": e.code.rawValue, "message": e.message]
                fields["id"] = e.id
                self.event(.error, fields, human: "← error \(e.id ?? "-") \(e.code.rawValue): \(e.message)")
            case .sceneStatus:
                // Streamed several times a second: JSON readers get every one, people the status line.
                var fields = (try? JSONSerialization.jsonObject(with: Data(ControlCodec.encode(reply).utf8))) as? [String: Any] ?? [:]
                fields.removeValue(forKey: "type")
                self.event(.sceneStatus, fields, human: nil)
            case .annotations(let list):
                self.event(.annotations, ["count": list.count, "ids": list.map(\.id), "labels": list.map(\.label),
                                          "positions": list.map { [$0.position.x, $0.position.y, $0.position.z].map(Double.init) }],
                          human: "← annotations: " + (list.isEmpty ? "none" : list.map { "\($0.id) \($0.kind.rawValue) \($0.label)" }.joined(separator: ", ")))
            case .annotationVisibility(let hidden):
                self.event(.annotationVisibility, ["hidden": hidden],
                           human: "← annotations hidden behind something nearer: " + (hidden.isEmpty ? "none" : hidden.joined(separator: ", ")))
            case .voices(let list):
                self.event(.voices, ["participants": list.map { ["id": $0.id, "role": $0.role, "muted": $0.muted, "mayTalk": $0.mayTalk] }],
                           human: "← voices: " + list.map { "\($0.id) (\($0.role))\($0.muted ? " muted" : "")\($0.mayTalk ? "" : " listening")" }
                            .joined(separator: ", "))
            case .voiceRoute(let route):
                // The pin and our name there stay unsaid: they are what keeps the room ours.
                self.event(.sfuVoicePublishing, ["state": "routed", "room": Int(route.room)], human: "← our voice goes through voice room \(route.room) of the SFU")
            }
        case .placement(let r):
            var fields: [String: Any] = [
                "annotationId": r.annotationId, "placement": r.placement.rawValue,
                "truth": [r.truth.x, r.truth.y, r.truth.z].map(Double.init),
                "placed": [r.placed.x, r.placed.y, r.placed.z].map(Double.init),
                "error_cm": Double(r.errorCentimetres), "tapFrameId": r.tapFrameId, "laterFrameId": r.laterFrameId,
            ]
            fields["error_px"] = r.errorPixels.map { Double($0) }
            self.event(.placement, fields, human: String(
                format: "placement of %@ (%@): %.2f cm, %@ from the true point", r.annotationId, r.placement.rawValue,
                r.errorCentimetres, r.errorPixels.map { String(format: "%.2f px", $0) } ?? "– px"))
        case .annotationPlaced(let a):
            self.event(.annotationPlaced, ["annotationId": a.id, "placement": a.placement.rawValue,
                                           "position": [a.position.x, a.position.y, a.position.z].map(Double.init)],
                       human: Self.placedLine(a))
        case .error(let message):
            self.event(.localError, ["message": message], human: "error: \(message)")
        }
    }
}

extension EventOutput {
    /// "pin a3 placed by the publisher's depth at (0.60, 0.00, 0.30) m".
    static func placedLine(_ a: Annotation) -> String {
        let how = switch a.placement {
        case .publisherDepth: "by the publisher's depth"
        case .world: "on our placement planes (the publisher has no depth)"
        case .screen: "from screen coordinates (naive)"
        case .auto: "automatically"
        }
        return String(format: "%@ %@ placed %@ at (%.2f, %.2f, %.2f) m", a.kind.rawValue, a.id, how,
                      a.position.x, a.position.y, a.position.z)
    }
}
