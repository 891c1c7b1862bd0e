import NodeOutput
import Voice
import PoseCastKit

/// The publisher's once-a-second status: rates since the last sample, the synthetic
/// camera's render figures, the camera's metering state, the pose feed's counters and
/// the process's resources, and what the source watchdog decided this second.
struct PublisherStatusSampler {
    struct Sample {
        var fields: [String: Any]
        var human: String
        var watchdog: SourceWatchdog.Action
        /// The camera pipeline's state, for the watchdog's messages.
        var pipeline: String
        var framesTagged: Int
    }

    private let media: PublisherMedia
    private var lastFrames: UInt64, lastBytes: UInt64
    private var lastTime = ContinuousClock.now
    private(set) var watchdog = SourceWatchdog()

    init(media: PublisherMedia) {
        self.media = media
        lastFrames = media.stats.framesTagged
        lastBytes = media.rtpBytesProduced
    }

    mutating func sample(node: PublisherNode, feed: LivePoseStore.Statistics?, tags: TagPoseTracker.Stats? = nil) -> Sample {
        let now = ContinuousClock.now
        let seconds = (now - lastTime) / .seconds(1)
        let frames = media.stats.framesTagged, bytes = media.rtpBytesProduced
        let (connected, total) = node.subscriberCounts
        let fpsNow = Double(frames - lastFrames) / max(seconds, 0.001)
        let kbps = Double(bytes - lastBytes) * 8 / 1000 / max(seconds, 0.001)
        let annotations = node.board.all.count
        var fields: [String: Any] = [
            "subscribers": connected, "sessions": total, "fps": (fpsNow * 10).rounded() / 10,
            "kbps": kbps.rounded(), "frames_with_pose": Int(frames), "annotations": annotations,
            "bitrate_kbps": media.bitrateKbps, "encoder_kbps": media.encoderTargetKbps,
            "keyframe_requests": Int(media.keyframeRequests), "keyframe_requests_dropped": Int(media.keyframeRequestsDropped),
            "branch_queue_drops": Int(media.branchQueueDrops),
            // Retransmissions not sent: asked again within 100 ms, or over their budget (docs/NETWORK.md).
            "retransmissions_repeated_dropped": Int(media.retransmissionsDropped.repeated),
            "retransmissions_over_budget": Int(media.retransmissionsDropped.overBudget),
            // RTP packets written with the pose header extension (64 bytes each), in all.
            "pose_extension_packets": Int(media.packetsWithPose),
            "candidates_refused": node.candidatesRefused,
        ]
        var human = String(format: "subscribers %d (%d sessions)  %.1f fps  %.0f kbit/s  frames sent with pose %llu  annotations %d",
                           connected, total, fpsNow, kbps, frames, annotations)
        // The size the encoder gets: smaller than the camera's when the link is too slow for it.
        let size = media.encodedSize
        fields["encoded_width"] = size.width; fields["encoded_height"] = size.height
        fields["resolution_steps_down"] = size.stepsDown; fields["resolution_steps_up"] = size.stepsUp
        if size.width != media.config.width || size.height != media.config.height { human += "  sent at \(size.width)×\(size.height)" }
        if let render = media.syntheticStats {
            let ms = Double(render.lastRenderNanos) / 1e6
            fields["render_ms"] = (ms * 10).rounded() / 10
            fields["render_skipped"] = Int(render.framesSkipped)
            fields["frames_rendered"] = Int(render.framesRendered)
            fields["frames_dropped_before_encoding"] = Int(render.framesDropped)
            if let error = render.lastError { fields["render_error"] = error; human += "  render error: \(error)" }
            human += String(format: "  render %.1f ms", ms)
            if render.framesDropped > 0 { human += "  dropped before encoding \(render.framesDropped)" }
        }
        if let tags {
            // `--pose apriltag`: frames whose tags gave a pose, what the last one rested on, the cost.
            fields["tag_frames"] = tags.frames; fields["tag_frames_with_pose"] = tags.framesWithPose
            fields["tag_frames_predicted"] = tags.framesPredicted; fields["tag_frames_ambiguous"] = tags.framesAmbiguous
            fields["tags_seen"] = tags.lastTags
            fields["tag_error_px"] = tags.lastErrorPx.map { ($0 * 100).rounded() / 100 }
            fields["tag_ms"] = (tags.meanMs * 100).rounded() / 100
            // Frames the tracker had no time for (dropped before it, on their own thread).
            let dropped = media.framesDroppedBeforeTags ?? 0
            fields["tag_frames_dropped"] = Int(dropped)
            human += tags.lastTags.isEmpty ? "  no tag in view" : "  tags \(tags.lastTags)"
            human += String(format: " (%.1f ms)", tags.meanMs)
            if dropped > 0 { human += "  dropped before tracking \(dropped)" }
        }
        // The pose in the frames (the trailer for browsers, the SEI through an SFU): frames
        // given one, their bytes and the CPU to add them.
        fields.merge(media.trailerStats.writerFields(prefix: "trailer")) { _, new in new }
        fields.merge(media.seiStats.writerFields(prefix: "sei")) { _, new in new }
        if let st = media.cameraMeter?.status {
            fields.merge(st.statusFields) { _, new in new }
            human += "  " + st.summary
        }
        let fx = media.effects.status
        fields["background"] = fx.background
        fields["framing"] = fx.framing
        fields["zoom"] = (fx.zoom * 1000).rounded() / 1000
        if fx.background != "off" {
            fields["background_source"] = fx.backgroundSource
            fields["background_ms"] = (fx.backgroundMs * 100).rounded() / 100
            if fx.backgroundSource == "person" {
                fields["segmentation_fps"] = fx.segmentationFPS
                fields["person_present"] = fx.personPresent
            }
            if fx.framesWithoutDepth > 0 { fields["background_frames_without_depth"] = Int(fx.framesWithoutDepth) }
            human += "  background \(fx.background) (\(fx.backgroundSource ?? "")) \(String(format: "%.1f", fx.backgroundMs)) ms"
        }
        if fx.framing != "off" || fx.zoom > 1.001 || fx.expertRequest != nil || media.effects.changesSize {
            fields["framing_ms"] = (fx.framingMs * 100).rounded() / 100
            fields["crop"] = fx.crop
            fields["framing_request"] = fx.expertRequest
            human += "  framing \(fx.framing)\(fx.expertRequest.map { " (\($0))" } ?? "") ×\(String(format: "%.2f", fx.zoom)) \(String(format: "%.1f", fx.framingMs)) ms"
        }
        if let error = fx.lastError { fields["effect_error"] = error }
        if let voice = media.voice {
            // The level meters: the field's microphone (as sent), what the field hears, each expert's voice.
            func db(_ level: VoiceLevel) -> Double { (level.decibels * 10).rounded() / 10 }
            fields["voice_muted"] = voice.isMuted
            let sent = voice.packetsSent
            if !sent.isEmpty {
                fields["voice_sent_packets"] = sent.mapValues { Int($0) }
                fields["voice_sent_bytes"] = voice.bytesSent.mapValues { Int($0) }
            }
            if let mic = voice.microphoneLevel { fields["voice_mic_db"] = db(mic) }
            if let speaker = voice.speakerLevel { fields["voice_speaker_db"] = db(speaker) }
            let experts = voice.voiceLevels
            fields["voice_experts_db"] = experts.mapValues(db)
            let playout = voice.playout
            if !playout.isEmpty {
                fields["voice_playout_slack_ms"] = playout.mapValues { $0.slackMs }
                fields["voice_playout_moves"] = playout.mapValues { $0.moves }
            }
            if let mic = voice.microphoneLevel {
                human += "  mic \(voice.isMuted ? "muted" : mic.bar)"
            }
            if let speaker = voice.speakerLevel { human += "  heard \(speaker.bar)" }
        }
        if let feed {
            fields["pose_feed_accepted"] = feed.accepted; fields["pose_feed_rejected"] = feed.rejected
            human += "  pose feed \(feed.accepted) ok / \(feed.rejected) rejected"
        }
        // A source that stops (or never starts) producing is said, precisely, rather than
        // leaving subscribers with a connected call and no picture, and restarted.
        let pipeline = media.pipeline.stateDescription
        let action = watchdog.second(framesArrived: frames != lastFrames, playing: pipeline == "PLAYING")
        fields["source_restarts"] = watchdog.totalRestarts
        // Sockets and threads a session holds must come back when it ends (fault tests, soak).
        if let resources = ProcessResources.current() { fields.merge(resources.statusFields) { _, new in new } }
        (lastFrames, lastBytes, lastTime) = (frames, bytes, now)
        return Sample(fields: fields, human: human, watchdog: action, pipeline: pipeline, framesTagged: Int(frames))
    }
}
