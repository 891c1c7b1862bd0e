import ArgumentParser
import Foundation
import Logging
import NodeOutput
import SFU

/// Relays rooms from an origin Janus to edge Janus servers, for audiences beyond one server.
@main
struct CascadeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posecast-cascade",
        abstract: "Relays PoseCast rooms from an origin Janus to edge Janus servers (Janus's remote publishers).",
        discussion: """
        The publisher publishes into the origin (`--sfu janus:ORIGIN --room N`); subscribers take the room from any
        edge (`--sfu janus:EDGE --room N`) or from the origin. For each room this watches the origin's room without
        publishing, and relays every feed published there to the same room on every edge: `add_remote_publisher` on the
        edge, then `publish_remotely` on the origin, which forwards the feed's RTP there (plain RTP: keep the links
        between Janus servers on a private network). The edge's room is made with the feed's codec. A feed that
        leaves is taken down on every edge; a lost edge is relayed to again once it is back (its stale remote
        publishers removed first); a failed step is tried again after 1 s, doubling up to 10 s.

        The edge URL's host, when it is an IP address, is where the edge listens for the relayed RTP: name the
        edge by an address the origin can reach. Stops cleanly on SIGINT or SIGTERM (relays it made are left for
        the next run to remove on the edges; the origin stops forwarding when the publisher leaves).
        """)

    @Option(help: "The origin Janus's WebSocket API (ws://HOST:8188/): where the publisher publishes.") var origin: String
    @Option(name: .customLong("edge"), parsing: .singleValue, help: "An edge Janus's WebSocket API. Repeatable.")
    var edges: [String] = []
    @Option(name: .customLong("room"), parsing: .singleValue, help: "A VideoRoom room to relay. Repeatable.")
    var rooms: [UInt64] = []
    @Flag(help: "Print events as JSON lines on stdout.") var json = false
    @Option(help: "trace, debug, info, notice, warning, error or critical.") var logLevel = "warning"

    mutating func validate() throws {
        guard !edges.isEmpty else { throw ValidationError("give at least one --edge") }
        guard !rooms.isEmpty else { throw ValidationError("give at least one --room") }
        for url in [origin] + edges {
            guard let scheme = URLComponents(string: url)?.scheme?.lowercased(), scheme == "ws" || scheme == "wss",
                  URLComponents(string: url)?.host?.isEmpty == false else {
                throw ValidationError("not a ws:// or wss:// Janus URL: \(url)")
            }
        }
        guard Set(edges).count == edges.count, !edges.contains(origin) else {
            throw ValidationError("each --edge must be given once, and differ from --origin")
        }
        guard Set(rooms).count == rooms.count else { throw ValidationError("each --room must be given once") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
    }

    func run() async throws {
        StandardErrorLogging.bootstrap(level: Logger.Level(rawValue: logLevel) ?? .warning)
        let logger = Logger(label: "posecast.cascade")
        let output = EventOutput(json: json)
        let cascades = rooms.map { SFUCascade(config: SFUCascadeConfig(origin: origin, edges: edges, room: $0), logger: logger) }
        let signals = ProcessSupport.terminationSignals()
        await withTaskGroup(of: Void.self) { group in
            for cascade in cascades {
                group.addTask { await cascade.run() }
                group.addTask { for await notice in cascade.notices { Self.report(notice, room: cascade.config.room, output: output) } }
            }
            for await _ in signals { break }
            group.cancelAll()
        }
        output.event(.stopped, [:], human: "stopped")
    }

    static func report(_ notice: SFUCascadeNotice, room: UInt64, output: EventOutput) {
        switch notice {
        case .waitingForRoom(let url):
            output.event(.cascadeWaiting, ["room": room, "url": url], human: "room \(room): waiting for it to exist on \(url)")
        case let .watching(url, feeds):
            output.event(.cascadeWatching, ["room": room, "url": url, "feeds": feeds],
                         human: "room \(room): watching the origin \(url) (\(feeds) feed\(feeds == 1 ? "" : "s"))")
        case let .originLost(url, reason):
            output.event(.cascadeOriginLost, ["room": room, "url": url, "reason": reason],
                         human: "room \(room): origin \(url) lost: \(reason)")
        case let .edgeReady(edge, url, stale):
            output.event(.cascadeEdgeReady, ["room": room, "edge": edge, "url": url, "removedStale": stale],
                         human: "room \(room): edge \(url) ready" + (stale > 0 ? " (\(stale) stale relay\(stale == 1 ? "" : "s") removed)" : ""))
        case let .edgeLost(edge, url, reason):
            output.event(.cascadeEdgeLost, ["room": room, "edge": edge, "url": url, "reason": reason],
                         human: "room \(room): edge \(url) lost: \(reason)")
        case .relay(.relayStarted(let edge, let feed, let target)):
            output.event(.relayStarted, ["room": room, "edge": edge, "feed": feed, "edgeFeed": target.edgeFeed,
                                         "host": target.host, "port": target.port, "rtcpPort": target.rtcpPort],
                         human: "room \(room): feed \(feed) relayed to edge \(edge) (\(target.host):\(target.port), its feed \(target.edgeFeed))")
        case .relay(.relayEnded(let edge, let feed, let reason)):
            output.event(.relayEnded, ["room": room, "edge": edge, "feed": feed, "reason": reason],
                         human: "room \(room): relay of feed \(feed) to edge \(edge) ended: \(reason)")
        case .relay(.relayFailed(let edge, let feed, let reason, let retry)):
            let seconds = Double(retry) / 1e9
            output.event(.relayFailed, ["room": room, "edge": edge, "feed": feed, "reason": reason, "retryInSeconds": seconds],
                         human: "room \(room): relaying feed \(feed) to edge \(edge) failed: \(reason); again in \(seconds) s")
        case let .cleanupFailed(what, reason):
            output.event(.cascadeCleanupFailed, ["room": room, "what": what, "reason": reason],
                         human: "room \(room): \(what) failed: \(reason)")
        }
    }
}
