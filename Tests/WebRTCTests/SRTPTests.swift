import WebRTC
import XCTest

/// SRTP against known packets: the master key and salt of RFC 3711 Appendix B.3 for
/// AES-CM with HMAC-SHA1-80, and the AEAD vector key for AES-GCM (RFC 7714); the expected
/// bytes are libsrtp's own validation packets (its test/srtp_driver.c), SSRC 0xcafebabe.
final class SRTPTests: XCTestCase {
    static let plainRTP: [UInt8] = [0x80, 0x0f, 0x12, 0x34, 0xde, 0xca, 0xfb, 0xad, 0xca, 0xfe, 0xba, 0xbe] + Array(repeating: 0xab, count: 16)
    static let plainRTCP: [UInt8] = [0x81, 0xc8, 0x00, 0x0b, 0xca, 0xfe, 0xba, 0xbe] + Array(repeating: 0xab, count: 16)

    static let cmKey: [UInt8] = [0xe1, 0xf9, 0x7a, 0x0d, 0x3e, 0x01, 0x8b, 0xe0, 0xd6, 0x4f, 0xa3, 0x2c, 0x06, 0xde, 0x41, 0x39]
    static let cmSalt: [UInt8] = [0x0e, 0xc6, 0x75, 0xad, 0x49, 0x8a, 0xfe, 0xeb, 0xb6, 0x96, 0x0b, 0x3a, 0xab, 0xe6]

    func testAESCMWithHMACSHA1ProtectsAsTheReferencePackets() throws {
        let sender = try SRTPSession(profile: .aes128CmSha1_80, key: Self.cmKey, salt: Self.cmSalt, direction: .outbound)
        let rtp = try sender.protect(rtp: Self.plainRTP)
        XCTAssertEqual(rtp, Array(Self.plainRTP.prefix(12)) + [
            0x4e, 0x55, 0xdc, 0x4c, 0xe7, 0x99, 0x78, 0xd8, 0x8c, 0xa4, 0xd2, 0x15, 0x94, 0x9d, 0x24, 0x02,
            0xb7, 0x8d, 0x6a, 0xcc, 0x99, 0xea, 0x17, 0x9b, 0x8d, 0xbb])
        let rtcp = try sender.protect(rtcp: Self.plainRTCP)
        XCTAssertEqual(rtcp, Array(Self.plainRTCP.prefix(8)) + [
            0x71, 0x28, 0x03, 0x5b, 0xe4, 0x87, 0xb9, 0xbd, 0xbe, 0xf8, 0x90, 0x41, 0xf9, 0x77, 0xa5, 0xa8,
            0x80, 0x00, 0x00, 0x01, 0x99, 0x3e, 0x08, 0xcd, 0x54, 0xd6, 0xc1, 0x23, 0x07, 0x98])

        let receiver = try SRTPSession(profile: .aes128CmSha1_80, key: Self.cmKey, salt: Self.cmSalt, direction: .inbound)
        XCTAssertEqual(try receiver.unprotect(rtp: rtp), Self.plainRTP)
        XCTAssertEqual(try receiver.unprotect(rtcp: rtcp), Self.plainRTCP)
    }

