/// A single-channel Float image the renderer owns: allocated once, zeroed, freed in
/// `deinit`. Rows are contiguous (stride = width) with a few spare values at the end, so
/// a loop may read one past the last pixel.
final class FloatPlane {
    let width: Int
    let height: Int
    let data: UnsafeMutablePointer<Float>

    init(width: Int, height: Int) {
        self.width = width; self.height = height
        let count = width * height + 8
        data = .allocate(capacity: count)
        data.initialize(repeating: 0, count: count)
    }

    deinit { data.deallocate() }

    @inline(__always)
    func row(_ y: Int) -> UnsafeMutablePointer<Float> { data + y &* width }
}
