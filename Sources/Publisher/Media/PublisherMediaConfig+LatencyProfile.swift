import PoseMedia

extension PublisherMediaConfig {
    public mutating func apply(_ profile: LatencyProfile) {
        clockSync = profile.sendClockSync
        rtc.jitterBufferLatencyMs = profile.jitterBufferLatencyMs
    }
}
