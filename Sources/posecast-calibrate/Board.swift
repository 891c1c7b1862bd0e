import ArgumentParser
import Foundation
import Imaging
import TagTracking

/// A board to print: its tag map (the file `images` needs) and a PNG of it.
struct Board: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a calibration board: its tag map (JSON) and a picture to print.",
        discussion: """
            The default is 6 × 4 tags of 5 cm, 1.25 cm apart: 37.5 × 25 cm, an A3 sheet at 100 %. \
            Print the PNG without scaling, measure a tag's black square, and if it is not --tag-size \
            write the board file again with the size measured: the calibration's distances are the board's.
            """)

    @Option var columns = 6
    @Option var rows = 4
    @Option(help: "The side of a tag's black square (metres).") var tagSize: Float = 0.05
    @Option(help: "Tag36h11 cells between two tags' black squares (2: their white rings touch).") var gapCells = 2
    @Option(help: "The id of the top-left tag; ids go along the rows.") var firstID = 0
    @Option(help: "Write the board's tag map here.") var out: String
    @Option(help: "Write a picture of the board here (PNG).") var picture: String?
    @Option(help: "Pixels per tag cell in the picture.") var pixelsPerCell = 24

    func validate() throws {
        guard columns * rows <= 32 else { throw ValidationError("at most 32 tags: a picture reports no more (TagDetector.capacity)") }
        guard gapCells >= 2 else { throw ValidationError("--gap-cells must be 2 or more: the white rings would overlap") }
        guard (1...200).contains(pixelsPerCell) else { throw ValidationError("--pixels-per-cell must be 1…200") }
    }

    func run() throws {
        let cell = tagSize / 8
        let map = try TagMap.board(columns: columns, rows: rows, tagSize: tagSize, gap: Float(gapCells) * cell, firstID: firstID)
        try Data(map.jsonFile.utf8).write(to: URL(fileURLWithPath: out), options: .atomic)
        if let picture {
            // One white cell of margin beyond the tags' own white rings.
            let pitch = 8 + gapCells
            let cellsWide = 2 + 10 + (columns - 1) * pitch, cellsHigh = 2 + 10 + (rows - 1) * pitch
            let (w, h) = (cellsWide * pixelsPerCell, cellsHigh * pixelsPerCell)
            var rgb = [UInt8](repeating: 255, count: w * h * 3)
            for row in 0..<rows {
                for column in 0..<columns {
                    guard let pattern = TagPattern(id: firstID + row * columns + column) else { continue }
                    let (x0, y0) = (1 + column * pitch, 1 + row * pitch)
                    for cy in 0..<pattern.side {
                        for cx in 0..<pattern.side where pattern.cells[cy * pattern.side + cx] == 0 {
                            for py in 0..<pixelsPerCell {
                                let y = (y0 + cy) * pixelsPerCell + py
                                let x = (x0 + cx) * pixelsPerCell
                                rgb.replaceSubrange((y * w + x) * 3..<(y * w + x + pixelsPerCell) * 3,
                                                    with: repeatElement(0, count: pixelsPerCell * 3))
                            }
                        }
                    }
                }
            }
            try Data(PNGWriter.encode(rgb: rgb, width: w, height: h)).write(to: URL(fileURLWithPath: picture), options: .atomic)
            let mm = Float(cellsWide) * cell * 1000, mmHigh = Float(cellsHigh) * cell * 1000
            print("board: \(columns) × \(rows) tags, \(out); print \(picture) \(String(format: "%.0f × %.0f", mm, mmHigh)) mm "
                  + "so a tag's black square is \(String(format: "%.1f", tagSize * 1000)) mm")
        } else {
            print("board: \(columns) × \(rows) tags, \(out)")
        }
    }
}
