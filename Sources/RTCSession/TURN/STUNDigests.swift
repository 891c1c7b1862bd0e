internal import CDTLS

/// The digests of STUN's long-term credentials, from the libcrypto RTCSession already
/// links for its DTLS certificate (CDTLS).
enum STUNDigests {
    /// MESSAGE-INTEGRITY's HMAC-SHA1 of `data` under `key`: 20 bytes. libcrypto fails this
    /// only when it cannot allocate; the bytes are then zero, and the server's refusal
    /// (401, integrity check failure) is what the check reports.
    static func hmacSHA1(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        if pcdtls_hmac_sha1(key, key.count, data, data.count, &out) != 0 {
            out = [UInt8](repeating: 0, count: 20)
        }
        return out
    }

    /// The long-term credential key, MD5 of "username:realm:password": 16 bytes; nil when
    /// libcrypto refuses MD5 (a FIPS-only configuration).
    static func md5(_ data: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 16)
        return pcdtls_md5(data, data.count, &out) == 0 ? out : nil
    }
}
