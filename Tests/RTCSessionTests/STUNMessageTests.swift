import Foundation
@testable import RTCSession
import Testing

/// The STUN messages of the TURN credential check, without a server: the bytes as RFC 8489
/// lays them out, MESSAGE-INTEGRITY over what precedes it, and the answers read back.
@Suite("TURN credential check: STUN messages")
struct STUNMessageTests {
    @Test("an Allocate with credentials: header, padded attributes, and an HMAC-SHA1 over everything before it with the length counting it")
    func encoding() throws {
        var message = STUNMessage(type: STUNMessage.allocateRequest)
        message.add(.requestedTransport, [17, 0, 0, 0])
        message.add(.username, Array("bob".utf8))   // 3 bytes: one byte of padding
        let key = try #require(STUNDigests.md5(Array("bob:realm:pw".utf8)))
        let bytes = message.encoded(integrityKey: key)
        #expect(bytes.count == 20 + 8 + 8 + 24)
        #expect(bytes[0...1] == [0x00, 0x03] && bytes[2...3] == [0x00, UInt8(8 + 8 + 24)])
        #expect(bytes[4...7] == [0x21, 0x12, 0xA4, 0x42])
        #expect(Array(bytes[32...35]) == Array("bob".utf8) + [0])
        #expect(bytes[36...39] == [0x00, 0x08, 0x00, 0x14])
        #expect(Array(bytes[40...]) == STUNDigests.hmacSHA1(key: key, Array(bytes[0..<36])))
        let back = try #require(STUNMessage.decode(bytes))
        #expect(back.type == STUNMessage.allocateRequest && back.transaction == message.transaction)
        #expect(back.string(.username) == "bob" && back.value(.requestedTransport) == [17, 0, 0, 0])
    }

    @Test("the digests match their RFCs' test vectors (MD5: RFC 1321; HMAC-SHA1: RFC 2202)")
    func digests() {
        func hex(_ bytes: [UInt8]?) -> String? { bytes.map { $0.map { String(format: "%02x", $0) }.joined() } }
        #expect(hex(STUNDigests.md5([])) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(hex(STUNDigests.md5(Array("abc".utf8))) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(hex(STUNDigests.hmacSHA1(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        #expect(hex(STUNDigests.hmacSHA1(key: [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8)))
                == "b617318655057264e28bc0b6fb378c8ef146be00")
        // A key longer than SHA-1's block is hashed first (RFC 2202, case 6).
        #expect(hex(STUNDigests.hmacSHA1(key: [UInt8](repeating: 0xaa, count: 80),
                                         Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "aa4ae5e15272d00e95705637ce8a3b55ed402112")
    }

    @Test("a 401 answer's code, realm and nonce, and a success's XOR-relayed address, read back; garbage is no message")
    func answers() throws {
        var refusal = STUNMessage(type: 0x0113)
        refusal.add(.errorCode, [0, 0, 4, 1] + Array("Unauthorized".utf8))
        refusal.add(.realm, Array("posecast".utf8))
        refusal.add(.nonce, Array("abc123".utf8))
        let read = try #require(STUNMessage.decode(refusal.encoded()))
        #expect(read.errorCode?.code == 401 && read.errorCode?.reason == "Unauthorized")
        #expect(read.string(.realm) == "posecast" && read.string(.nonce) == "abc123")

        var success = STUNMessage(type: STUNMessage.allocateSuccess)
        // 127.0.0.1:50000 XORed with the magic cookie.
        let port = UInt16(50000) ^ 0x2112
        success.add(.xorRelayedAddress, [0, 1, UInt8(port >> 8), UInt8(port & 0xFF), 127 ^ 0x21, 0 ^ 0x12, 0 ^ 0xA4, 1 ^ 0x42])
        #expect(STUNMessage.decode(success.encoded())?.relayedAddress == "127.0.0.1:50000")
        #expect(STUNMessage.decode([0xFF, 0, 0, 0]) == nil)
        #expect(STUNMessage.decode(Array(repeating: 0xC0, count: 20)) == nil)
    }

    @Test("TURN URLs: user and password percent-decoded, the default port, other schemes refused")
    func urls() {
        let url = TURNServerURL("turn://posecast:s3cr%25t%3Ax@127.0.0.1:3479")
        #expect(url?.username == "posecast" && url?.password == "s3cr%t:x" && url?.port == 3479)
        #expect(TURNServerURL("turn://u:p@relay.example")?.port == 3478)
        #expect(TURNServerURL("stun://u:p@relay.example") == nil && TURNServerURL("turn://relay.example") == nil)
    }
}
