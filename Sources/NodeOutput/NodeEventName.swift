/// Every `"event"` the executables print with `--json`, in one place: the executables
/// emit them through `EventOutput`, the system tests match them (`JSONLine.is(_:)`), and
/// the scripts read this file (`scripts/lib/events.py`), so a renamed or misspelt event
/// fails to compile or fails the script loudly instead of never matching.
/// Keep one `case` per line: scripts/lib/events.py parses them.
public enum NodeEventName: String, CaseIterable, Sendable {
    // Both nodes
    case status
    case stopped
    case error
    case signalingConnected
    case signalingLost
    case turnServer
    case serverError
    case sessionStarted
    case sessionEnded
    case candidateRefused
    case roomBusy
    // Both nodes, through an SFU (Janus)
    case sfuPublishing
    case sfuSubscribed
    case sfuConnected
    case sfuLost
    // The experts' voices through an SFU (Janus's voice room)
    case sfuVoiceRoom
    case sfuVoiceRoomLost
    case sfuVoiceHeard
    case sfuVoiceEnded
    case sfuVoiceLost
    case sfuStrangerFeed
    case sfuVoicePublishing
    // The cascade of Janus servers (posecast-cascade)
    case cascadeWaiting
    case cascadeWatching
    case cascadeOriginLost
    case cascadeEdgeReady
    case cascadeEdgeLost
    case cascadeCleanupFailed
    case relayStarted
    case relayEnded
    case relayFailed
    // Publisher
    case listening
    case subscriberConnected
    case subscriberWithoutPose
    case control
    case sourceStalled
    case sourceRestarted
    case sourceRecovered
    case pipelineError
    case pipelineWarning
    case poseFeed
    case poseFeedListening
    case anchorsLoaded
    case anchorsNotSaved
    case congestion
    case linkChanged
    case effectChanged
    case effectError
    case voice
    case voiceUnavailable
    case voiceDevice
    case tone
    case muted
    case voices
    // Subscriber
    case connected
    case controlOpen
    case publisherWithoutPose
    case requestUnanswered
    case requestSent
    case ack
    case annotations
    case annotationVisibility
    case sceneStatus
    case placement
    case pose
    case commandError
    case localError
    case annotationVisible
    case markerReport
    case markerCheckDone
    case windowInput
    case mediaRoute
    case jitterLatency
    case keyframeRequested
    case annotationPlaced
    case windowNotice
    case windowClosed
    case snapshot
    case quality
    case avSync
}
