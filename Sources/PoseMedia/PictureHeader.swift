import Foundation

/// A picture file's size as its header states it (PNG's IHDR, JPEG's start-of-frame),
/// read before decoding: the decode's time limit grows with the pixels, and a picture
/// too large to hold is refused before a decoder allocates it.
package struct PictureHeader: Sendable, Equatable {
    package var width: Int, height: Int
    package var pixels: Int { width * height }

    /// The largest picture decoded: 64 megapixels (an 8000×8000 picture, 96 MB as I420).
    package static let maxPixels = 64_000_000

    /// The size stated by the first bytes of a PNG or JPEG file; nil for other formats or
    /// a header that states none (the decoder then says what is wrong).
    package static func read(_ path: String) -> PictureHeader? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        // A JPEG's start-of-frame follows its other headers (EXIF thumbnails can be tens of kB).
        guard let data = try? handle.read(upToCount: 256 * 1024) else { return nil }
        return parse([UInt8](data))
    }

    package static func parse(_ bytes: [UInt8]) -> PictureHeader? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return png(bytes) }
        if bytes.starts(with: [0xFF, 0xD8]) { return jpeg(bytes) }
        return nil
    }

    /// IHDR is the first chunk: length (4), "IHDR", width (4, big-endian), height (4).
    private static func png(_ b: [UInt8]) -> PictureHeader? {
        guard b.count >= 24, Array(b[12..<16]) == Array("IHDR".utf8) else { return nil }
        let width = bigEndian(b, at: 16, count: 4), height = bigEndian(b, at: 20, count: 4)
        return width > 0 && height > 0 ? PictureHeader(width: width, height: height) : nil
    }

    /// Markers after SOI, each FF xx with a 2-byte length, until a start-of-frame (C0–CF
    /// but C4 huffman tables, C8 reserved, CC arithmetic conditioning): precision (1),
    /// height (2), width (2).
    private static func jpeg(_ b: [UInt8]) -> PictureHeader? {
        var at = 2
        while at + 4 <= b.count {
            guard b[at] == 0xFF else { return nil }
            let marker = b[at + 1]
            if marker == 0xFF { at += 1; continue }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { at += 2; continue }
            let length = bigEndian(b, at: at + 2, count: 2)
            guard length >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                guard at + 9 <= b.count else { return nil }
                let height = bigEndian(b, at: at + 5, count: 2), width = bigEndian(b, at: at + 7, count: 2)
                return width > 0 && height > 0 ? PictureHeader(width: width, height: height) : nil
            }
            at += 2 + length
        }
        return nil
    }

    private static func bigEndian(_ b: [UInt8], at: Int, count: Int) -> Int {
        b[at..<(at + count)].reduce(0) { $0 << 8 | Int($1) }
    }

    /// How long decoding may take: 5 s, and 1 s more per 4 megapixels (an 8000×6000
    /// picture decodes in 0.8 s on an idle core of the reference machine; a busy machine
    /// takes several times that, and a fixed 5 s refused it or not by the machine's load).
    package var decodeTimeLimit: Duration { .seconds(5) + .milliseconds(pixels / 4_000) }
}
