/// A message on a data channel, as text or bytes.
public enum DataChannelMessage: Sendable, Hashable {
    case text(String)
    case binary([UInt8])
}

public enum ICEGatheringState: Int32, Sendable { case new = 0, gathering, complete }
public enum ICEConnectionState: Int32, Sendable { case new = 0, checking, connected, completed, failed, disconnected, closed }
public enum PeerConnectionState: Int32, Sendable { case new = 0, connecting, connected, disconnected, failed, closed }
public enum SignalingState: Int32, Sendable {
    case stable = 0, closed, haveLocalOffer, haveRemoteOffer, haveLocalPranswer, haveRemotePranswer
}
