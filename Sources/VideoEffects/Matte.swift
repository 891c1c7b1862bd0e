import PoseCastKit
import SyntheticCamera

/// How much of each part of a frame is foreground: values from 0 (background) to 1
/// (foreground) on a grid of its own size, stretched over the whole frame. A person
/// segmentation model's output is one (256×144 or 256×256).
public struct Matte: Sendable, Hashable {
    public let width: Int, height: Int
    public var values: [Float]
    public init(width: Int, height: Int, values: [Float]) {
        precondition(values.count == width * height, "a matte needs width × height values")
        self.width = width; self.height = height; self.values = values
    }

    /// The share of the grid at or above `threshold`.
    public func coverage(threshold: Float = 0.5) -> Double {
        Double(values.reduce(0) { $0 + ($1 >= threshold ? 1 : 0) }) / Double(max(values.count, 1))
    }

    /// The share of the cells inside `rect` (normalised) at or above `threshold`.
    public func coverage(in rect: NormalizedRect, threshold: Float = 0.5) -> Double {
        let x0 = max(0, Int(rect.x * Float(width))), x1 = min(width, Int((rect.x + rect.width) * Float(width)))
        let y0 = max(0, Int(rect.y * Float(height))), y1 = min(height, Int((rect.y + rect.height) * Float(height)))
        guard x1 > x0, y1 > y0 else { return 0 }
        var n = 0
        for y in y0..<y1 { for x in x0..<x1 where values[y * width + x] >= threshold { n += 1 } }
        return Double(n) / Double((x1 - x0) * (y1 - y0))
    }

    /// The box (normalised) around the cells at or above `threshold`; nil when none is.
    public func boundingBox(threshold: Float = 0.5) -> NormalizedRect? {
        var x0 = width, y0 = height, x1 = -1, y1 = -1
        for y in 0..<height {
            for x in 0..<width where values[y * width + x] >= threshold {
                x0 = min(x0, x); x1 = max(x1, x); y0 = min(y0, y); y1 = max(y1, y)
            }
        }
        guard x1 >= x0 else { return nil }
        return NormalizedRect(x: Float(x0) / Float(width), y: Float(y0) / Float(height),
                              width: Float(x1 - x0 + 1) / Float(width), height: Float(y1 - y0 + 1) / Float(height))
    }
}

/// Steadies a person matte: in time (each new mask blended with the last, so one
/// uncertain inference does not flicker the edge) and at its edges (a small blur, so the
/// boundary fades over a few pixels instead of stepping along the model's grid).
public struct MatteSmoother: Sendable {
    /// Weight of the newest mask (1: no temporal smoothing).
    public var newWeight: Float
    /// Box-blur passes over the mask grid (each a 3×3 box).
    public var edgePasses: Int
    private var last: Matte?

    public init(newWeight: Float = 0.5, edgePasses: Int = 2) {
        self.newWeight = newWeight; self.edgePasses = edgePasses
    }

    public mutating func reset() { last = nil }

    public mutating func smooth(_ matte: Matte) -> Matte {
        var out = matte
        if let last, last.width == matte.width, last.height == matte.height {
            let k = newWeight
            for i in out.values.indices {
                let d = matte.values[i] - last.values[i]
                out.values[i] = last.values[i] + k * d
            }
        }
        last = out
        for _ in 0..<edgePasses { out = Self.box3(out) }
        return out
    }

    static func box3(_ m: Matte) -> Matte {
        let w = m.width, h = m.height
        var tmp = [Float](repeating: 0, count: w * h), out = tmp
        m.values.withUnsafeBufferPointer { src in
            for y in 0..<h {
                for x in 0..<w {
                    let a = src[y * w + max(x - 1, 0)], b = src[y * w + x], c = src[y * w + min(x + 1, w - 1)]
                    tmp[y * w + x] = (a + b + c) / 3
                }
            }
        }
        for y in 0..<h {
            let up = max(y - 1, 0) * w, mid = y * w, down = min(y + 1, h - 1) * w
            for x in 0..<w { out[mid + x] = (tmp[up + x] + tmp[mid + x] + tmp[down + x]) / 3 }
        }
        return Matte(width: w, height: h, values: out)
    }
}

/// The compositor's mask: one foreground weight (0…255) per 2×2 block of a frame (per
/// chroma sample of I420), so luma and chroma blend alike.
public struct BlockAlpha: Sendable {
    public let width: Int, height: Int
    public var values: [UInt8]

    public init(width: Int, height: Int, values: [UInt8]) {
        precondition(values.count == width * height)
        self.width = width; self.height = height; self.values = values
    }

