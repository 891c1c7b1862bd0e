import Foundation

/// The publisher's `--frame-log` joined with a subscriber's, by frame id: whether each
/// frame shown carried its own pose (docs/BENCHMARKS.md; `FrameLog` writes both). A
/// shown frame carries its own pose when the publisher logged the same frame id with the
/// same pose hash and capture time.
public struct FrameLogJoin: Sendable, CustomStringConvertible {
    /// Lines the subscriber wrote (frames shown).
    public var shown = 0
    /// Of those, the frame ids (nil where the frame had no valid pose).
    public var ids: [Int] = []
    /// Shown frames whose id the publisher logged with another pose hash or capture time.
    public var notOwn: [String] = []
    /// Shown frames whose id the publisher never logged (its log ends a little earlier, or
    /// the id is garbage).
    public var unknown = 0
    /// Places where the ids shown skip (`from → to`).
    public var gaps: [(Int, Int)] { zip(ids, ids.dropFirst()).filter { $1 != $0 + 1 } }
    /// Of the ids skipped in those gaps, those the publisher logged (encoded and sent, then
    /// lost or not shown); the others it never encoded.
    public var skippedButSent: [Int] = []

    public var description: String {
        "\(shown) shown, \(ids.count) with a frame id, \(notOwn.count) not their own, \(unknown) unknown to the publisher, "
            + "\(gaps.count) gaps" + (gaps.isEmpty ? "" : " (\(gaps.prefix(3).map { "\($0)→\($1)" }.joined(separator: ", ")); "
            + "of the frames skipped, \(skippedButSent.count) were encoded by the publisher)")
    }

    /// JSON lines of a frame log (lines that are not JSON objects are skipped).
    public static func lines(_ path: String) throws -> [[String: Any]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    public init(publisherLog: String, subscriberLog: String) throws {
        var sent: [Int: (hash: String?, capture: Int64?)] = [:]
        for e in try Self.lines(publisherLog) {
            if let id = (e["frameId"] as? NSNumber)?.intValue {
                sent[id] = (e["poseHash"] as? String, (e["captureNs"] as? NSNumber)?.int64Value)
            }
        }
        let frames = try Self.lines(subscriberLog)
        shown = frames.count
        for e in frames {
            guard let id = (e["frameId"] as? NSNumber)?.intValue else { continue }
            ids.append(id)
            guard let own = sent[id] else { unknown += 1; continue }
            let hash = e["poseHash"] as? String, capture = (e["captureNs"] as? NSNumber)?.int64Value
            if own.hash != hash || own.capture != capture {
                notOwn.append("frame \(id): shown with \(hash ?? "?")@\(capture.map(String.init) ?? "?"), sent with \(own.hash ?? "?")@\(own.capture.map(String.init) ?? "?")")
            }
        }
        skippedButSent = gaps.flatMap { ($0.0 + 1)..<max($0.0 + 1, $0.1) }.filter { sent[$0] != nil }
    }
}
