import Live
import RTP
import STUN
import System
import XCTest
@testable import WebRTC

/// One viewer's session on virtual time: keyed by a real DTLS handshake with a browser's
/// side played by a second endpoint, then pictures, NACKs and the timers.
final class PeerTests: XCTestCase {
    let second: Int64 = 1_000_000_000
    let browserCertificate = try! DTLSCertificate.generate(commonName: "browser")
    let boardCertificate = try! DTLSCertificate.generate()

    func peer(expecting fingerprint: [UInt8]? = nil, now: Int64 = 0, sound: Bool = false) throws -> Peer {
        let board = ICECredentials.random(), browser = ICECredentials.random()
        return try Peer(id: "p", client: "127.0.0.1", now: now, ice: ICELiteSession(local: board, remote: browser, started: now),
                        video: .init(mid: "0", payloadType: 102, playoutDelayID: 6, absCaptureTimeID: 7, nack: true), ssrc: 0xABCD,
                        audio: sound ? (WHEPAnswer.Audio(mid: "1", payloadType: 111), 0x5555) : nil,
                        cname: "onair", expectedFingerprint: fingerprint ?? browserCertificate.fingerprint, certificate: boardCertificate)
    }

    /// With sound the picture may be held up to 100 ms (to stay with it); the sound goes
    /// one Opus frame a packet, with its own SSRC and sender report.
    func testWithSoundThePictureMayWaitForItAndTheSoundGoesAsItComes() throws {
        let peer = try peer(sound: true)
        let browser = try connect(peer)
        let sent = peer.send(frame(sync: true, payloads: [[0x65, 1]]), now: 0)
        XCTAssertEqual(try RTPPacket(parsing: try browser.receive.unprotect(rtp: sent[0])).extensions.first, .init(id: 6, data: [0, 0, 10]))
        let sound = try XCTUnwrap(peer.send(audio: OpusPacket(payload: [0xFC, 1, 2], rtpTimestamp: 4800)))
        let packet = try RTPPacket(parsing: try browser.receive.unprotect(rtp: sound))
        XCTAssertEqual([packet.ssrc, packet.timestamp, UInt32(packet.payloadType)], [0x5555, 4800, 111])
        XCTAssertEqual(packet.payload, [0xFC, 1, 2])
        XCTAssertEqual(peer.senderReports(ntpTime: 1 << 32, videoTime: 90_000, audioTime: 48_000).count, 2)
    }

    /// The handshake carried by hand; the browser's SRTP sessions.
    func connect(_ peer: Peer, now: Int64 = 0) throws -> (send: SRTPSession, receive: SRTPSession, twin: SRTPSession) {
        let browser = try DTLSEndpoint(certificate: browserCertificate, server: false)
        var toBoard = try browser.receive()
        for _ in 0..<10 where !(peer.connected && browser.isConnected) {
            let toBrowser = try toBoard.flatMap { try peer.receiveDTLS($0, now: now) }
            toBoard = try toBrowser.flatMap { try browser.receive($0) }
        }
        XCTAssertTrue(peer.connected)
        let keys = try XCTUnwrap(browser.keys)
        let sessions = try SRTPSession.client(keys)
        return (sessions.send, sessions.receive, try SRTPSession.client(keys).receive)
    }

    func frame(sync: Bool, payloads: [[UInt8]]) -> OutgoingFrame {
        OutgoingFrame(payloads: payloads, rtpTimestamp: 9000, isSync: sync, captureNTP: 0x0102_0304_0506_0708)
    }

