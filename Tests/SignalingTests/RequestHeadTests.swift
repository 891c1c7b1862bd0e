import Foundation
import NIOCore
@testable import Signaling
import Testing

/// The front door's reading of a request head, without sockets: what passes, and the
/// answer for each way a head can be wrong.
@Suite("Front door: request heads")
struct RequestHeadTests {
    static func parse(_ text: String) -> Result<RequestHead, FrontDoorRefusal> { RequestHead.parse(Array(text.utf8)) }

    @Test("a browser's GET and a WebSocket upgrade pass, with their fields; empty lines before the request are skipped")
    func accepted() throws {
        let get = try Self.parse("\r\nGET /console.js?v=2 HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nAccept:  */* ").get()
        #expect(get.method == "GET" && get.target == "/console.js?v=2" && get.field("host") == "127.0.0.1:8443")
        #expect(get.field("accept") == "*/*" && !get.isWebSocketUpgrade)
        let upgrade = try Self.parse("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nOrigin: http://h").get()
        #expect(upgrade.isWebSocketUpgrade && upgrade.field("origin") == "http://h")
        // swift-nio upgrades only with both fields: without Connection it is a plain GET.
        #expect(try !Self.parse("GET / HTTP/1.1\r\nUpgrade: websocket").get().isWebSocketUpgrade)
        #expect(try Self.parse("HEAD /index.html HTTP/1.0\nHost: h").get().version == "HTTP/1.0", "bare LFs")
    }

    @Test("each malformed head gets its status: 400, 405 or 505")
    func refused() throws {
        let cases: [(String, Int)] = [
            ("G\u{0}T / HTTP/1.1\r\nHost: h", 400),             // NUL in the method
            ("GET /caf\u{e9} HTTP/1.1\r\nHost: h", 400),         // a raw non-ASCII byte in the path
            ("GET / HTTP/9.9\r\nHost: h", 505),
            ("GET / HTTX/1.1\r\nHost: h", 400),
            ("GET  / HTTP/1.1", 400),                             // two spaces
            ("GET / HTTP/1.1\r\nHost h", 400),                    // no colon
            ("GET / HTTP/1.1\r\nHost: h\r\n folded", 400),
            ("GET / HTTP/1.1\r\nX-A: a\u{1}b", 400),              // a control byte in a value
            ("GET / HTTP/1.1\r\nX A: b", 400),                    // a space in a name
            ("GET /index.html%00.js HTTP/1.1\r\nHost: h", 400),   // NUL once decoded
            ("GET /a%0a HTTP/1.1\r\nHost: h", 400),
            ("GET /a%zz HTTP/1.1\r\nHost: h", 400),
            ("POST / HTTP/1.1\r\nHost: h", 405),
            ("", 400),
        ]
        for (head, status) in cases {
            switch Self.parse(head) {
            case .success: Issue.record("accepted: \(head.debugDescription)")
            case .failure(let refusal): #expect(refusal.status == status, "\(head.debugDescription): \(refusal)")
            }
        }
        #expect(try Self.parse("GET /a%20b?x=%00 HTTP/1.1").get().target == "/a%20b?x=%00", "a NUL in the query names no file")
    }

    @Test("the end of a head is found across reads and with bare LFs; an unfinished head has none")
    func endOfHead() {
        func end(_ text: String, from: Int = 0) -> (Int, Int)? {
            let buffer = ByteBuffer(string: text)
            return FrontDoorHandler.endOfHead(in: buffer.readableBytesView, from: from).map { ($0.head, $0.total) }
        }
        #expect(end("GET / HTTP/1.1\r\nHost: h\r\n\r\nNEXT")! == (24, 27))
        #expect(end("GET / HTTP/1.1\nHost: h\n\n")! == (22, 24))
        #expect(end("GET / HTTP/1.1\r\nHost: h\r\n", from: 10) == nil)
        #expect(end("GET / HTTP/1.1\r\nHost: h\r\n\r", from: 20) == nil)
    }

    @Test("every refusal is a whole HTTP/1.1 answer that closes, with its reason in words")
    func answers() {
        for refusal in [FrontDoorRefusal.headTimedOut(seconds: 10), .tooManyRequests, .tooManyConnections(limit: 64),
                        .foreignOrigin("https://evil.example"), .headTooLarge(limit: 16384)] {
            let text = refusal.response
            let (head, body) = (text.components(separatedBy: "\r\n\r\n")[0], text.components(separatedBy: "\r\n\r\n")[1])
            #expect(head.hasPrefix("HTTP/1.1 \(refusal.status) ") && head.contains("Connection: close"))
            #expect(head.contains("Content-Length: \(body.utf8.count)") && body == refusal.explanation + "\n")
        }
    }
}
