import PoseMedia

extension SubscriberMediaConfig {
    public mutating func apply(_ profile: LatencyProfile) {
        syncToClock = profile.sinkSyncsToClock
        rtc.jitterBufferLatencyMs = profile.jitterBufferLatencyMs
    }
}
