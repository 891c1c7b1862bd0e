import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signaling
import Testing

/// The browser console's files, served by the real server to plain GETs on the port its
/// WebSocket clients use (what `posecast-signaling` and the publisher's embedded server
/// both run).
@Suite("Server serves the console", .timeLimit(.minutes(1)))
struct ConsoleServingTests {
    static func get(_ url: String) async throws -> (status: Int, type: String?, body: String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, http.value(forHTTPHeaderField: "Content-Type"), String(decoding: data, as: UTF8.self))
    }

    @Test("GET / is the console; its scripts and style are served with their types; an unknown path is 404; WebSocket clients still connect")
    func serves() async throws {
        try await ServerLiveTests.withServer { server in
            let base = "http://127.0.0.1:\(server.port)/"
            let page = try await Self.get(base)
            #expect(page.status == 200 && page.type?.hasPrefix("text/html") == true)
            #expect(page.body.contains("<title>PoseCast console</title>"))
            for name in ConsoleFiles.names where name != "index.html" {
                let file = try await Self.get(base + name)
                #expect(file.status == 200, "\(name): \(file.status)")
                #expect(file.type?.contains(name.hasSuffix(".css") ? "css" : "javascript") == true, "\(name): \(file.type ?? "no type")")
            }
            // The page asks for the trailer (its transport module) and loads nothing from elsewhere.
            let transport = try await Self.get(base + "transport.js")
            #expect(transport.body.contains("poseTransport: state.transformAvailable ? \"trailer\""))
            var files = [("index.html", page.body)]
            for name in ConsoleFiles.names where name.hasSuffix(".js") { files.append((name, try await Self.get(base + name).body)) }
            for (name, file) in files {
                #expect(!file.contains("https://") && !file.contains("http://"), "\(name) names another site")
            }
            #expect(try await Self.get(base + "nothing-here.js").status == 404)
            // The client's connect waits for the server's welcome: a peer id means the upgrade worked.
            let client = try await ServerLiveTests.connect(server)
            #expect(!client.peerId.isEmpty)
            client.close()
        }
    }
}
