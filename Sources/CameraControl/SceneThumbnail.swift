import Imaging
/// A coarse picture of the whole frame for telling "the scene changed" from noise and
/// small shake: the mean luma of each cell of a 16×12 grid, divided by the mean of all
/// cells (so exposure and gain changes do not count as a change).
struct SceneThumbnail: Sendable, Hashable {
    static let columns = 16
    static let rows = 12
    private(set) var cells: [Float]

    init(_ f: FrameView) {
        let cw = max(f.width / Self.columns, 1), ch = max(f.height / Self.rows, 1)
        let step = max(1, min(cw, ch) / 8)
        var cells = [Float](repeating: 0, count: Self.columns * Self.rows)
        for j in 0..<Self.rows {
            for i in 0..<Self.columns {
                var sum = 0, n = 0
                var y = min(j * ch, f.height - 1) + step / 2
                while y < min((j + 1) * ch, f.height) {
                    let row = f.y + y * f.yStride
                    var x = min(i * cw, f.width - 1) + step / 2
                    while x < min((i + 1) * cw, f.width) { sum &+= Int(row[x]); n &+= 1; x &+= step }
                    y &+= step
                }
                cells[j * Self.columns + i] = n > 0 ? Float(sum) / Float(n) - 16 : 0
            }
        }
        let mean = cells.reduce(0, +) / Float(cells.count)
        let scale: Float = mean > 1 ? 1 / mean : 1
        self.cells = cells.map { $0 * scale }
    }

    /// Mean absolute difference of the normalised cells: about 0 for the same view,
    /// tenths for a different one.
    func difference(from other: SceneThumbnail) -> Double {
        var total: Float = 0
        for i in cells.indices { total += abs(cells[i] - other.cells[i]) }
        return Double(total) / Double(cells.count)
    }
}
