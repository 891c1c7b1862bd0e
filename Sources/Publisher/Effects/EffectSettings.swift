import PoseCastKit

/// What fills the background, and what decides where the background is.
public struct BackgroundSetting: Sendable, Hashable, CustomStringConvertible {
    public enum Fill: Sendable, Hashable {
        case blur(radius: Int)
        case image(path: String)
    }
    /// Nil: the background effect is off.
    public var fill: Fill?
    /// Nil: a person segmentation model decides; a distance: everything farther than it
    /// (metres along the optical axis) is background, from the source's depth.
    public var depthMetres: Float?

    public static let off = BackgroundSetting(fill: nil, depthMetres: nil)
    public static let defaultBlurRadius = 10

    public init(fill: Fill?, depthMetres: Float?) { self.fill = fill; self.depthMetres = depthMetres }

    /// `off`, `blur`, `blur=RADIUS`, `image=PATH`, each optionally followed by
    /// `,depth=METRES` (`--background`, the `background` command).
    public init(spec: String) throws(EffectCommandError) {
        let text = spec.trimmingCharacters(in: .whitespaces)
        if text == "off" { self = .off; return }
        var fill: Fill?, depth: Float?
        for part in text.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            switch (pair.first ?? "", pair.count) {
            case ("blur", 1): fill = .blur(radius: Self.defaultBlurRadius)
            case ("blur", 2):
                guard let r = Int(pair[1]), (1...64).contains(r) else {
                    throw EffectCommandError("background blur radius must be 1…64 pixels, got \(pair[1])")
                }
                fill = .blur(radius: r)
            case ("image", 2) where !pair[1].isEmpty: fill = .image(path: pair[1])
            case ("depth", 2):
                guard let m = Float(pair[1]), m.isFinite, m > 0, m <= 1000 else {
                    throw EffectCommandError("background depth must be a distance in metres (0 < d ≤ 1000), got \(pair[1])")
                }
                depth = m
            default:
                throw EffectCommandError("background takes off, blur[=RADIUS] or image=PATH, optionally with ,depth=METRES; got \"\(part)\"")
            }
        }
        guard let fill else { throw EffectCommandError("background needs blur[=RADIUS] or image=PATH (or off), got \"\(spec)\"") }
        self.init(fill: fill, depthMetres: depth)
    }

    /// "off", "blur", "image" (for status).
    public var mode: String {
        switch fill { case nil: "off"; case .blur: "blur"; case .image: "image" }
    }
    /// "person" or "depth" (for status; nil when off).
    public var source: String? { fill == nil ? nil : (depthMetres == nil ? "person" : "depth") }

    public var description: String {
        switch fill {
        case nil: return "off"
        case .blur(let r)?: return "blur=\(r)" + (depthMetres.map { ",depth=\($0)" } ?? "")
        case .image(let p)?: return "image=\(p)" + (depthMetres.map { ",depth=\($0)" } ?? "")
        }
    }
}

/// What the framing effect keeps in view.
public enum FramingSubject: String, Sendable, Hashable, CaseIterable {
    /// The widest view, centred.
    case off
    /// The largest face (the face detection model).
    case face
    /// The person mask's box (the segmentation model).
    case person
}

/// Who may change the framing while the publisher runs: the seed's three modes.
public enum FramingControl: String, Sendable, Hashable, CaseIterable {
    /// The field worker only (options and stdin); an expert's `zoom`, `follow` and
    /// `framing` are refused.
    case user
    /// The field worker and the experts (the default).
    case cooperative
    /// The publisher keeps the framing it started with: no command changes it.
    case app
}

/// A bad effect option or command, said precisely.
public struct EffectCommandError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case invalid, notAllowed, unavailable }
    public let kind: Kind
    public let message: String
    public init(_ message: String, kind: Kind = .invalid) { self.kind = kind; self.message = message }
    public var description: String { message }
}

/// The effects a publisher starts with (`--background`, `--framing`, …).
public struct EffectOptions: Sendable {
    public var background = BackgroundSetting.off
    public var framing = FramingSubject.off
    public var framingControl = FramingControl.cooperative
    public var maxZoom = 4.0
    /// Segmentation and face detection runs per second.
    public var analysisFPS = 15.0
    /// The person background applies only with a face in the matte.
    public var personGate = true
    /// Where the models and LiteRT are (nil: `EffectAssets.locate`).
    public var assetsDirectory: String?
    public init() {}
}
