import PoseCastKit

/// Why a metering command was refused.
public enum CameraMeterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The camera cannot do these routines (it lacks the controls they drive).
    case unsupported(routines: [MeteringRoutine], camera: String)
    /// The point lies outside the image (x and y must be finite, in 0…1).
    case invalidPoint(NormalizedPoint)

    public var description: String {
        switch self {
        case let .unsupported(routines, camera):
            "\(routines.map(\.rawValue).joined(separator: ", ")) not supported by \(camera)"
        case let .invalidPoint(p):
            "point (\(p.x), \(p.y)) is not in the image"
        }
    }

    /// The control-channel error code of this refusal.
    public var code: ControlErrorCode {
        switch self {
        case .unsupported: .unsupported
        case .invalidPoint: .invalidValue
        }
    }

    /// The `error` reply for the request `id`.
    public func controlError(id: String?) -> ControlError { ControlError(id: id, code: code, message: description) }
}

/// What a metering command did.
public struct MeterOutcome: Sendable, Hashable {
    /// The routines the command now drives (or froze, or released).
    public var applied: [MeteringRoutine]
    /// Routines asked for that this camera cannot do, left out (only when the request
    /// allowed that: `throwIfUnsupported` false).
    public var skipped: [MeteringRoutine]

    public init(applied: [MeteringRoutine], skipped: [MeteringRoutine] = []) {
        self.applied = applied; self.skipped = skipped
    }
}
