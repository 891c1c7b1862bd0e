/// Why the synthetic camera cannot render (or accept a buffer).
public enum SyntheticCameraError: Error, Sendable, Hashable, CustomStringConvertible {
    /// I420 needs even dimensions (chroma is half size each way).
    case oddSize(width: Int, height: Int)
    /// Smaller than the renderer supports.
    case tooSmall(width: Int, height: Int, minimum: Int)
    /// A plane's stride is shorter than its row.
    case strideTooSmall(plane: String, stride: Int, minimum: Int)
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
        case .oddSize(let w, let h): "frame size \(w)×\(h) is odd: I420 needs an even width and height"
        case .tooSmall(let w, let h, let m): "frame size \(w)×\(h) is too small: each side must be at least \(m) pixels"
        case .strideTooSmall(let plane, let s, let m): "\(plane) plane stride \(s) is shorter than its row of \(m) bytes"
        case .sizeMismatch(let ew, let eh, let w, let h): "buffer is \(w)×\(h) but the renderer was made for \(ew)×\(eh)"
        case .invalidLens(let field, let value, let rule): "lens \(field) = \(value) is invalid: it must be \(rule)"
        case .invalidScale(let s): "depth-map scale \(s) is invalid: it must be at least 1"
        case .invalidCamera(let reason): "camera cannot be rendered: \(reason)"
        }
    }
}