    func testNothingIsSentBeforeTheKeysOrBeforeAnIDRAndThenEveryPacketDecrypts() throws {
        let peer = try peer()
        XCTAssertEqual(peer.send(frame(sync: true, payloads: [[0x65, 1]]), now: 0), [], "no keys yet")
        let browser = try connect(peer)
        XCTAssertEqual(peer.send(frame(sync: false, payloads: [[0x41, 1]]), now: 0), [], "a viewer begins at an IDR")
        let sent = peer.send(frame(sync: true, payloads: [[0x78, 1, 2], [0x7C, 0x85, 3], [0x7C, 0x45, 4]]), now: 0)
        XCTAssertEqual(sent.count, 3)
        let packets = try sent.map { try RTPPacket(parsing: try browser.receive.unprotect(rtp: $0)) }
        XCTAssertEqual(packets.map(\.payload), [[0x78, 1, 2], [0x7C, 0x85, 3], [0x7C, 0x45, 4]])
        XCTAssertEqual(packets.map(\.marker), [false, false, true], "the marker on the access unit's last packet")
        XCTAssertEqual(packets.map { $0.sequenceNumber &- packets[0].sequenceNumber }, [0, 1, 2])
        XCTAssertEqual(Set(packets.map(\.ssrc)), [0xABCD])
        XCTAssertEqual(Set(packets.map(\.payloadType)), [102])
        // playout-delay 0/0 and abs-capture-time on the first packet only.
        XCTAssertEqual(packets[0].extensions, [.init(id: 6, data: [0, 0, 0]), .init(id: 7, data: [1, 2, 3, 4, 5, 6, 7, 8])])
        XCTAssertEqual(packets[1].extensions, [])
        // What follows is sent as it comes.
        XCTAssertEqual(peer.send(frame(sync: false, payloads: [[0x41, 9]]), now: 0).count, 1)
        XCTAssertEqual(peer.stats.packets, 4)
        // Fallen behind: again only from an IDR.
        peer.resynchronize()
        XCTAssertEqual(peer.send(frame(sync: false, payloads: [[0x41, 9]]), now: 0), [])
    }

    /// RFC 4585 §6.2.1: a NACK names a packet and a bitmask of the 16 after it; each one
    /// still kept (a second at most) is sent again, byte for byte, under the same key.
    func testNACKsAreAnsweredFromTheLastSecond() throws {
        let peer = try peer()
        let browser = try connect(peer)
        let sent = peer.send(frame(sync: true, payloads: (0..<5).map { [0x7C, UInt8($0)] }), now: 0)
        // What was sent, read by a second receiver; the browser's own got 0, 2 and 4.
        let packets = try sent.map { try browser.twin.unprotect(rtp: $0) }
        for index in [0, 2, 4] { _ = try browser.receive.unprotect(rtp: sent[index]) }
        let first = try RTPPacket(parsing: packets[0]).sequenceNumber
        // Lost: the second and the fourth (PID first+1, BLP bit 1 = first+3).
        let nack = rtcpFeedback(type: 205, format: 1, fci: [UInt8(truncatingIfNeeded: (first &+ 1) >> 8), UInt8(truncatingIfNeeded: first &+ 1), 0, 0b10])
        let again = peer.receiveRTCP(try browser.send.protect(rtcp: nack), now: second / 2, ntpMiddle: 0)
        XCTAssertEqual(try again.map { try browser.receive.unprotect(rtp: $0) }, [packets[1], packets[3]])
        XCTAssertEqual(peer.stats.nacks, 1)
        XCTAssertEqual(peer.stats.retransmitted, 2)
        // Older than a second: nothing (the picture has long been shown or given up).
        XCTAssertEqual(peer.receiveRTCP(try browser.send.protect(rtcp: nack), now: 2 * second, ntpMiddle: 0), [])
        // A PLI is counted, and the peer wants a picture (the UDP thread asks the encoder).
        XCTAssertFalse(peer.wantsPicture)
        _ = peer.receiveRTCP(try browser.send.protect(rtcp: rtcpFeedback(type: 206, format: 1, fci: [])), now: 2 * second, ntpMiddle: 0)
        XCTAssertEqual(peer.stats.pictureLosses, 1)
        XCTAssertTrue(peer.wantsPicture)
        // Not SRTCP under the browser's key: ignored.
        XCTAssertEqual(peer.receiveRTCP(nack, now: 0, ntpMiddle: 0), [])
    }