    func testAESGCMProtectsAsTheReferencePackets() throws {
        let key = Array(UInt8(0)...15), salt = Array(UInt8(0xa0)...0xab)
        let sender = try SRTPSession(profile: .aeadAes128Gcm, key: key, salt: salt, direction: .outbound)
        let rtp = try sender.protect(rtp: Self.plainRTP)
        XCTAssertEqual(rtp, Array(Self.plainRTP.prefix(12)) + [
            0xc5, 0x00, 0x2e, 0xde, 0x04, 0xcf, 0xdd, 0x2e, 0xb9, 0x11, 0x59, 0xe0, 0x88, 0x0a, 0xa0, 0x6e,
            0xd2, 0x97, 0x68, 0x26, 0xf7, 0x96, 0xb2, 0x01, 0xdf, 0x31, 0x31, 0xa1, 0x27, 0xe8, 0xa3, 0x92])
        let rtcp = try sender.protect(rtcp: Self.plainRTCP)
        XCTAssertEqual(rtcp, Array(Self.plainRTCP.prefix(8)) + [
            0xc9, 0x8b, 0x8b, 0x5d, 0xf0, 0x39, 0x2a, 0x55, 0x85, 0x2b, 0x6c, 0x21, 0xac, 0x8e, 0x70, 0x25,
            0xc5, 0x2c, 0x6f, 0xbe, 0xa2, 0xb3, 0xb4, 0x46, 0xea, 0x31, 0x12, 0x3b, 0xa8, 0x8c, 0xe6, 0x1e,
            0x80, 0x00, 0x00, 0x01])
        let receiver = try SRTPSession(profile: .aeadAes128Gcm, key: key, salt: salt, direction: .inbound)
        XCTAssertEqual(try receiver.unprotect(rtp: rtp), Self.plainRTP)
        XCTAssertEqual(try receiver.unprotect(rtcp: rtcp), Self.plainRTCP)
    }

    /// A retransmission answering a NACK protects the same sequence number again; the
    /// receiving side refuses a replayed or altered packet.
    func testTheSenderMayRepeatAndTheReceiverRefusesReplaysAndForgeries() throws {
        let sender = try SRTPSession(profile: .aes128CmSha1_80, key: Self.cmKey, salt: Self.cmSalt, direction: .outbound)
        let first = try sender.protect(rtp: Self.plainRTP)
        XCTAssertEqual(try sender.protect(rtp: Self.plainRTP), first)
        let receiver = try SRTPSession(profile: .aes128CmSha1_80, key: Self.cmKey, salt: Self.cmSalt, direction: .inbound)
        XCTAssertEqual(try receiver.unprotect(rtp: first), Self.plainRTP)
        XCTAssertThrowsError(try receiver.unprotect(rtp: first), "a replay")
        let rtcp = try sender.protect(rtcp: Self.plainRTCP)
        var forged = rtcp
        forged[10] ^= 1
        XCTAssertThrowsError(try receiver.unprotect(rtcp: forged))
        XCTAssertThrowsError(try receiver.unprotect(rtcp: [0x81, 0xc8]), "too short")
        XCTAssertEqual(try receiver.unprotect(rtcp: rtcp), Self.plainRTCP)
    }

    func testKeysOfTheWrongLengthAreRefused() {
        XCTAssertThrowsError(try SRTPSession(profile: .aeadAes128Gcm, key: Self.cmKey, salt: Self.cmSalt, direction: .outbound))
        XCTAssertThrowsError(try SRTPSession(profile: .aes128CmSha1_80, key: [1, 2, 3], salt: Self.cmSalt, direction: .inbound))
    }

    /// The keys a handshake exports, used as each side must: what the board sends, the
    /// browser's receiving session opens, and the other way round.
    func testServerAndClientSessionsFromOneHandshakeTalk() throws {
        let keys = DTLSEndpoint.Keys(profile: .aeadAes128Gcm, clientKey: Array(repeating: 1, count: 16), serverKey: Array(repeating: 2, count: 16),
                                     clientSalt: Array(repeating: 3, count: 12), serverSalt: Array(repeating: 4, count: 12))
        let board = try SRTPSession.server(keys), browser = try SRTPSession.client(keys)
        XCTAssertEqual(try browser.receive.unprotect(rtp: try board.send.protect(rtp: Self.plainRTP)), Self.plainRTP)
        XCTAssertEqual(try board.receive.unprotect(rtcp: try browser.send.protect(rtcp: Self.plainRTCP)), Self.plainRTCP)
        XCTAssertThrowsError(try board.receive.unprotect(rtcp: try board.send.protect(rtcp: Self.plainRTCP)), "its own key is not the peer's")
    }
}