    /// Where each block of the output frame comes from in the capture, normalised: the
    /// identity, or a crop's mapping (`CropWindow`), so a matte or depth map of the whole
    /// capture applies to a framed or zoomed frame.
    public struct View: Sendable {
        public var crop: CropWindow
        public var captureWidth: Int, captureHeight: Int
        public init(crop: CropWindow, captureWidth: Int, captureHeight: Int) {
            self.crop = crop; self.captureWidth = captureWidth; self.captureHeight = captureHeight
        }
        /// Capture-normalised coordinate of block centres along one axis.
        func axis(count: Int, horizontal: Bool) -> [Double] {
            let origin = horizontal ? crop.x : crop.y, span = horizontal ? crop.width : crop.height
            let size = Double(horizontal ? captureWidth : captureHeight)
            return (0..<count).map { (origin + (Double($0) + 0.5) / Double(count) * span) / size }
        }
    }

    /// A matte of the capture stretched over a frame of `frameWidth × frameHeight` showing
    /// `view` of it (bilinear), through a soft threshold: below `low` background, above
    /// `high` foreground, smooth between.
    public init(matte: Matte, frameWidth: Int, frameHeight: Int, view: View? = nil, low: Float = 0.35, high: Float = 0.65) {
        let width = frameWidth / 2, height = frameHeight / 2
        self.width = width; self.height = height
        let v = view ?? View(crop: .full(width: frameWidth, height: frameHeight), captureWidth: frameWidth, captureHeight: frameHeight)
        let xs = v.axis(count: width, horizontal: true).map { Float(min(max($0 * Double(matte.width) - 0.5, 0), Double(matte.width - 1))) }
        let ys = v.axis(count: height, horizontal: false).map { Float(min(max($0 * Double(matte.height) - 0.5, 0), Double(matte.height - 1))) }
        var out = [UInt8](repeating: 0, count: width * height)
        let range = max(high - low, 1e-3)
        matte.values.withUnsafeBufferPointer { m in
            for j in 0..<height {
                let fy = ys[j], y0 = Int(fy), y1 = min(y0 + 1, matte.height - 1), wy = fy - Float(y0)
                for i in 0..<width {
                    let fx = xs[i], x0 = Int(fx), x1 = min(x0 + 1, matte.width - 1), wx = fx - Float(x0)
                    let top = m[y0 * matte.width + x0] * (1 - wx) + m[y0 * matte.width + x1] * wx
                    let bottom = m[y1 * matte.width + x0] * (1 - wx) + m[y1 * matte.width + x1] * wx
                    var t = ((top * (1 - wy) + bottom * wy) - low) / range
                    t = min(max(t, 0), 1)
                    out[j * width + i] = UInt8((t * t * (3 - 2 * t) * 255).rounded())
                }
            }
        }
        values = out
    }

    /// What is nearer than `maxDepth` metres kept, the rest background, from a depth map
    /// of the capture (`view` says which part the frame shows). A block is kept when any
    /// of its four pixels is near (each looked up in the map's cell under it), so with a
    /// map of every pixel (`DepthMap.scale` 1) and no crop no nearer pixel ever changes.
    /// No model, no smoothing: the synthetic camera's depth is exact, and so is this mask.
    public init(depth: DepthMap, maxDepth: Float, frameWidth: Int, frameHeight: Int, view: View? = nil) {
        let width = frameWidth / 2, height = frameHeight / 2
        self.width = width; self.height = height
        let v = view ?? View(crop: .full(width: frameWidth, height: frameHeight), captureWidth: frameWidth, captureHeight: frameHeight)
        let cols = v.axis(count: frameWidth, horizontal: true).map { min(max(Int($0 * Double(depth.imageWidth)) / depth.scale, 0), depth.width - 1) }
        let rows = v.axis(count: frameHeight, horizontal: false).map { min(max(Int($0 * Double(depth.imageHeight)) / depth.scale, 0), depth.height - 1) }
        var out = [UInt8](repeating: 0, count: width * height)
        depth.values.withUnsafeBufferPointer { d in
            @inline(__always) func near(_ row: Int, _ col: Int) -> Bool {
                let z = d[rows[row] * depth.width + cols[col]]
                return z.isFinite && z <= maxDepth
            }
            for j in 0..<height {
                for i in 0..<width {
                    let kept = near(2 * j, 2 * i) || near(2 * j, 2 * i + 1) || near(2 * j + 1, 2 * i) || near(2 * j + 1, 2 * i + 1)
                    out[j * width + i] = kept ? 255 : 0
                }
            }
        }
        values = out
    }

    /// The share of blocks counted as foreground (weight at least half).
    public var foregroundShare: Double {
        Double(values.reduce(0) { $0 + ($1 >= 128 ? 1 : 0) }) / Double(max(values.count, 1))
    }
}
