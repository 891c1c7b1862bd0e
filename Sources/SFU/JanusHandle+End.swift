import Signaling

extension JanusHandle {
    /// Waits for Janus to end what this handle holds: its hang-up or detach (in its
    /// words), the room destroyed, or the connection closed. Nil when the calling task is
    /// cancelled first. `onEvent`: every other plugin event on the way (a room's publishers
    /// coming and going, for a participant of it).
    public func ended(onEvent: (JSONValue) -> Void = { _ in }) async -> String? {
        for await event in events {
            if event.verb == "hangup" || event.verb == "detached" {
                return "Janus \(event.verb)\(event.reason.map { ": \($0)" } ?? "")"
            }
            guard let data = event.pluginData else { continue }
            if data["videoroom"]?.stringValue == "destroyed" { return "the room was destroyed" }
            onEvent(data)
        }
        return Task.isCancelled ? nil : "the connection to Janus closed"
    }
}
