import Imaging

/// Why the synthetic camera cannot render (or accept a buffer).
public enum SyntheticCameraError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The frame's size or planes (odd or too small a size, a short stride).
    case image(ImagingError)
    /// The buffer's size is not the renderer's.
    case sizeMismatch(expectedWidth: Int, expectedHeight: Int, width: Int, height: Int)
    /// A lens setting out of range.
    case invalidLens(field: String, value: Float, rule: String)
    /// A depth-map downsampling factor below 1.
    case invalidScale(Int)
    /// A camera the renderer cannot project with (non-finite pose, non-positive focal length).
    case invalidCamera(reason: String)

    public var description: String {
        switch self {
        case .image(let error): error.description
        case .sizeMismatch(let ew, let eh, let w, let h): "buffer is \(w)×\(h) but the renderer was made for \(ew)×\(eh)"
        case .invalidLens(let field, let value, let rule): "lens \(field) = \(value) is invalid: it must be \(rule)"
        case .invalidScale(let s): "depth-map scale \(s) is invalid: it must be at least 1"
        case .invalidCamera(let reason): "camera cannot be rendered: \(reason)"
        }
    }
}
