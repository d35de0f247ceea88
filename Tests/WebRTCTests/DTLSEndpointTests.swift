import WebRTC
import XCTest

final class DTLSEndpointTests: XCTestCase {
    /// Two endpoints, datagrams carried by hand: both finish, agree on AEAD GCM (offered
    /// first) and on every key, and each sees the other's certificate.
    func testAHandshakeBetweenTwoEndpointsAgreesOnTheSRTPKeys() throws {
        let boardCertificate = try DTLSCertificate.generate(), browserCertificate = try DTLSCertificate.generate(commonName: "browser")
        let board = try DTLSEndpoint(certificate: boardCertificate, server: true)
        let browser = try DTLSEndpoint(certificate: browserCertificate, server: false)
        var toBoard = try browser.receive(), toBrowser: [[UInt8]] = []
        XCTAssertFalse(toBoard.isEmpty, "the client's ClientHello")
        XCTAssertTrue(toBoard.allSatisfy { $0.count <= 1200 && DatagramKind($0) == .dtls })
        for _ in 0..<10 where !(board.isConnected && browser.isConnected) {
            toBrowser = try toBoard.flatMap { try board.receive($0) }
            toBoard = try toBrowser.flatMap { try browser.receive($0) }
        }
        XCTAssertTrue(board.isConnected && browser.isConnected)
        let keys = try XCTUnwrap(board.keys)
        XCTAssertEqual(keys, browser.keys)
        XCTAssertEqual(keys.profile, .aeadAes128Gcm)
        XCTAssertEqual([keys.clientKey.count, keys.serverKey.count, keys.clientSalt.count, keys.serverSalt.count], [16, 16, 12, 12])
        XCTAssertNotEqual(keys.clientKey, keys.serverKey)
        XCTAssertEqual(board.peerFingerprint, browserCertificate.fingerprint, "compared with the offer's a=fingerprint")
        XCTAssertEqual(browser.peerFingerprint, boardCertificate.fingerprint)
    }

    /// RFC 6347 §4.2.1: a ClientHello is answered with a HelloVerifyRequest alone, a
    /// datagram smaller than the hello, so a spoofed source is sent nothing to speak of;
    /// the certificate's flight goes only to a client that echoes the cookie.
    func testAClientHelloIsAnsweredWithACookieBeforeAnyFlight() throws {
        let board = try DTLSEndpoint(certificate: try DTLSCertificate.generate(), server: true)
        let browser = try DTLSEndpoint(certificate: try DTLSCertificate.generate(commonName: "browser"), server: false)
        let hello = try browser.receive()
        XCTAssertEqual(hello.count, 1)
        let answer = try board.receive(hello[0])
        XCTAssertEqual(answer.count, 1, "one datagram")
        // A DTLS record (content type 22, handshake) whose message is HelloVerifyRequest (3).
        XCTAssertEqual(answer.first?.first, 22)
        XCTAssertEqual(answer.first.map { $0[13] }, 3, "HelloVerifyRequest")
        XCTAssertLessThan(answer[0].count, hello[0].count, "no amplification")
        // The same hello again (a spoofer cannot see the cookie): no flight, at most a cookie.
        let again = try board.receive(hello[0])
        XCTAssertTrue(again.allSatisfy { $0[13] == 3 }, "\(again.map { $0[13] })")
        // The client that got it echoes it and the handshake goes on to its keys.
        var toBoard = try browser.receive(answer[0])
        XCTAssertEqual(toBoard.count, 1, "the ClientHello with the cookie")
        for _ in 0..<10 where !(board.isConnected && browser.isConnected) {
            let toBrowser = try toBoard.flatMap { try board.receive($0) }
            toBoard = try toBrowser.flatMap { try browser.receive($0) }
        }
        XCTAssertTrue(board.isConnected && browser.isConnected)
        XCTAssertEqual(board.keys, browser.keys)
    }

    /// RFC 6347 §4.1.2.7: a record that does not parse is dropped silently, so a forged
    /// datagram cannot end a viewer's handshake; it only gets no answer and no keys.
    func testGarbageIsDiscardedAndNothingIsKeyed() throws {
        let board = try DTLSEndpoint(certificate: try DTLSCertificate.generate(), server: true)
        XCTAssertNil(board.keys)
        XCTAssertNil(board.peerFingerprint)
        XCTAssertEqual(try board.receive([22, 0xFE, 0xFD] + Array(repeating: 0xAB, count: 100)), [])
        XCTAssertEqual(try board.receive([23, 0xFE, 0xFD, 0, 0]), [])
        XCTAssertFalse(board.isConnected)
        XCTAssertNil(board.keys)
    }
}
