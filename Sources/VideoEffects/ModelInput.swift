import Imaging

/// Model inputs made from frames: resized with `I420Resampler`, converted to RGB
/// (BT.601, the frames' matrix) and scaled into the range a model expects.
enum ModelInput {
    /// Writes `picture` (already at the tensor's width) into an HWC RGB float tensor of
    /// `tensorWidth × tensorHeight`, from row `rowOffset`, values mapped from 0…255 to
    /// `low…high`. Rows outside the picture are left as they are.
    static func write(_ picture: I420Image, into tensor: UnsafeMutableBufferPointer<Float>, tensorWidth: Int,
                      rowOffset: Int = 0, low: Float, high: Float) {
        let scale = (high - low) / 255
        let w = picture.width, h = picture.height, cw = w / 2
        picture.bytes.withUnsafeBufferPointer { src in
            let y = src.baseAddress!, u = y + w * h, v = u + cw * (h / 2)
            for row in 0..<h {
                let out = tensor.baseAddress! + (row + rowOffset) * tensorWidth * 3
                for col in 0..<w {
                    let c = (row / 2) * cw + col / 2
                    let rgb = BT601.rgb(y: Float(y[row * w + col]), u: Float(u[c]), v: Float(v[c]))
                    out[col * 3] = min(max(rgb.red, 0), 255) * scale + low
                    out[col * 3 + 1] = min(max(rgb.green, 0), 255) * scale + low
                    out[col * 3 + 2] = min(max(rgb.blue, 0), 255) * scale + low
                }
            }
        }
    }

    /// `frame` (or its `crop`) resized to `width × height` (even).
    static func resized(_ frame: FrameView, width: Int, height: Int, crop: CropWindow? = nil) -> I420Image {
        var image = try! I420Image(width: width, height: height)
        image.withPlanes { planes in
            I420Resampler.resample(frame, crop: crop ?? .full(width: frame.width, height: frame.height), into: planes)
        }
        return image
    }
}
