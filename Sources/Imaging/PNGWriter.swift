/// 8-bit RGB as a PNG file, with no library: the image data goes in *stored* (not
/// compressed) deflate blocks, so all this needs is the two checksums PNG and zlib
/// define. Bigger files than a compressor makes (about 3 bytes a pixel), which is fine
/// for the occasional snapshot it is for.
public enum PNGWriter {
    /// The PNG for `rgb` (width × height × 3 bytes, rows top to bottom).
    public static func encode(rgb: [UInt8], width: Int, height: Int) -> [UInt8] {
        precondition(width > 0 && height > 0 && rgb.count == width * height * 3, "RGB size does not match \(width)×\(height)")
        // Each row: filter type 0 (none), then its pixels.
        var raw = [UInt8]()
        raw.reserveCapacity((width * 3 + 1) * height)
        for row in 0..<height {
            raw.append(0)
            raw.append(contentsOf: rgb[(row * width * 3)..<((row + 1) * width * 3)])
        }
        var zlib: [UInt8] = [0x78, 0x01]   // deflate, 32 KiB window, no preset dictionary
        var offset = 0
        repeat {
            let count = min(65_535, raw.count - offset)
            let final: UInt8 = offset + count == raw.count ? 1 : 0
            zlib.append(final)   // BTYPE 00: stored
            zlib += le16(count) + le16(~count & 0xffff)
            zlib += raw[offset..<(offset + count)]
            offset += count
        } while offset < raw.count
        zlib += be32(adler32(raw))

        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png += chunk("IHDR", be32(UInt32(width)) + be32(UInt32(height)) + [8, 2, 0, 0, 0])   // 8-bit RGB
        png += chunk("IDAT", zlib)
        png += chunk("IEND", [])
        return png
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return be32(UInt32(data.count)) + body + be32(crc32(body))
    }

    private static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8((v >> 8) & 0xff)] }
    private static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }

    private static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// CRC-32 (ISO 3309), as PNG's chunks carry it.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xffff_ffff
        for b in bytes { c = crcTable[Int((c ^ UInt32(b)) & 0xff)] ^ (c >> 8) }
        return c ^ 0xffff_ffff
    }

    /// Adler-32, zlib's checksum of the uncompressed data.
    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for chunk in stride(from: 0, to: bytes.count, by: 5552) {
            for x in bytes[chunk..<min(chunk + 5552, bytes.count)] { a += UInt32(x); b += a }
            a %= 65_521; b %= 65_521
        }
        return b << 16 | a
    }
}
