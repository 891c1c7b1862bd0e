import NodeOutput
import RTCSession

/// Says at start whether the TURN server takes our credentials (`TURNCredentialCheck`),
/// as one `turnServer` event: webrtcbin would only show a session that never connects.
public enum TURNReport {
    /// Checks `url` on a thread of its own and says the outcome; the server is named
    /// without the credentials.
    public static func say(_ url: String, out: EventOutput) async {
        let outcome = await TURNCredentialCheck.check(url)
        let server = url.split(separator: "@").last.map(String.init) ?? url
        out.event(.turnServer, ["server": server, "state": outcome.state, "details": outcome.description],
                  human: "TURN \(server): \(outcome)")
    }
}
