import Live
import RTP
import STUN
import System
import TestSupport
import Threading
import XCTest
@testable import WebRTC

/// The WebRTC server's own thread, turn by turn, on virtual time and an in-memory UDP port:
/// a browser's side played by the test (ICE checks, a real DTLS handshake, SRTP) through a
/// whole WHEP session — the pictures the feed publishes, sender reports each second of the
/// server's clock, a NACK answered, and consent lapsing 30 s after the last check. Nothing
/// waits: the test moves the clock and runs the turns.
final class WebRTCSessionTests: XCTestCase {
    let second: Int64 = 1_000_000_000
    let browser = SocketAddress(numeric: "192.0.2.7", port: 50_000, ipv6: false)!
    let browserCredentials = ICECredentials(ufrag: "Z7bS", password: "a9Qm2GKlxbN4t6nS0N2bqUaX")
    let browserCertificate = try! DTLSCertificate.generate(commonName: "browser")
    static let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0x8C, 0x8D, 0x40]
    static let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]

    final class Rig {
        let clock = ManualClock(now: 1_000_000_000_000)
        let datagrams = MemoryDatagrams()
        let feed = LiveFeed(log: .silent())
        let ended = Locked<[String]>([])
        let server: WebRTCServer
        let viewers = WebRTCServer.Viewers()
        var buffer = [UInt8](repeating: 0, count: 2048)

        init() throws {
            let ended = self.ended
            server = try WebRTCServer(settings: .init(host: "192.0.2.1", port: 9, maxViewers: 4), certificate: try DTLSCertificate.generate(),
                                      feed: feed, log: .silent { event, _, fields in
                                          if event == .webrtcEnded { ended.withLock { $0.append("\(fields.first { $0.0 == "reason" }?.1 ?? "")") } }
                                      }, clock: ServerClock(monotonic: clock, wallOffset: { 1_700_000_000_000_000_000 }), datagrams: datagrams,
                                      port: 9, candidates: [PeerAddress(address: [192, 0, 2, 1], port: 9)], thread: false)
        }

        func turn() { server.turn(viewers, buffer: &buffer) }
    }

    func picture(sync: Bool, at time: Int64) -> RealTimePicture {
        let unit: [UInt8] = sync ? [0x65, 0x88, 0x84, 0x00] : [0x41, 0x9A, 0x02]
        return RealTimePicture(accessUnit: [0, 0, 0, UInt8(unit.count)] + unit, captureTime: time, isSync: sync, sps: Self.sps, pps: Self.pps)
    }

    func offer() -> String {
        "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\na=ice-ufrag:\(browserCredentials.ufrag)\r\n"
            + "a=ice-pwd:\(browserCredentials.password)\r\na=fingerprint:\(browserCertificate.sdpFingerprint)\r\na=setup:actpass\r\n"
            + "m=video 9 UDP/TLS/RTP/SAVPF 102\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\na=rtcp-fb:102 nack\r\n"
            + "a=rtpmap:102 H264/90000\r\na=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"
    }

    /// An ICE check as a browser sends it (RFC 8445 §7.1.2), nominating the pair or not.
    func check(_ board: ICECredentials, id: UInt8, nominate: Bool = true) -> [UInt8] {
        var attributes: [STUNMessage.Attribute] = [
            .init(STUNMessage.AttributeType.username, Array("\(board.ufrag):\(browserCredentials.ufrag)".utf8)),
            .init(STUNMessage.AttributeType.priority, [0x6E, 0, 0x1E, 0xFF]),
            .init(STUNMessage.AttributeType.iceControlling, [1, 2, 3, 4, 5, 6, 7, 8])]
        if nominate { attributes.append(.init(STUNMessage.AttributeType.useCandidate, [])) }
        return STUNMessage(messageClass: .request, transactionID: Array(repeating: id, count: 12), attributes: attributes)
            .serialized(integrityKey: Array(board.password.utf8), fingerprint: true)
    }

    /// The answer's ICE credentials (RFC 8839 §5.4).
    func credentials(_ sdp: String) throws -> ICECredentials {
        func value(_ name: String) throws -> String {
            try XCTUnwrap(sdp.split(separator: "\r\n").first { $0.hasPrefix("a=\(name):") }.map { String($0.dropFirst(name.count + 3)) })
        }
        return ICECredentials(ufrag: try value("ice-ufrag"), password: try value("ice-pwd"))
    }

    func testAWholeSessionOnVirtualTime() throws {
        let rig = try Rig()
        defer { rig.server.stop(); rig.feed.stop() }
        let asked = Locked(0)
        rig.feed.begin(RealTimeStream(id: "boot-1", askForPicture: { asked.withLock { $0 += 1 } }))
        rig.feed.publish(picture(sync: true, at: rig.clock.now()))
        guard case .answer(let sdp, _) = rig.server.offer(offer(), client: "192.0.2.7") else { return XCTFail("no answer") }
        let board = try credentials(sdp)
        rig.turn()
        XCTAssertEqual(rig.server.feed.readers.map(\.name), ["webrtc"], "the server reads the feed with its first viewer")

        // ICE: a nominating check is answered from the port, to the address it came from.
        rig.datagrams.deliver(check(board, id: 1), from: browser)
        rig.turn()
        let answers = rig.datagrams.sent()
        XCTAssertEqual(answers.count, 1)
        XCTAssertEqual(try STUNMessage.parse(answers[0].bytes).message.messageClass, .success)
        XCTAssertEqual(answers.first.map { [$0.to.bytes, [UInt8($0.to.port >> 8), UInt8($0.to.port & 0xFF)]] }, [browser.bytes, [0xC3, 0x50]])

        // DTLS: the browser is the client (a=setup:active in the answer); the cookie
        // exchange, then the flights, one turn each.
        XCTAssertTrue(sdp.contains("a=setup:passive"), sdp)
        let endpoint = try DTLSEndpoint(certificate: browserCertificate, server: false)
        var toBoard = try endpoint.receive()
        for _ in 0..<10 where !endpoint.isConnected {
            for datagram in toBoard { rig.datagrams.deliver(datagram, from: browser) }
            rig.turn()
            toBoard = try rig.datagrams.sent().flatMap { try endpoint.receive($0.bytes) }
        }
        for datagram in toBoard { rig.datagrams.deliver(datagram, from: browser) }
        rig.turn()
        XCTAssertTrue(endpoint.isConnected)
        let keys = try XCTUnwrap(endpoint.keys)
        let srtp = try SRTPSession.client(keys)
        XCTAssertEqual(asked.withLock { $0 }, 1, "keyed: a picture asked for at once")
        _ = rig.datagrams.sent()

        // The feed's next IDR reaches the viewer: its parameter sets before the slice, all
        // three small enough for one STAP-A (RFC 6184 §5.7.1).
        rig.feed.publish(picture(sync: true, at: rig.clock.now()))
        rig.turn()
        let media = rig.datagrams.sent()
        let packets = try media.map { try RTPPacket(parsing: try srtp.receive.unprotect(rtp: $0.bytes)) }
        XCTAssertEqual(packets.map(\.payload), [[0x78, 0, 7] + Self.sps + [0, 4] + Self.pps + [0, 4, 0x65, 0x88, 0x84, 0x00]])
        XCTAssertEqual(packets.map(\.marker), [true])
        guard packets.count == 1 else { return }
        let status = try XCTUnwrap(rig.server.sessions.first)
        XCTAssertTrue(status.connected)
        XCTAssertEqual(status.media, "192.0.2.7:50000")

        // A second of the server's clock: a sender report (RFC 3550 §6.4.1), its NTP time
        // the wall clock given.
        rig.clock.advance(by: second)
        rig.turn()
        let reports = try rig.datagrams.sent().flatMap { try RTCPPacket.parse(try srtp.receive.unprotect(rtcp: $0.bytes)) }
        guard case .senderReport(let report)? = reports.first else { return XCTFail("no sender report: \(reports)") }
        XCTAssertEqual(report.ntpTime >> 32, UInt64(1_700_000_000 + 1_001) + 2_208_988_800, "seconds since 1900")

        // A NACK for it (RFC 4585 §6.2.1): sent again, the same packet.
        var nack: [UInt8] = [0x81, 205]
        nack.appendBigEndian(UInt16(3))
        nack.appendBigEndian(UInt32(1))
        nack.appendBigEndian(packets[0].ssrc)
        nack.appendBigEndian(packets[0].sequenceNumber)
        nack.appendBigEndian(UInt16(0))
        rig.datagrams.deliver(try srtp.send.protect(rtcp: nack), from: browser)
        rig.turn()
        let again = rig.datagrams.sent().map(\.bytes)
        XCTAssertEqual(again, [media[0].bytes], "the packet, byte for byte")

        // Consent (RFC 7675 §5.1): 30 s after the selected pair's last check on the server's
        // clock, not before. Authenticated checks from another address are answered and
        // refresh nothing.
        let other = SocketAddress(numeric: "192.0.2.99", port: 50_000, ipv6: false)!
        for round in 0..<3 {
            rig.clock.advance(by: 9 * second)
            rig.datagrams.deliver(check(board, id: UInt8(10 + round), nominate: false), from: other)
            rig.turn()
            let answered = rig.datagrams.sent().filter { STUNMessage.isSTUN($0.bytes) }
            XCTAssertEqual(answered.map { $0.to.bytes }, [other.bytes], "answered, round \(round)")
        }
        XCTAssertEqual(rig.ended.withLock { $0 }, [], "28 s after the last check from the pair")
        rig.clock.advance(by: 2_500_000_000)
        rig.turn()
        XCTAssertEqual(rig.ended.withLock { $0 }, ["consent expired (no STUN check in 30 s)"])
        XCTAssertTrue(rig.server.sessions.isEmpty)
        XCTAssertEqual(rig.server.feed.readers.map(\.name), [], "the feed is left with the last viewer")
    }
}
