/// Why a frame's size or planes cannot be used.
public enum ImagingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// I420 needs even dimensions (chroma is half size each way).
    case oddSize(width: Int, height: Int)
    /// Smaller than `I420Planes.minimumSize`.
    case tooSmall(width: Int, height: Int, minimum: Int)
    /// A plane's stride is shorter than its row.
    case strideTooSmall(plane: String, stride: Int, minimum: Int)

    public var description: String {
        switch self {
        case .oddSize(let w, let h): "frame size \(w)×\(h) is odd: I420 needs an even width and height"
        case .tooSmall(let w, let h, let m): "frame size \(w)×\(h) is too small: each side must be at least \(m) pixels"
        case .strideTooSmall(let plane, let s, let m): "\(plane) plane stride \(s) is shorter than its row of \(m) bytes"
        }
    }
}
