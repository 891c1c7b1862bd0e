import Foundation

/// The few STUN/TURN messages `TURNCredentialCheck` sends and reads (RFC 8489, RFC 8656):
/// a header with the magic cookie and a transaction id, then type-length-value
/// attributes padded to four bytes.
struct STUNMessage {
    static let allocateRequest: UInt16 = 0x0003
    static let allocateSuccess: UInt16 = 0x0103
    static let refreshRequest: UInt16 = 0x0004
    static let magicCookie: UInt32 = 0x2112_A442

    enum Attribute: UInt16 {
        case username = 0x0006, messageIntegrity = 0x0008, errorCode = 0x0009, lifetime = 0x000D
        case realm = 0x0014, nonce = 0x0015, xorRelayedAddress = 0x0016, requestedTransport = 0x0019
    }

    var type: UInt16
    var transaction: [UInt8]
    var attributes: [(type: UInt16, value: [UInt8])] = []

    init(type: UInt16) {
        self.type = type
        transaction = (0..<12).map { _ in UInt8.random(in: 0...255) }
    }

    mutating func add(_ attribute: Attribute, _ value: [UInt8]) { attributes.append((attribute.rawValue, value)) }

    func value(_ attribute: Attribute) -> [UInt8]? { attributes.first { $0.type == attribute.rawValue }?.value }
    func string(_ attribute: Attribute) -> String? { value(attribute).map { String(decoding: $0, as: UTF8.self) } }

    var errorCode: (code: Int, reason: String)? {
        guard let value = value(.errorCode), value.count >= 4 else { return nil }
        return (Int(value[2] & 0x07) * 100 + Int(value[3]), String(decoding: value[4...], as: UTF8.self))
    }

    /// XOR-RELAYED-ADDRESS as `a.b.c.d:port` (IPv4 only; nil otherwise).
    var relayedAddress: String? {
        guard let value = value(.xorRelayedAddress), value.count >= 8, value[1] == 0x01 else { return nil }
        let port = (UInt16(value[2]) << 8 | UInt16(value[3])) ^ UInt16(Self.magicCookie >> 16)
        let cookie = withUnsafeBytes(of: Self.magicCookie.bigEndian, Array.init)
        let address = (0..<4).map { String(value[4 + $0] ^ cookie[$0]) }.joined(separator: ".")
        return "\(address):\(port)"
    }

    var summary: String {
        let error = errorCode.map { " error \($0.code) \($0.reason)" } ?? ""
        return String(format: "type 0x%04x", type) + error
    }

    /// The bytes; with `integrityKey`, a MESSAGE-INTEGRITY (HMAC-SHA1 over everything before
    /// it, the length counting it) last.
    func encoded(integrityKey: [UInt8]? = nil) -> [UInt8] {
        var body: [UInt8] = []
        for (type, value) in attributes {
            body += Self.be16(type) + Self.be16(UInt16(value.count)) + value
            body += [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
        }
        func header(length: Int) -> [UInt8] {
            Self.be16(type) + Self.be16(UInt16(length)) + withUnsafeBytes(of: Self.magicCookie.bigEndian, Array.init) + transaction
        }
        guard let integrityKey else { return header(length: body.count) + body }
        let signed = header(length: body.count + 24) + body
        let mac = STUNDigests.hmacSHA1(key: integrityKey, signed)
        return signed + Self.be16(Attribute.messageIntegrity.rawValue) + Self.be16(20) + mac
    }

    /// Parses an answer; nil when it is not a STUN message.
    static func decode(_ bytes: [UInt8]) -> STUNMessage? {
        guard bytes.count >= 20, bytes[0] & 0xC0 == 0 else { return nil }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard bytes.count >= 20 + length else { return nil }
        var message = STUNMessage(type: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
        message.transaction = Array(bytes[8..<20])
        var offset = 20
        while offset + 4 <= 20 + length {
            let type = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let size = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard offset + 4 + size <= bytes.count else { return nil }
            message.attributes.append((type, Array(bytes[(offset + 4)..<(offset + 4 + size)])))
            offset += 4 + size + (4 - size % 4) % 4
        }
        return message
    }

    private static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
}

/// One UDP socket to one server: send a request, read the answer with its transaction id
/// (others are skipped), resending twice if none comes. Blocking.
final class UDPExchange {
    private let fd: Int32
    private let timeout: Double

    init?(host: String, port: UInt16, timeout: Double) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else { return nil }
        defer { freeaddrinfo(result) }
        fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        guard fd >= 0 else { return nil }
        self.timeout = timeout
        guard Foundation.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            Foundation.close(fd)
            return nil
        }
        var limit = timeval(tv_sec: Int(timeout / 3), tv_usec: Int((timeout / 3).truncatingRemainder(dividingBy: 1) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() { Foundation.close(fd) }

    func exchange(_ request: STUNMessage, integrityKey: [UInt8]? = nil) -> STUNMessage? {
        let bytes = request.encoded(integrityKey: integrityKey)
        var buffer = [UInt8](repeating: 0, count: 1500)
        for _ in 0..<3 {
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            while true {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { break }   // timed out (or refused): send again
                if let answer = STUNMessage.decode(Array(buffer[0..<n])), answer.transaction == request.transaction {
                    return answer
                }
            }
        }
        return nil
    }
}
