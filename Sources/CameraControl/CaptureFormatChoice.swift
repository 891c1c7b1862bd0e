/// Which of a camera's modes the publisher captures, for the size and rate it sends.
///
/// Most USB webcams give 720p and 1080p at 30 fps only as MJPEG; raw YUYV at those sizes
/// is 5–10 fps, bounded by USB 2's bandwidth. So the rate decides first: a mode that
/// reaches the asked rate beats one that does not, whatever its encoding. Then a mode
/// that covers the asked size (nothing is upscaled) at the same aspect (nothing is
/// stretched), the smallest such (least to decode and scale), and raw before MJPEG at
/// equal size (no decoding, no JPEG artefacts). When no mode reaches the rate, the
/// fastest one that covers the size.
public struct CaptureFormatChoice: Sendable, Hashable, CustomStringConvertible {
    public var mode: CaptureMode
    /// The rate asked of the device: the lowest it offers at or above the asked rate,
    /// else its highest.
    public var rate: CaptureMode.Rate
    /// Why this mode, in words (for the log and `--list-formats`).
    public var reason: String

    /// Whether the picture is scaled to the asked size after capture.
    public func scaled(width: Int, height: Int) -> Bool { mode.width != width || mode.height != height }

    public var description: String { "\(mode.encoding) \(mode.width)x\(mode.height) at \(rate) fps (\(reason))" }

    /// The choice among `modes` for pictures of `width` × `height` at `fps`; nil when the
    /// device offers nothing the publisher can take.
    public static func choose(from modes: [CaptureMode], width: Int, height: Int, fps: Int) -> CaptureFormatChoice? {
        let usable = modes.filter { $0.usable && !$0.rates.isEmpty && $0.width > 0 && $0.height > 0 }
        guard !usable.isEmpty else { return nil }
        let wanted = Double(fps) * 0.98   // 29.97 serves 30
        func reaches(_ m: CaptureMode) -> Bool { m.maxRate >= wanted }
        func covers(_ m: CaptureMode) -> Bool { m.width >= width && m.height >= height }
        func sameAspect(_ m: CaptureMode) -> Bool { m.width * height == m.height * width }
        func isRaw(_ m: CaptureMode) -> Bool { if case .raw = m.encoding { return true } else { return false } }
        // Lexicographic: each earlier criterion outranks all later ones.
        func better(_ a: CaptureMode, _ b: CaptureMode) -> Bool {
            if reaches(a) != reaches(b) { return reaches(a) }
            if !reaches(a), a.maxRate != b.maxRate, covers(a) == covers(b) { return a.maxRate > b.maxRate }
            if covers(a) != covers(b) { return covers(a) }
            if sameAspect(a) != sameAspect(b) { return sameAspect(a) }
            let (areaA, areaB) = (a.width * a.height, b.width * b.height)
            if areaA != areaB { return covers(a) ? areaA < areaB : areaA > areaB }
            if isRaw(a) != isRaw(b) { return isRaw(a) }
            return a.maxRate > b.maxRate
        }
        let best = usable.sorted(by: better)[0]
        let rate = best.rates.last { $0.perSecond >= wanted } ?? best.rates[0]
        var reason: String
        if reaches(best) {
            let slower = usable.filter { !reaches($0) && $0.width == best.width && $0.height == best.height && $0.encoding != best.encoding }
            if case .mjpeg = best.encoding, let raw = slower.first(where: isRaw) {
                reason = "raw \(raw.encoding.rawFormat ?? "") gives \(raw.rates[0]) fps at that size"
            } else {
                reason = "reaches \(fps) fps"
            }
        } else {
            reason = "the fastest mode: no mode reaches \(fps) fps"
        }
        if !covers(best) { reason += "; smaller than \(width)x\(height), scaled up" } else if best.width != width || best.height != height {
            reason += "; scaled to \(width)x\(height)"
        }
        return CaptureFormatChoice(mode: best, rate: rate, reason: reason)
    }
}

extension CaptureMode.Encoding {
    var rawFormat: String? { if case .raw(let format) = self { format } else { nil } }
}
