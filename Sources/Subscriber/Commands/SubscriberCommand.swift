import PoseCastKit
import PoseMedia

/// How a `tapworld` tap becomes an annotation: with the subscriber's `--placement`
/// (`configured`), on the ground plane whatever that says (`ground`), or as screen
/// coordinates for the publisher to place with its newest pose (`naive`). The annotation
/// benchmark taps all three on the same features to compare them.
public enum TapMethod: String, Sendable, Equatable, CaseIterable {
    case configured, ground, naive
}

/// One line of the headless command language (stdin or --script).
public enum SubscriberCommand: Equatable, Sendable {
    /// `shown`: the pose of the frame on screen when the tap was made, where the window
    /// knows it (a click); nil: the newest decoded frame's (typed commands).
    case tap(NormalizedPoint, label: String, shown: FramePose? = nil)
    /// Screen coordinates only, placed by the publisher with its newest pose (the naive baseline).
    case tapNaive(NormalizedPoint, label: String)
    /// Tap where a known world point appears on the frame on screen; report the placement error.
    case tapWorld(Vector3, method: TapMethod, label: String)
    case focus(NormalizedPoint, FocusMode)
    case meter(MeterRequest)
    case meteringMode(MeteringMode)
    case lock, unlock
    case remove(String)
    /// Remove the newest annotation this subscriber placed that is still shown.
    case undo
    case clear
    /// Removes every annotation of ours (each with `removeAnnotation`), no one else's.
    case clearMine
    case pose
    case status
    /// Look for every listed annotation's mark over the next N decoded frames (`--check-markers`).
    case checkMarkers(frames: Int)
    case sleep(Double)
    /// Write the next decoded picture to this path as a PNG (`--snapshots`).
    case snapshot(String)
    /// Digital zoom ×factor on a point of the frame on screen (factor 1: back to the framing).
    case zoom(NormalizedPoint, factor: Double)
    /// Keep an annotation in view at ×factor; nil stops.
    case follow(String?, factor: Double)
    /// The publisher's automatic framing: off, face or person.
    case framing(String)
    /// Mute or unmute our microphone (`mute`, `unmute`; push-to-talk's `talk`, `over`).
    case mute(Bool)
    case quit

    public static let help = """
    commands: tap X Y [LABEL] | tapnaive X Y [LABEL] | tapworld WX WY WZ [naive|ground] [LABEL] | focus X Y [auto|tapToAutoFocus|tapToLockFocus] | meter [X Y] [LOCK_SECONDS] [routines=exposure,focus,whiteBalance] [mode=uniform|spot|weighted] [strict] | \
    meteringmode uniform|spot|weighted | \
    lock | unlock | remove ANNOTATION_ID | undo | clearmine | clear | zoom X Y [FACTOR] | zoom off | follow ANNOTATION_ID [FACTOR] | follow off | framing off|face|person | mute | unmute | talk | over | \
    pose | status | checkmarkers N | snapshot FILE.png | sleep SECONDS | quit   (X, Y normalised 0…1)
    """

