import PoseCastKit
import PoseMedia
import Synchronization

/// An annotation this subscriber asked for, seen in the video: from the moment its
/// `annotate` request was sent to the first decoded frame that shows its mark within
/// `MarkerWatcher.visibleRadius` of where that frame's own pose projects its anchor.
public struct MarkerVisibility: Sendable, Hashable {
    public var annotationId: String
    public var requestId: String
    /// Request sent → that frame decoded (host wall clock), milliseconds.
    public var roundTripMs: Double
    public var frameId: UInt32
    /// Distance of the mark found from where the pose puts it, pixels.
    public var errorPixels: Float
}

/// What `checkMarkers(frames:)` saw of one annotation over the frames it checked.
public struct MarkerReport: Sendable, Hashable {
    public var annotationId: String
    public var color: String
    /// No longer in the publisher's list: its mark should be gone.
    public var removed: Bool
    /// Decoded frames checked.
    public var frames: Int
    /// Frames in which the whole mark is expected on screen (anchor in front of the camera,
    /// far enough from the edges, no other mark of the same colour close by); for a removed
    /// annotation, only frames captured after its removal reached this subscriber.
    public var visible: Int
    /// Of those, frames where a blob of the mark's colour was found near the expected place.
    public var found: Int
    /// Distance of the found mark from where the frame's pose projects it, pixels.
    public var errorP50: Float?, errorMax: Float?
    /// Removed annotations only: true when the anchor was in view in some frame and no
    /// mark was found there in any; nil when it never came into view (nothing shown).
    public var absent: Bool?
}

public enum MarkerWatchEvent: Sendable, Hashable {
    case visible(MarkerVisibility)
    case report(MarkerReport)
    /// A `checkMarkers` run ended (after its reports).
    case checkDone(frames: Int, reports: Int)
}

/// The subscriber's check that the publisher draws each annotation where ground truth
/// says: fed the subscriber's events (requests sent, acks, annotation lists) and copies of
/// the decoded pictures, it projects every listed annotation's world position with each
/// checked picture's own pose and looks for the mark there by colour (`MarkerDetector`).
///
/// Cost stays bounded: a picture is only searched while a requested annotation has not
/// been seen yet or a `checkMarkers` run is under way, and then only a small window around
/// each projection. Called on the decoder's streaming thread (pictures) and the session's
/// threads (events); state lives in one lock, events are emitted outside it.
public final class MarkerWatcher: Sendable {
    /// The colour taps are drawn in when markers are checked: magenta, which the synthetic
    /// scene never uses, so the mark can be told from the scene by colour alone.
    public static let markerColor = MarkerDetector.magentaHex
    /// A mark within this many pixels (at 480 lines; scaled with the frame height) of its
    /// projection counts as visible there.
    public static let visibleRadius: Float = 3
    /// Longest `checkMarkers` run, frames.
    public static let maxCheckFrames = 3000
    /// Removed annotations remembered for the absence check.
    static let maxRemembered = 32

    private struct Awaited: Sendable { var requestId: String; var sentAtNanos: UInt64 }
    private struct Removed: Sendable { var annotation: Annotation; var removedAtNanos: UInt64 }
    private struct TallyKey: Hashable, Sendable { var id: String; var removed: Bool }
    private struct Tally: Sendable {
        var color: String
        var visible = 0, found = 0
        var errors: [Float] = []
    }
    private struct Check: Sendable {
        var total: Int
        var remaining: Int
        var order: [TallyKey] = []
        var tallies: [TallyKey: Tally] = [:]
    }
    private struct State: Sendable {
        /// annotate requests sent, by request id, waiting for their ack.
        var requests: [String: UInt64] = [:]
        /// Acks (request id, annotation id) that may have overtaken the report of their
        /// request being sent; the newest few (acks of other requests age out).
        var earlyAcks: [(request: String, annotation: String)] = []
        /// Our annotations not yet seen in a frame, by annotation id.
        var awaited: [String: Awaited] = [:]
        /// The publisher's current list.
        var current: [Annotation] = []
        var removed: [String: Removed] = [:]
        var check: Check?
    }

    /// One annotation to look for in one picture.
    private struct Target {
        var annotation: Annotation
        var removedAtNanos: UInt64?
        /// False for marks only considered as neighbours of searched ones.
        var searched: Bool
        var detector: MarkerDetector?
    }

