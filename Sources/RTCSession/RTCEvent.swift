/// Everything a `WebRTCPeer` reports, on its one `events` stream.
public enum RTCEvent: Sendable {
    case negotiationNeeded
    /// A local ICE candidate to trickle to the remote peer.
    case localCandidate(ICECandidate)
    case iceGatheringState(ICEGatheringState)
    case iceConnectionState(ICEConnectionState)
    case connectionState(PeerConnectionState)
    case signalingState(SignalingState)
    /// The remote peer opened a data channel.
    case dataChannel(DataChannel)
    case dataChannelOpen(label: String)
    case dataChannelMessage(label: String, DataChannelMessage)
    case dataChannelClosed(label: String)
    case dataChannelError(label: String, message: String)
    /// webrtcbin exposed a receive pad with these caps.
    case incomingStream(pad: String, caps: String)
    /// An error or warning posted on the pipeline's bus.
    case pipelineError(RTCError)
    case pipelineWarning(String)
}
