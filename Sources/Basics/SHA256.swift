import COpenSSL

/// SHA-256 (FIPS 180-4), libcrypto's: the one onair has, for S3's `x-amz-content-sha256`
/// (Debian bookworm's libcurl signs S3 requests without it, and S3 refuses them), Digest
/// authentication's SHA-256 (RFC 7616) and the ONVIF device's name-based UUID.
public enum SHA256 {
    /// The digest of `bytes` as 64 lower-case hex digits.
    public static func hex(_ bytes: [UInt8]) -> String { Hex.lower(digest(bytes)) }

    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let done = bytes.withUnsafeBytes { raw in EVP_Digest(raw.baseAddress, raw.count, &out, &length, EVP_sha256(), nil) }
        // EVP_Digest fails only when libcrypto cannot allocate its context.
        precondition(done == 1 && length == 32, "libcrypto's SHA-256 failed")
        return out
    }
}

/// Bytes as hex digits.
public enum Hex {
    public static func lower(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}