    private let state = Mutex(State())
    private let onEvent: @Sendable (MarkerWatchEvent) -> Void

    public init(onEvent: @escaping @Sendable (MarkerWatchEvent) -> Void) { self.onEvent = onEvent }

    /// Starts checking the next `frames` decoded frames; one run at a time.
    public func checkMarkers(frames: Int) throws(CommandError) {
        guard (1...Self.maxCheckFrames).contains(frames) else {
            throw CommandError("checkmarkers: N must be 1…\(Self.maxCheckFrames) frames, got \(frames)")
        }
        try state.withLock { s throws(CommandError) in
            if let check = s.check {
                throw CommandError("checkmarkers: a check is already running (\(check.total - check.remaining) of \(check.total) frames done)")
            }
            s.check = Check(total: frames, remaining: frames)
        }
    }

    /// Feeds one subscriber event (the requests, acks and lists matter).
    public func observe(_ event: SubscriberNodeEvent) {
        let now = WallClock.nowNanos()
        switch event {
        case let .requestSent(id, type, _) where type == "annotate":
            state.withLock { s in
                if let i = s.earlyAcks.firstIndex(where: { $0.request == id }) {
                    s.awaited[s.earlyAcks.remove(at: i).annotation] = Awaited(requestId: id, sentAtNanos: now)
                } else {
                    s.requests[id] = now
                }
            }
        case let .reply(.ack(id, annotationId?, _)):
            state.withLock { s in
                if let sent = s.requests.removeValue(forKey: id) {
                    s.awaited[annotationId] = Awaited(requestId: id, sentAtNanos: sent)
                } else {
                    s.earlyAcks.append((id, annotationId))
                    if s.earlyAcks.count > 16 { s.earlyAcks.removeFirst() }
                }
            }
        case .reply(.error(let error)):
            if let id = error.id { state.withLock { _ = $0.requests.removeValue(forKey: id) } }
        case .reply(.annotations(let list)):
            state.withLock { s in
                let ids = Set(list.map(\.id))
                for old in s.current where !ids.contains(old.id) {
                    s.removed[old.id] = Removed(annotation: old, removedAtNanos: now)
                    s.awaited.removeValue(forKey: old.id)
                }
                for id in ids { s.removed.removeValue(forKey: id) }
                if s.removed.count > Self.maxRemembered {
                    let oldest = s.removed.sorted { $0.value.removedAtNanos < $1.value.removedAtNanos }
                    for (id, _) in oldest.prefix(s.removed.count - Self.maxRemembered) { s.removed.removeValue(forKey: id) }
                }
                s.current = list
            }
        default:
            break
        }
    }

