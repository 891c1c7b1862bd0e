import Foundation

/// Asks a TURN server, once, whether it takes our credentials: an Allocate request with
/// long-term credentials (RFC 8656: the first try is refused 401 with the realm and a
/// nonce, the second carries USERNAME, REALM, NONCE and MESSAGE-INTEGRITY), then the
/// allocation released at once (a Refresh with lifetime 0).
///
/// Why: webrtcbin and libnice say nothing when a TURN server refuses a password; the
/// session just never connects ("peer connection not up" after the setup timeout). This
/// check names a refused credential, an unreachable server and a wrong address at start.
/// UDP only (`turn:` URLs without `?transport=tcp`).
public enum TURNCredentialCheck {
    public enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// The server allocated a relay for these credentials (and released it).
        case accepted(relay: String)
        /// The server refused these credentials (401 after they were sent), with its reason.
        case refused(code: Int, reason: String)
        /// No answer within the time allowed.
        case unreachable
        /// Anything else: a bad URL, an unexpected answer, another error code.
        case failed(String)

        public var state: String {
            switch self {
            case .accepted: "accepted"
            case .refused: "refused"
            case .unreachable: "unreachable"
            case .failed: "failed"
            }
        }

        public var description: String {
            switch self {
            case .accepted(let relay): "credentials accepted (relay \(relay), released again)"
            case let .refused(code, reason): "credentials refused (\(code) \(reason))"
            case .unreachable: "no answer from the server"
            case .failed(let why): why
            }
        }
    }

    /// Checks `url` (`turn://USER:PASSWORD@HOST:PORT`, user and password percent-encoded
    /// as in webrtcbin's `turn-server`), waiting at most `timeout` seconds per answer. The
    /// socket calls block: run it off the async pool (`check(_:timeout:) async` does).
    public static func checkBlocking(_ url: String, timeout: Double = 2) -> Outcome {
        guard let server = TURNServerURL(url) else { return .failed("not a turn://USER:PASSWORD@HOST:PORT URL") }
        guard let socket = UDPExchange(host: server.host, port: server.port, timeout: timeout) else {
            return .failed("cannot resolve or reach \(server.host):\(server.port)")
        }
        defer { socket.close() }
        // 1. Unauthenticated: the server answers 401 with its realm and a nonce.
        var request = STUNMessage(type: STUNMessage.allocateRequest)
        request.add(.requestedTransport, [17, 0, 0, 0])
        guard let first = socket.exchange(request) else { return .unreachable }
        if first.type == STUNMessage.allocateSuccess { return .accepted(relay: first.relayedAddress ?? "?") }
        guard let realm = first.string(.realm), let nonce = first.string(.nonce), first.errorCode?.code == 401 else {
            return .failed("unexpected answer to an Allocate: \(first.summary)")
        }
        guard let key = STUNDigests.md5(Array("\(server.username):\(realm):\(server.password)".utf8)) else {
            return .failed("libcrypto refused MD5, which TURN's long-term credentials need (a FIPS-only OpenSSL?)")
        }
        // 2. With the credentials (again once if the nonce went stale).
        var currentNonce = nonce
        for _ in 0..<2 {
            var authed = STUNMessage(type: STUNMessage.allocateRequest)
            authed.add(.requestedTransport, [17, 0, 0, 0])
            authed.add(.username, Array(server.username.utf8))
            authed.add(.realm, Array(realm.utf8))
            authed.add(.nonce, Array(currentNonce.utf8))
            guard let answer = socket.exchange(authed, integrityKey: key) else { return .unreachable }
            if answer.type == STUNMessage.allocateSuccess {
                var release = STUNMessage(type: STUNMessage.refreshRequest)
                release.add(.lifetime, [0, 0, 0, 0])
                release.add(.username, Array(server.username.utf8))
                release.add(.realm, Array(realm.utf8))
                release.add(.nonce, Array(currentNonce.utf8))
                _ = socket.exchange(release, integrityKey: key)
                return .accepted(relay: answer.relayedAddress ?? "?")
            }
            guard let error = answer.errorCode else { return .failed("unexpected answer: \(answer.summary)") }
            if error.code == 438, let fresh = answer.string(.nonce) { currentNonce = fresh; continue }
            if error.code == 401 { return .refused(code: 401, reason: error.reason.isEmpty ? "Unauthorized" : error.reason) }
            return .failed("the server answered \(error.code) \(error.reason)")
        }
        return .failed("the server kept calling the nonce stale")
    }

    /// `checkBlocking` on a thread of its own.
    public static func check(_ url: String, timeout: Double = 2) async -> Outcome {
        await OwnThread.run { checkBlocking(url, timeout: timeout) }
    }
}

/// `turn://USER:PASSWORD@HOST:PORT`, user and password percent-decoded.
struct TURNServerURL {
    var username: String
    var password: String
    var host: String
    var port: UInt16

    init?(_ text: String) {
        guard let components = URLComponents(string: text), ["turn", "turns"].contains(components.scheme ?? ""),
              let host = components.host, !host.isEmpty,
              let username = components.user, let password = components.password else { return nil }
        self.username = username
        self.password = password
        self.host = host
        self.port = UInt16(components.port ?? 3478)
    }
}
