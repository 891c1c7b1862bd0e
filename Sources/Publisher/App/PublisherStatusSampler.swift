import NodeOutput
import PoseCastKit

/// The publisher's once-a-second status: rates since the last sample, the synthetic
/// camera's render figures, the camera's metering state, the pose feed's counters and
/// the process's resources, and a source that stopped producing, said once after 3 s.
struct PublisherStatusSampler {
    struct Sample {
        var fields: [String: Any]
        var human: String
        /// Set on the third silent second in a row.
        var stalled: (fields: [String: Any], human: String)?
    }

    private let media: PublisherMedia
    private var lastFrames: UInt64, lastBytes: UInt64
    private var lastTime = ContinuousClock.now
    private var silentSeconds = 0

    init(media: PublisherMedia) {
        self.media = media
        lastFrames = media.stats.framesTagged
        lastBytes = media.rtpBytesProduced
    }

    mutating func sample(node: PublisherNode, feed: LivePoseStore.Statistics?) -> Sample {
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
        ]
        var human = String(format: "subscribers %d (%d sessions)  %.1f fps  %.0f kbit/s  frames sent with pose %llu  annotations %d",
                           connected, total, fpsNow, kbps, frames, annotations)
        if let render = media.syntheticStats {
            let ms = Double(render.lastRenderNanos) / 1e6
            fields["render_ms"] = (ms * 10).rounded() / 10
            fields["render_skipped"] = Int(render.framesSkipped)
            fields["frames_rendered"] = Int(render.framesRendered)
            if let error = render.lastError { fields["render_error"] = error; human += "  render error: \(error)" }
            human += String(format: "  render %.1f ms", ms)
        }
        if let st = media.cameraMeter?.status {
            fields.merge(st.statusFields) { _, new in new }
            human += "  " + st.summary
        }
        if let feed {
            fields["pose_feed_accepted"] = feed.accepted; fields["pose_feed_rejected"] = feed.rejected
            human += "  pose feed \(feed.accepted) ok / \(feed.rejected) rejected"
        }
        // A source that stops (or never starts) producing is said once, precisely, rather
        // than leaving subscribers with a connected call and no picture.
        silentSeconds = frames == lastFrames ? silentSeconds + 1 : 0
        var stalled: (fields: [String: Any], human: String)?
        if silentSeconds == 3 {
            let pipeline = media.pipeline.stateDescription
            stalled = (["seconds": silentSeconds, "framesTagged": Int(frames), "pipeline": pipeline],
                       "error: no frame from the camera for \(silentSeconds) s (camera pipeline \(pipeline), \(frames) frames so far)")
        }
        // Sockets and threads a session holds must come back when it ends (fault tests, soak).
        if let resources = ProcessResources.current() { fields.merge(resources.statusFields) { _, new in new } }
        (lastFrames, lastBytes, lastTime) = (frames, bytes, now)
        return Sample(fields: fields, human: human, stalled: stalled)
    }
}
