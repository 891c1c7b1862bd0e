import Foundation

/// A grey picture in binary PGM (P5, 8 bits), the one picture format the calibrator
/// reads: the package has no PNG or JPEG decoder, and every tool converts to PGM
/// (`ffmpeg -i in.jpg -pix_fmt gray out.pgm`, `convert in.png -colorspace gray out.pgm`).
struct GreyPicture {
    var width: Int, height: Int
    var pixels: [UInt8]

    /// The picture in the file at `path`; errors name the file and what is wrong.
    static func read(path: String) throws(PictureError) -> GreyPicture {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw PictureError(path: path, reason: "cannot be read: \(error.localizedDescription)")
        }
        let bytes = [UInt8](data)
        guard bytes.count > 2, bytes[0] == UInt8(ascii: "P"), bytes[1] == UInt8(ascii: "5") else {
            let kind = bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) ? "a PNG" : bytes.starts(with: [0xFF, 0xD8]) ? "a JPEG" : "not a PGM"
            throw PictureError(path: path, reason: "\(kind); the calibrator reads binary greyscale PGM (P5): "
                               + "convert with `ffmpeg -i PICTURE -pix_fmt gray PICTURE.pgm`")
        }
        // Header: P5, then width, height and maxval as decimal text, separated by white
        // space and comments (# to the end of the line), then one white-space byte.
        var i = 2
        func number() -> Int? {
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "#") {
                    while i < bytes.count, bytes[i] != 10 { i += 1 }
                } else if [9, 10, 13, 32].contains(bytes[i]) { i += 1 } else { break }
            }
            var value = 0, digits = 0
            while i < bytes.count, (48...57).contains(bytes[i]), digits < 9 { value = value * 10 + Int(bytes[i] - 48); i += 1; digits += 1 }
            return digits > 0 ? value : nil
        }
        guard let width = number(), let height = number(), let maxval = number(), width > 0, height > 0 else {
            throw PictureError(path: path, reason: "PGM header is broken (P5 width height maxval)")
        }
        guard maxval == 255 else { throw PictureError(path: path, reason: "PGM of \(maxval) levels; 8-bit (255) needed") }
        i += 1
        guard bytes.count - i >= width * height else {
            throw PictureError(path: path, reason: "PGM of \(width)×\(height) holds only \(max(bytes.count - i, 0)) of its \(width * height) bytes")
        }
        return GreyPicture(width: width, height: height, pixels: Array(bytes[i..<(i + width * height)]))
    }

    /// Writes the picture as binary PGM.
    func write(path: String) throws {
        var data = Data("P5\n\(width) \(height)\n255\n".utf8)
        data.append(contentsOf: pixels)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

/// A picture that could not be used, and why.
struct PictureError: Error, CustomStringConvertible {
    var path: String, reason: String
    var description: String { "\(path): \(reason)" }
}