    /// Parses a line; nil for blank lines and `#` comments.
    public static func parse(_ line: String) throws(CommandError) -> SubscriberCommand? {
        let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
        guard let verb = words.first, !verb.hasPrefix("#") else { return nil }
        let args = Array(words.dropFirst())
        func number(_ i: Int, _ what: String) throws(CommandError) -> Double {
            guard i < args.count else { throw CommandError("\(verb): missing \(what)") }
            guard let v = Double(args[i]), v.isFinite else { throw CommandError("\(verb): \(what) must be a finite number, got \"\(args[i])\"") }
            return v
        }
        func point() throws(CommandError) -> NormalizedPoint {
            let p = NormalizedPoint(x: Float(try number(0, "X")), y: Float(try number(1, "Y")))
            guard p.isInImage else { throw CommandError("\(verb): the point must lie in the image, X and Y in 0…1") }
            return p
        }
        switch verb.lowercased() {
        case "tap":
            return .tap(try point(), label: args.dropFirst(2).joined(separator: " "))
        case "tapnaive":
            return .tapNaive(try point(), label: args.dropFirst(2).joined(separator: " "))
        case "tapworld":
            let p = Vector3(Float(try number(0, "WX")), Float(try number(1, "WY")), Float(try number(2, "WZ")))
            let method = args.count > 3 ? TapMethod(rawValue: args[3]) : nil
            return .tapWorld(p, method: method ?? .configured, label: args.dropFirst(method == nil ? 3 : 4).joined(separator: " "))
        case "focus":
            let p = try point()
            guard args.count <= 3 else { throw CommandError("focus: too many arguments") }
            guard let mode = args.count == 3 ? FocusMode(rawValue: args[2]) : .tapToAutoFocus else {
                throw CommandError("focus: mode must be auto, tapToAutoFocus or tapToLockFocus, got \"\(args[2])\"")
            }
            return .focus(p, mode)
        case "meter":
            // Positional X Y and LOCK_SECONDS, then options: routines=…, mode=…, strict.
            var request = MeterRequest()
            var positional: [String] = []
            for word in args {
                if word == "strict" { request.throwIfUnsupported = true; continue }
                if word.hasPrefix("routines=") {
                    var routines: [MeteringRoutine] = []
                    for name in word.dropFirst(9).split(separator: ",") {
                        guard let r = MeteringRoutine(rawValue: String(name)) else {
                            throw CommandError("meter: routines are exposure, focus and whiteBalance, not \"\(name)\"")
                        }
                        routines.append(r)
                    }
                    guard !routines.isEmpty else { throw CommandError("meter: routines= needs at least one routine") }
                    request.routines = routines
                    continue
                }
                if word.hasPrefix("mode=") {
                    guard let m = MeteringMode(rawValue: String(word.dropFirst(5))) else {
                        throw CommandError("meter: mode is uniform, spot or weighted, not \"\(word.dropFirst(5))\"")
                    }
                    request.meteringMode = m
                    continue
                }
                positional.append(word)
            }
            let sub = Array(positional)
            func num(_ i: Int, _ what: String) throws(CommandError) -> Double {
                guard let v = Double(sub[i]), v.isFinite || what == "LOCK_SECONDS" && v == .infinity else {
                    throw CommandError("meter: \(what) must be a number, got \"\(sub[i])\"")
                }
                return v
            }
            func pt() throws(CommandError) -> NormalizedPoint {
                let p = NormalizedPoint(x: Float(try num(0, "X")), y: Float(try num(1, "Y")))
                guard p.isInImage else { throw CommandError("meter: the point must lie in the image, X and Y in 0…1") }
                return p
            }
            switch sub.count {
            case 0: break
            case 1: request.lockDuration = try num(0, "LOCK_SECONDS")
            case 2: request.point = try pt()
            case 3: request.point = try pt(); request.lockDuration = try num(2, "LOCK_SECONDS")
            default: throw CommandError("meter: too many arguments")
            }
            return .meter(request)
        case "meteringmode":
            guard args.count == 1, let m = MeteringMode(rawValue: args[0]) else {
                throw CommandError("meteringmode: give one of uniform, spot, weighted")
            }
            return .meteringMode(m)
        case "lock": return .lock
        case "unlock": return .unlock
        case "remove":
            guard args.count == 1 else { throw CommandError("remove: give one annotation id") }
            return .remove(args[0])
        case "undo": return .undo
        case "clear": return .clear
        case "clearmine": return .clearMine
        case "pose": return .pose
        case "status": return .status
        case "checkmarkers":
            guard args.count == 1, let n = Int(args[0]), n > 0 else {
                throw CommandError("checkmarkers: give the number of frames to check, a whole number above 0")
            }
            return .checkMarkers(frames: n)
        case "sleep":
            let s = try number(0, "SECONDS")
            guard s >= 0 else { throw CommandError("sleep: SECONDS must not be negative") }
            return .sleep(s)
        case "snapshot":
            guard args.count == 1 else { throw CommandError("snapshot: give one file path (no spaces)") }
            return .snapshot(args[0])
        case "zoom":
            if args == ["off"] { return .zoom(NormalizedPoint(x: 0.5, y: 0.5), factor: 1) }
            let p = try point()
            let factor = args.count >= 3 ? try number(2, "FACTOR") : 2
            guard args.count <= 3, (1...ControlCodec.maxZoom).contains(factor) else {
                throw CommandError("zoom: X Y [FACTOR], the factor 1…\(ControlCodec.maxZoom), or zoom off")
            }
            return .zoom(p, factor: factor)
        case "follow":
            if args == ["off"] { return .follow(nil, factor: 1) }
            guard (1...2).contains(args.count) else { throw CommandError("follow: ANNOTATION_ID [FACTOR], or follow off") }
            let factor = args.count == 2 ? try number(1, "FACTOR") : 2
            guard (1...ControlCodec.maxZoom).contains(factor) else { throw CommandError("follow: the factor must be 1…\(ControlCodec.maxZoom)") }
            return .follow(args[0], factor: factor)
        case "framing":
            guard args.count == 1, ["off", "face", "person"].contains(args[0]) else { throw CommandError("framing: off, face or person") }
            return .framing(args[0])
        case "mute", "over": return .mute(true)
        case "unmute", "talk": return .mute(false)
        case "quit", "exit": return .quit
        default:
            throw CommandError("unknown command \"\(verb)\"; \(help)")
        }
    }
}

public struct CommandError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
