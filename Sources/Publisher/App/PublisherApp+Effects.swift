import Foundation
import NodeOutput
import PoseCastKit

/// The effects from options at start and from stdin while running. Loading a model or a
/// picture blocks for milliseconds: done on a dispatch thread, never the async pool.
extension PublisherApp {
    static func startEffects(_ options: EffectOptions, on effects: EffectChain, out: EventOutput) async {
        if options.background != .off {
            await apply(out: out, what: "background", value: options.background.description) { () throws(EffectCommandError) in
                try effects.setBackground(options.background)
            }
        }
        if options.framing != .off {
            await apply(out: out, what: "framing", value: options.framing.rawValue) { () throws(EffectCommandError) in
                try effects.setFraming(options.framing)
            }
        }
    }

    /// `background SPEC` (`BackgroundSetting`), `framing off|face|person`,
    /// `zoom X Y FACTOR` (a point normalised in the picture sent; `zoom off`),
    /// `follow ANNOTATION [FACTOR]` (`follow off`).
    static func effectCommand(_ line: String, media: PublisherMedia, node: PublisherNode, out: EventOutput) async {
        let words = line.split(separator: " ").map(String.init)
        let effects = media.effects
        func refuse(_ message: String) {
            out.event(.commandError, ["line": line, "message": message], human: "error: \(message)")
        }
        switch words.first {
        case "background":
            let spec = words.dropFirst().joined(separator: " ")
            let setting: BackgroundSetting
            do throws(EffectCommandError) { setting = try BackgroundSetting(spec: spec) } catch { return refuse(error.message) }
            await apply(out: out, what: "background", value: setting.description) { () throws(EffectCommandError) in
                try effects.setBackground(setting)
            }
        case "framing":
            guard words.count == 2, let subject = FramingSubject(rawValue: words[1]) else {
                return refuse("framing takes off, face or person")
            }
            await apply(out: out, what: "framing", value: subject.rawValue) { () throws(EffectCommandError) in try effects.setFraming(subject) }
        case "zoom":
            if words.count == 2, words[1] == "off" {
                return await apply(out: out, what: "zoom", value: "off") { () throws(EffectCommandError) in
                    try effects.setZoom(at: NormalizedPoint(x: 0.5, y: 0.5), factor: 1, frameID: nil)
                }
            }
            guard words.count == 4, let x = Float(words[1]), let y = Float(words[2]), let f = Double(words[3]) else {
                return refuse("zoom takes X Y FACTOR (a point normalised in the picture sent, a factor 1…\(effects.configuration.maxZoom)) or off")
            }
            await apply(out: out, what: "zoom", value: "\(x) \(y) ×\(f)") { () throws(EffectCommandError) in
                try effects.setZoom(at: NormalizedPoint(x: x, y: y), factor: f, frameID: nil)
            }
        case "follow":
            if words.count == 2, words[1] == "off" {
                return await apply(out: out, what: "follow", value: "off") { () throws(EffectCommandError) in try effects.setFollow(nil) }
            }
            guard (2...3).contains(words.count), let factor = words.count == 3 ? Double(words[2]) : 2 else {
                return refuse("follow takes ANNOTATION [FACTOR] or off")
            }
            guard let annotation = node.board.all.first(where: { $0.id == words[1] }) else {
                return refuse("follow: no annotation \(words[1])")
            }
            await apply(out: out, what: "follow", value: "\(annotation.id) ×\(factor)") { () throws(EffectCommandError) in
                try effects.setFollow((annotation.id, annotation.position), factor: factor)
            }
        default:
            refuse("unknown effect command")
        }
    }

    /// Runs `change` off the async pool; says what changed, or why not (the video goes on).
    private static func apply(out: EventOutput, what: String, value: String,
                              _ change: @escaping @Sendable () throws(EffectCommandError) -> Void) async {
        let failure: EffectCommandError? = await withCheckedContinuation { done in
            DispatchQueue.global().async {
                do throws(EffectCommandError) { try change(); done.resume(returning: nil) } catch { done.resume(returning: error) }
            }
        }
        if let failure {
            out.event(.effectError, ["effect": what, "value": value, "message": failure.message],
                      human: "error: \(what) \(value): \(failure.message); the video goes on without it")
        } else {
            out.event(.effectChanged, ["effect": what, "value": value], human: "effect: \(what) \(value)")
        }
    }
}