    /// Feeds one decoded picture (a copy; `SubscriberMediaConfig.onPicture`).
    public func observe(_ picture: DecodedPicture) {
        // What to look for in this picture, if anything.
        let work = state.withLock { s -> (awaited: [String: Awaited], targets: [Target], checking: Bool)? in
            guard !s.awaited.isEmpty || s.check != nil else { return nil }
            let checking = s.check != nil
            // Every drawn mark (they matter for crowding); only some are searched.
            var targets = s.current.map { Target(annotation: $0, removedAtNanos: nil, searched: checking || s.awaited[$0.id] != nil) }
            if checking {
                targets += s.removed.values.sorted { $0.annotation.id < $1.annotation.id }
                    .map { Target(annotation: $0.annotation, removedAtNanos: $0.removedAtNanos, searched: true) }
            }
            return (s.awaited, targets, checking)
        }
        guard let work else { return }

        // The search, outside the lock: per target, nil when not expected whole on screen.
        var sightings: [(key: TallyKey, color: String, expected: Bool, errorPixels: Float?)] = []
        if let pose = picture.frame.pose, let camera = CameraModel(pose: pose), picture.width > 0, picture.height > 0 {
            let targets = work.targets.map { t -> Target in
                var t = t
                t.detector = MarkerDetector(hex: t.annotation.color)
                return t
            }
            let anchors = targets.map { t -> (x: Float, y: Float)? in
                guard let p = camera.project(t.annotation.position) else { return nil }
                return CameraModel.pixel(p.point, width: picture.width, height: picture.height)
            }
            let shapes = targets.map { MarkerShape(kind: $0.annotation.kind, frameHeight: picture.height) }
            for (i, target) in targets.enumerated() where target.searched {
                let key = TallyKey(id: target.annotation.id, removed: target.removedAtNanos != nil)
                // A removed mark may still be on frames captured before the publisher heard of it.
                if let removedAt = target.removedAtNanos, pose.captureTimeNanos <= removedAt { continue }
                guard let detector = target.detector, let anchor = anchors[i],
                      shapes[i].isWhollyInside(anchor, width: picture.width, height: picture.height),
                      !Self.crowded(i, targets: targets, anchors: anchors, shapes: shapes) else {
                    sightings.append((key, target.annotation.color, false, nil))
                    continue
                }
                let sighting = detector.locate(shapes[i], anchor: anchor, in: picture)
                sightings.append((key, target.annotation.color, true, sighting?.errorPixels))
            }
        }

        // Book it; emit outside the lock.
        let scale = Float(picture.height) / 480
        var events: [MarkerWatchEvent] = []
        state.withLock { s in
            for sighting in sightings where !sighting.key.removed {
                guard let error = sighting.errorPixels, error <= Self.visibleRadius * max(scale, 1),
                      let awaited = s.awaited[sighting.key.id], work.awaited[sighting.key.id] != nil else { continue }
                s.awaited.removeValue(forKey: sighting.key.id)
                let ms = picture.frame.decodedAtNanos > awaited.sentAtNanos
                    ? Double(picture.frame.decodedAtNanos - awaited.sentAtNanos) / 1e6 : 0
                events.append(.visible(MarkerVisibility(annotationId: sighting.key.id, requestId: awaited.requestId,
                                                        roundTripMs: ms, frameId: picture.frame.pose?.frameID ?? 0,
                                                        errorPixels: error)))
            }
            guard work.checking, var check = s.check else { return }
            for sighting in sightings {
                if check.tallies[sighting.key] == nil {
                    check.tallies[sighting.key] = Tally(color: sighting.color)
                    check.order.append(sighting.key)
                }
                guard sighting.expected else { continue }
                check.tallies[sighting.key]!.visible += 1
                if let error = sighting.errorPixels {
                    check.tallies[sighting.key]!.found += 1
                    check.tallies[sighting.key]!.errors.append(error)
                }
            }
            check.remaining -= 1
            if check.remaining > 0 {
                s.check = check
                return
            }
            s.check = nil
            let keys = check.order.filter { !$0.removed } + check.order.filter(\.removed)
            for key in keys {
                let t = check.tallies[key]!
                let sorted = t.errors.sorted()
                events.append(.report(MarkerReport(
                    annotationId: key.id, color: t.color, removed: key.removed, frames: check.total, visible: t.visible,
                    found: t.found, errorP50: sorted.isEmpty ? nil : sorted[sorted.count / 2], errorMax: sorted.last,
                    absent: key.removed ? (t.visible > 0 ? t.found == 0 : nil) : nil)))
            }
            events.append(.checkDone(frames: check.total, reports: keys.count))
        }
        for event in events { onEvent(event) }
    }

    /// True when another drawn mark of a matching colour comes close enough to target `i`'s
    /// search window to be mistaken for it (removed annotations are not drawn).
    private static func crowded(_ i: Int, targets: [Target], anchors: [(x: Float, y: Float)?], shapes: [MarkerShape]) -> Bool {
        guard let detector = targets[i].detector, let a = anchors[i] else { return false }
        let ca = (x: a.x + shapes[i].centroidOffset.x, y: a.y + shapes[i].centroidOffset.y)
        for (j, other) in targets.enumerated() where j != i && other.removedAtNanos == nil {
            guard let b = anchors[j], let colour = other.detector,
                  detector.matches(colour.red, colour.green, colour.blue) else { continue }
            let cb = (x: b.x + shapes[j].centroidOffset.x, y: b.y + shapes[j].centroidOffset.y)
            let reach = Float(shapes[i].searchRadius + shapes[j].searchRadius)
            if abs(ca.x - cb.x) < reach, abs(ca.y - cb.y) < reach { return true }
        }
        return false
    }
}