    /// A receiver report's LSR and DLSR give the round trip (RFC 3550 §6.4.1).
    func testTheRoundTripComesFromReceiverReports() throws {
        let peer = try peer()
        let browser = try connect(peer)
        XCTAssertEqual(peer.senderReports(ntpTime: 0x1234_5678_0000_0000, videoTime: 1, audioTime: 2).count, 1, "the picture's only")
        var report: [UInt8] = [0x81, 201, 0, 7, 0, 0, 0, 1]
        report.appendBigEndian(UInt32(0xABCD))
        report += [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
        report.appendBigEndian(UInt32(0x5678_0000))   // LSR
        report.appendBigEndian(UInt32(0x0000_8000))   // DLSR: half a second
        // Arrived 0.6 s after the report was sent: 100 ms round trip.
        _ = peer.receiveRTCP(try browser.send.protect(rtcp: report), now: 0, ntpMiddle: 0x5678_0000 + 0x0000_999A)
        XCTAssertEqual(try XCTUnwrap(peer.stats.roundTripMs), 100, accuracy: 0.1)
    }

    /// After the handshake DTLS carries nothing: records are read and dropped (nothing
    /// piles up), a close_notify from the browser ends the session, and the board sends
    /// one when it ends a session.
    func testCloseNotifyEndsTheSessionBothWays() throws {
        let peer = try peer()
        let browser = try DTLSEndpoint(certificate: browserCertificate, server: false)
        var toBoard = try browser.receive()
        for _ in 0..<10 where !(peer.connected && browser.isConnected) {
            toBoard = try toBoard.flatMap { try peer.receiveDTLS($0, now: 0) }.flatMap { try browser.receive($0) }
        }
        XCTAssertTrue(peer.connected)
        for _ in 0..<1000 { XCTAssertEqual(try peer.receiveDTLS([23, 0xFE, 0xFD] + Array(repeating: 0x5A, count: 1100), now: 0), []) }
        let alert = browser.close()
        XCTAssertFalse(alert.isEmpty)
        XCTAssertThrowsError(try alert.flatMap { try peer.receiveDTLS($0, now: 0) }) {
            XCTAssertEqual("\($0)", "the browser closed the session (DTLS close_notify)")
        }
        let other = try self.peer()
        let second = try DTLSEndpoint(certificate: browserCertificate, server: false)
        var flight = try second.receive()
        for _ in 0..<10 where !(other.connected && second.isConnected) {
            flight = try flight.flatMap { try other.receiveDTLS($0, now: 0) }.flatMap { try second.receive($0) }
        }
        _ = try other.dtls.close().flatMap { try second.receive($0) }
        XCTAssertTrue(second.isClosed, "the browser hears the board close")
    }

    func testABrowserWhoseCertificateIsNotTheOneItsOfferNamedIsDropped() throws {
        let peer = try peer(expecting: Array(repeating: 7, count: 32))
        XCTAssertThrowsError(try connect(peer)) { XCTAssertEqual("\($0)", "the browser's DTLS certificate is not the one its offer named") }
        XCTAssertFalse(peer.connected)
    }

    func testSessionsEndWithoutChecksHandshakesOrConsent() throws {
        let quiet = try peer(now: 0)
        XCTAssertNil(quiet.expired(now: 29 * second))
        XCTAssertEqual(quiet.expired(now: 31 * second), "no ICE connectivity check in 30 s")

        // A handshake begun and never finished: 10 s.
        let stalled = try peer(now: 0)
        stalled.media = try XCTUnwrap(System.SocketAddress(numeric: "127.0.0.1", port: 5000, ipv6: false))
        _ = try stalled.receiveDTLS([22, 0xFE, 0xFD] + Array(repeating: 0, count: 20), now: 2 * second)
        XCTAssertNil(stalled.expired(now: 11 * second))
        XCTAssertEqual(stalled.expired(now: 13 * second), "DTLS handshake not done in 10 s")

        // Connected, then the browser stops its consent checks (RFC 7675: 30 s).
        let gone = try peer(now: 0)
        gone.media = stalled.media
        _ = try connect(gone, now: second)
        XCTAssertNil(gone.expired(now: 29 * second))
        XCTAssertEqual(gone.expired(now: 31 * second), "consent expired (no STUN check in 30 s)")
    }

    /// RTCP feedback (RFC 4585 §6.1) from SSRC 1 about the board's SSRC.
    func rtcpFeedback(type: UInt8, format: UInt8, fci: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x80 | format, type]
        out.appendBigEndian(UInt16(2 + fci.count / 4))
        out.appendBigEndian(UInt32(1))
        out.appendBigEndian(UInt32(0xABCD))
        return out + fci
    }
}
