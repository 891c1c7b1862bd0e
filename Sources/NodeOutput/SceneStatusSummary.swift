import Foundation
import PoseCastKit

extension SceneStatus {
    /// The camera's state in a status object (publisher and subscriber print the same keys).
    public var statusFields: [String: Any] {
        var fields: [String: Any] = [
            "focus": focus.state.rawValue, "exposure": exposure.state.rawValue,
            "white_balance": whiteBalance.state.rawValue, "focus_mode": focusMode.rawValue,
        ]
        fields["lens_position"] = lensPosition
        fields["exposure_ms"] = exposureMs
        return fields
    }

    /// The camera's state for the human status line.
    public var summary: String {
        "camera: focus \(focus.state.rawValue) (\(focusMode.rawValue)"
            + (lensPosition.map { String(format: ", lens %.3f", $0) } ?? "") + ")"
            + "  exposure \(exposure.state.rawValue)" + (exposureMs.map { String(format: " %.1f ms", $0) } ?? "")
            + "  wb \(whiteBalance.state.rawValue)" + (whiteBalanceKelvin.map { String(format: " %.0f K", $0) } ?? "")
            + "  \(meteringMode.rawValue)"
    }
}
