import Foundation
import NodeOutput
import PoseCastKit

/// The headless commands (docs/SUBSCRIBER.md): from a script file, then stdin, one line
/// at a time; clicks in the window run the same commands.
extension SubscriberApp {
    /// Runs the script, then stdin; true when a command said quit.
    func runCommands(script: String?, readStdin: Bool) async -> Bool {
        if let script {
            guard let text = try? String(contentsOfFile: script, encoding: .utf8) else {
                out.event(.error, ["message": "cannot read script \(script)"], human: "error: cannot read script \(script)")
                return false
            }
            for line in text.split(whereSeparator: \.isNewline) {
                // The run is over (a signal, the node gone): the rest of the script is not played.
                guard !Task.isCancelled else { return false }
                if await !execute(line: String(line)) { return true }
            }
        }
        guard readStdin else { return false }
        for await line in ProcessSupport.stdinLines() {
            if await !execute(line: line) { return true }
        }
        return false
    }

    /// Runs one line; false when the session should end (`quit`).
    public func execute(line: String) async -> Bool {
        do throws(CommandError) {
            guard let command = try SubscriberCommand.parse(line) else { return true }
            return await execute(command)
        } catch {
            out.event(.commandError, ["message": error.description, "line": line], human: "error: \(error)")
            return true
        }
    }

    /// Runs one command; false when the session should end (`quit`).
    public func execute(_ command: SubscriberCommand) async -> Bool {
        do throws(ControlError) {
            switch command {
            case let .tap(point, label, shown): try node.tap(at: point, label: label, color: tapColor, shown: shown)
            case let .tapNaive(point, label): try node.tap(at: point, label: label, color: tapColor, naive: true)
            case let .tapWorld(p, method, label): try node.tap(world: p, label: label, color: tapColor, method: method)
            case let .focus(point, mode): try node.send(.focus(point: point, mode: mode))
            case .meter(let request): try node.send(.meter(request))
            case .meteringMode(let mode): try node.send(.meteringMode(mode))
            case .lock: try node.send(.lock(routines: MeteringRoutine.allCases))
            case .unlock: try node.send(.unlock(routines: MeteringRoutine.allCases))
            case .remove(let id): try node.send(.removeAnnotation(annotationId: id))
            case .undo:
                guard let id = node.lastOwnAnnotation else {
                    throw ControlError(id: nil, code: .invalidValue, message: "undo: no annotation of ours is shown")
                }
                try node.send(.removeAnnotation(annotationId: id))
            case .clear: try node.send(.clearAnnotations)
            case .clearMine:
                let mine = node.ownAnnotationIds
                guard !mine.isEmpty else {
                    throw ControlError(id: nil, code: .invalidValue, message: "clear: no annotation of ours is shown")
                }
                for id in mine { try node.send(.removeAnnotation(annotationId: id)) }
            case let .zoom(point, factor): try node.send(.zoom(point: point, factor: factor, frameId: node.frameOnScreen?.frameID))
            case let .follow(id, factor): try node.send(.follow(annotationId: id, factor: factor))
            case .framing(let subject): try node.send(.framing(subject: subject))
            case .mute(let muted):
                try node.setMuted(muted)
                out.event(.muted, ["who": "self", "muted": muted, "atNanos": WallClock.nowNanos()],
                          human: "voice: microphone \(muted ? "muted" : "on")")
            case .pose: out.subscriberPose(node)
            case .status: out.subscriberStatus(node)
            case .checkMarkers(let frames):
                guard let watcher = node.config.markerWatcher else {
                    throw ControlError(id: nil, code: .unsupported, message: "checkmarkers needs --check-markers")
                }
                do throws(CommandError) { try watcher.checkMarkers(frames: frames) } catch {
                    out.event(.commandError, ["message": error.description], human: "error: \(error)")
                }
            case .sleep(let seconds): try? await Task.sleep(for: .seconds(seconds))
            case .snapshot(let path):
                guard let snapshot else {
                    throw ControlError(id: nil, code: .unsupported, message: "snapshot needs --snapshots (or --check-markers)")
                }
                snapshot.request(path)
            case .quit: return false
            }
        } catch {
            out.event(.commandError, ["message": error.message, "code": error.code.rawValue], human: "error: \(error.message)")
            noteForHUD("error: \(error.message)")
        }
        return true
    }

    /// Marks are drawn magenta while they are being checked (a colour the scene never shows).
    var tapColor: String { node.config.markerWatcher == nil ? "#FF3B30" : MarkerWatcher.markerColor }
}
