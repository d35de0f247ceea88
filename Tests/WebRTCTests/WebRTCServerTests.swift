import Live
import Logging
import Media
import System
import TestSupport
import Threading
import XCTest
@testable import WebRTC

/// The WHEP side of the server (offers, limits, the HTTP answers) on a real socket bound
/// to loopback; the media side is played by a browser in the integration tests.
final class WebRTCServerTests: XCTestCase {
    static let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0x8C, 0x8D, 0x40]

    func offer(fingerprint: String = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")) -> String {
        "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\na=ice-ufrag:Z7bS\r\na=ice-pwd:a9Qm2GKlxbN4t6nS0N2bqUaX\r\n"
            + "a=fingerprint:\(fingerprint)\r\nm=video 9 UDP/TLS/RTP/SAVPF 102\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
            + "a=rtpmap:102 H264/90000\r\na=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"
    }

    func server(maxViewers: Int = 8, perAddress: Int = 4, clock: ServerClock = .system, log: Log = .silent()) throws -> WebRTCServer {
        let server = try WebRTCServer(settings: .init(host: "127.0.0.1", port: 0, maxViewers: maxViewers, perAddress: perAddress),
                                      certificate: try DTLSCertificate.generate(), feed: LiveFeed(log: .silent()), log: log, clock: clock)
        addTeardownBlock { server.stop(); server.feed.stop() }
        return server
    }

    func live(_ server: WebRTCServer, id: String = "boot-1") {
        server.feed.begin(RealTimeStream(id: id))
        server.feed.publish(RealTimePicture(accessUnit: [0, 0, 0, 2, 0x65, 0x88], captureTime: 0, isSync: true, sps: Self.sps, pps: [0x68, 0xCE]))
    }

    func status(_ result: WebRTCServer.OfferResult) -> Int? {
        if case .refused(let status, _, _) = result { return status }
        return nil
    }

    func testOffersWaitForALiveStreamWithItsFirstPicture() throws {
        let server = try server()
        XCTAssertEqual(server.offer(offer(), client: "10.0.0.1"), .refused(status: 503, message: "no stream is live", retryAfter: 5))
        server.feed.begin(RealTimeStream(id: "boot-1"))
        XCTAssertEqual(status(server.offer(offer(), client: "10.0.0.1")), 503, "no parameter sets yet")
        live(server)
        guard case .answer(let sdp, let id) = server.offer(offer(), client: "10.0.0.1") else { return XCTFail("no answer") }
        XCTAssertTrue(sdp.contains("a=candidate:1 1 udp 2130706431 127.0.0.1 \(server.port) typ host\r\n"), sdp)
        XCTAssertTrue(sdp.contains("profile-level-id=42e01f"), sdp)
        XCTAssertFalse(id.isEmpty)
        XCTAssertEqual(status(server.offer(offer(), client: "10.0.0.1", stream: "boot-2")), 404)
        server.feed.end(stream: "boot-1")
        XCTAssertEqual(status(server.offer(offer(), client: "10.0.0.1")), 503)
    }

    func testViewersAreLimitedInAllAndPerAddress() throws {
        let server = try server(maxViewers: 2, perAddress: 1)
        live(server)
        guard case .answer(_, let first) = server.offer(offer(), client: "10.0.0.1") else { return XCTFail("no answer") }
        guard case .refused(503, let message, 10) = server.offer(offer(), client: "10.0.0.1") else { return XCTFail("a second from one address") }
        XCTAssertTrue(message.contains("from 10.0.0.1"), message)
        guard case .refused(503, _, 10) = server.offer(offer(), client: "::ffff:10.0.0.1") else { return XCTFail("the same address, IPv4-mapped") }
        guard case .answer = server.offer(offer(), client: "2001:db8:1:2::1") else { return XCTFail("another address") }
        guard case .refused(503, _, 10) = server.offer(offer(), client: "2001:db8:1:2:ffff::9") else { return XCTFail("the same /64") }
        XCTAssertTrue(server.end(first))
        XCTAssertFalse(server.end("no-such-session"))
    }

    /// The places as `Places` gives them: a checked session keeps its place; at the limit a
    /// new offer displaces the oldest session that never checked connectivity, and is
    /// refused only when every place is checked.
    func testAPlaceIsHeldFirmlyOnlyOnceConnectivityIsChecked() {
        func holder(_ id: String, _ group: UInt8, checked: Bool, since: Int64) -> Places.Holder {
            Places.Holder(id: id, group: [10, 0, 0, group], checked: checked, since: since)
        }
        let mixed = [holder("a", 1, checked: true, since: 1), holder("b", 2, checked: false, since: 5), holder("c", 3, checked: false, since: 3)]
        XCTAssertEqual(Places.admit(mixed, group: [10, 0, 0, 9], maximum: 4, perAddress: 2), .admit(displacing: nil))
        XCTAssertEqual(Places.admit(mixed, group: [10, 0, 0, 9], maximum: 3, perAddress: 2), .admit(displacing: "c"), "the oldest pending")
        XCTAssertEqual(Places.admit(mixed, group: [10, 0, 0, 1], maximum: 3, perAddress: 1), .fullFromAddress)
        let checked = mixed.map { var h = $0; h.checked = true; return h }
        XCTAssertEqual(Places.admit(checked, group: [10, 0, 0, 9], maximum: 3, perAddress: 2), .full)
    }

    /// Issue 44's flood: offers from 3 addresses re-posted every half second, none ever
    /// checking connectivity, hold no place a real viewer cannot take at once.
    func testOffersThatNeverCheckConnectivityCannotKeepAViewerOut() throws {
        let clock = ManualClock()
        let server = try server(maxViewers: 10, perAddress: 4, clock: ServerClock(monotonic: clock, wallOffset: { 0 }))
        live(server)
        for round in 0..<8 {
            for n in 0..<12 { _ = server.offer(offer(), client: "10.0.0.\(n % 3 + 1)") }
            clock.advance(by: 500_000_000)
            guard case .answer = server.offer(offer(), client: "192.0.2.\(round + 1)") else { return XCTFail("a real viewer refused in round \(round)") }
            let held = server.shared.withLock { $0.sessions.count + $0.arriving.count }
            XCTAssertLessThanOrEqual(held, 10, "never more than webrtc.max_viewers places")
        }
    }

    /// Thousands of offers from as many addresses: at most max_viewers places are ever
    /// held, and the log gets a bounded number of lines a minute of it.
    func testAFloodOfOffersHoldsNoMorePlacesAndDoesNotFloodTheLog() throws {
        let lines = Locked(0)
        let log = Log.silent { _, _, _ in lines.withLock { $0 += 1 } }
        let server = try WebRTCServer(settings: .init(host: "127.0.0.1", port: 0, maxViewers: 8, perAddress: 1),
                                      certificate: try DTLSCertificate.generate(), feed: LiveFeed(log: log), log: log)
        defer { server.stop(); server.feed.stop() }
        live(server)
        let before = lines.withLock { $0 }
        for n in 0..<2000 {
            switch server.offer(offer(), client: "10.\(n / 65_536).\(n / 256 % 256).\(n % 256)") {
            case .answer: break
            case .refused(let status, let message, _): XCTFail("\(status) \(message)")
            }
            let state = server.shared.withLock { ($0.sessions.keys.sorted(), $0.arriving.map(\.id), $0.ending) }
            XCTAssertLessThanOrEqual(state.0.count + state.1.count, 8, "\(state)")
        }
        server.stop()
        // Within two minutes of the clock, should the run straddle one's end.
        XCTAssertLessThanOrEqual(lines.withLock { $0 } - before, 2 * (2 * 60 + WebRTCServer.refusalsPerMinute) + 8,
                                 "offers and their ends capped at 60 a minute each, displacements at 20")
    }

    /// On virtual time: a session whose browser never checks connectivity keeps its place
    /// for 30 s of the server's clock and is ended after them (the test moves the clock and
    /// waits for nothing).
    func testASessionThatNeverChecksConnectivityEndsAfter30Seconds() throws {
        let clock = ManualClock()
        let ended = Locked<[String]>([])
        let server = try server(clock: ServerClock(monotonic: clock, wallOffset: { 0 }), log: .silent { event, _, fields in
            if event == .webrtcEnded { ended.withLock { $0.append("\(fields.first { $0.0 == "reason" }?.1 ?? "")") } }
        })
        live(server)
        guard case .answer = server.offer(offer(), client: "10.0.0.1") else { return XCTFail("no answer") }
        clock.advance(by: 29_000_000_000)
        server.poke()
        try waitUntil { (server.sessions.first?.ageMs ?? 0) >= 29_000 }
        XCTAssertEqual(ended.withLock { $0 }, [], "its place is kept for 30 s")
        clock.advance(by: 1_500_000_000)
        server.poke()
        try waitUntil { server.sessions.isEmpty }
        XCTAssertEqual(ended.withLock { $0 }, ["no ICE connectivity check in 30 s"])
    }

    private func waitUntil(_ condition: () -> Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        let deadline = KernelClock.monotonic() + 15_000_000_000
        while !condition() {
            guard KernelClock.monotonic() < deadline else { return XCTFail("not within 15 s", file: file, line: line) }
            _ = try? Poll.wait([], timeoutMs: 20)
        }
    }

    func testBadOffersAreRefusedInOneLine() throws {
        let server = try server()
        live(server)
        for (text, expected) in [("not sdp", 400), (offer(fingerprint: "sha-1 AB:CD"), 400),
                                 (offer().replacingOccurrences(of: "H264", with: "VP8"), 406),
                                 (String(repeating: "a=x\r\n", count: 20_000), 400)] {
            guard case .refused(let status, let message, _) = server.offer(text, client: "10.0.0.9") else { return XCTFail(text) }
            XCTAssertEqual(status, expected, message)
            XCTAssertFalse(message.contains("\n"))
        }
    }

    func testTheResourceAnswersAsWHEPSays() throws {
        let server = try server()
        live(server)
        func respond(_ method: String, _ path: String, type: String? = "application/sdp", body: String = "") -> WHEPResource.Reply {
            WHEPResource.respond(method: method, path: path, contentType: type, body: Array(body.utf8), client: "10.0.0.1", server: server)
        }
        let created = respond("POST", "", body: offer())
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(created.headers["Content-Type"], "application/sdp")
        let location = try XCTUnwrap(created.headers["Location"])
        XCTAssertTrue(location.hasPrefix("/whep/session/"))
        XCTAssertEqual(created.headers["Access-Control-Expose-Headers"], "Location, Retry-After")
        XCTAssertEqual(respond("POST", "/boot-1", body: offer()).status, 201, "the live stream by its id")
        XCTAssertEqual(respond("POST", "/boot-2", body: offer()).status, 404)
        XCTAssertEqual(respond("POST", "", type: "text/plain", body: offer()).status, 415)
        XCTAssertEqual(respond("POST", "", type: "application/sdp; charset=utf-8", body: offer()).status, 201)
        let preflight = respond("OPTIONS", "")
        XCTAssertEqual(preflight.status, 204)
        XCTAssertEqual(preflight.headers["Access-Control-Allow-Headers"], "Content-Type, Authorization")
        let session = String(location.dropFirst(WHEPResource.prefix.count))
        XCTAssertEqual(respond("PATCH", session, type: "application/trickle-ice-sdpfrag").status, 405)
        XCTAssertEqual(respond("GET", session).status, 405)
        // /api/status lists a name for the session, never its resource: the resource is what
        // ends it, and only the offerer knows it.
        // A session is in `arriving` until the table that lists it is published: one or the other.
        let names = server.shared.withLock { $0.arriving.map(\.peer.name) + $0.sessions.values.map(\.id) }
        XCTAssertEqual(names.count, 3)
        for name in names {
            XCTAssertFalse(location.contains(name))
            XCTAssertEqual(respond("DELETE", "/session/" + name).status, 404, "the listed name ends nothing")
        }
        XCTAssertEqual(respond("DELETE", session).status, 200)
        XCTAssertEqual(respond("DELETE", "/session/nothing").status, 404)
        XCTAssertEqual(respond("DELETE", "").status, 405)
    }
}
