import Testing

/// What a suite needs of the machine, so `scripts/test` can keep the ones that would
/// starve each other apart (`swift test --filter tag:NAME` / `--skip tag:NAME`) whatever
/// their names or targets. A suite without one of these is quick and CPU-light and runs
/// beside the others.
extension Tag {
    /// Renders hundreds of synthetic-camera frames as fast as it can: CPU-bound, its
    /// searches judged on frames rendered, not on time, but a minute of both cores.
    @Tag public static var rendering: Self
    /// Real-time media with timed expectations (webrtcbin pairs through netsim, echo
    /// rooms through webrtcdsp, a real-time render whose 15th frame is measured): runs
    /// with no other suite beside it.
    @Tag public static var realtime: Self
    /// Real executables (signaling, publisher, subscribers, browsers, Janus, coturn) on
    /// loopback or in network namespaces: one suite at a time.
    @Tag public static var system: Self
}
