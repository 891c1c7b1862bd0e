import RTCModel

extension WebRTCPeer {
    /// Drives a peer connection negotiated with an SFU (which takes our candidates by
    /// trickle) until it fails: every local candidate, then the end of gathering, goes to
    /// `trickle` (nil: gathering done); once the connection is up, the SFU's DTLS
    /// certificate is checked against its SDP and `connected` told the result (it returns
    /// why to give up, or nil to go on). Returns why the connection ended (failed, closed,
    /// a pipeline error in the peer, a certificate refused), or nil when the calling task
    /// was cancelled or the peer closed first.
    public func followSFUConnection(trickle: @Sendable (ICECandidate?) -> Void,
                                    connected: @Sendable (FingerprintCheck) async -> String?) async -> String? {
        for await event in events {
            switch event {
            case .localCandidate(let candidate):
                trickle(candidate)
            case .iceGatheringState(.complete):
                trickle(nil)
            case .connectionState(.connected):
                if let refusal = await connected(await verifyRemoteFingerprintWhenReady()) { return refusal }
            case .connectionState(.failed), .connectionState(.closed):
                return "the connection to the SFU \(event)"
            case .pipelineError(let error):
                return "\(error)"
            default:
                break
            }
        }
        return nil
    }

    /// Closes the peer and takes its webrtcbin out of the pipeline on the state worker
    /// (setting it to NULL joins its threads): for a peer alone in its branch.
    public func leavePipeline() {
        close()
        let (pipeline, webrtc) = (self.pipeline, self.webrtc)
        StateWorker.shared.submit { pipeline.remove(webrtc) }
    }
}
