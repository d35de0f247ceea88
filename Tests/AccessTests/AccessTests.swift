import Basics
import Logging
import System
import XCTest
@testable import Access

final class AccessTests: XCTestCase {
    let realm = "onair-0a1b2c3d"
    var list: AccessList {
        AccessList(realm: realm, viewers: [AccessList.viewer(AccessList.viewerValue(name: "alice", password: "correct horse", realm: realm))!],
                   devices: [("frigate", "Nvr2secretqrstuvwxyz2345")])
    }
    let second: Int64 = 1_000_000_000

    /// RFC 7616 §3.9.1's example, both algorithms, and RFC 2617 §3.5's.
    func testResponsesMatchTheRFCExamples() {
        let nonce = "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v"
        let counted = (count: "00000001", clientNonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ")
        for (algorithm, expected) in [(DigestAlgorithm.md5, "8ca523f5e9506fed4657c9700eebdbec"),
                                      (.sha256, "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")] {
            let stored = AccessList.credentialDigest("Mufasa", "http-auth@example.org", "Circle of Life", algorithm)
            XCTAssertEqual(AccessList.hex(DigestAuthority.response(stored: stored, nonce: nonce, counted: counted, method: "GET",
                                                                   uri: "/dir/index.html", algorithm)), expected, algorithm.rawValue)
        }
        let stored = AccessList.credentialDigest("Mufasa", "testrealm@host.com", "Circle Of Life", .md5)
        XCTAssertEqual(AccessList.hex(DigestAuthority.response(stored: stored, nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093",
                                                               counted: ("00000001", "0a4f113b"), method: "GET", uri: "/dir/index.html", .md5)),
                       "6629fae49393a05397450978507c4ef1")
    }

    func testConfigValues() throws {
        let value = AccessList.viewerValue(name: "alice", password: "pw", realm: realm)
        XCTAssertTrue(value.hasPrefix("alice md5:"), value)
        XCTAssertFalse(value.contains("pw "), "the password is not in the value")
        let viewer = try XCTUnwrap(AccessList.viewer(value))
        XCTAssertEqual(viewer.md5.count, 16)
        XCTAssertEqual(viewer.sha256.count, 32)
        for bad in ["alice", "alice md5:00 sha-256:00", "al:ice " + value.dropFirst(6), "alice sha-256:" + String(repeating: "0", count: 64) + " md5:" + String(repeating: "0", count: 32),
                    value + " extra"] {
            XCTAssertNil(AccessList.viewer(String(bad)), bad)
        }
        XCTAssertNotNil(AccessList.device("frigate " + AccessList.makeSecret()))
        XCTAssertNil(AccessList.device("frigate short"))
        XCTAssertNil(AccessList.device("frigate"))
        XCTAssertEqual(AccessList.makeSecret().count, 24)
        XCTAssertNotEqual(AccessList.makeSecret(), AccessList.makeSecret())
        XCTAssertTrue(AccessList.validRealm(AccessList.makeRealm()))
        XCTAssertFalse(AccessList.validRealm("a\"b"))
        XCTAssertTrue(list.accepts("alice", password: "correct horse"))
        XCTAssertFalse(list.accepts("alice", password: "correct horse "))
        XCTAssertTrue(list.accepts("frigate", password: "Nvr2secretqrstuvwxyz2345"))
        XCTAssertFalse(list.accepts("bob", password: ""))
        XCTAssertEqual(list.secret("frigate"), "Nvr2secretqrstuvwxyz2345")
        XCTAssertNil(list.secret("alice"), "a viewer's password is not kept")
    }

    func testParametersOfAnAuthorizationHeader() {
        let parsed = DigestAuthority.parameters(#"Digest username="a\"b", realm="r, s",nc=00000001 ,  qop=auth, uri="/x?y=1""#)
        XCTAssertEqual(parsed, ["username": "a\"b", "realm": "r, s", "nc": "00000001", "qop": "auth", "uri": "/x?y=1"])
        XCTAssertNil(DigestAuthority.parameters(#"Digest username="a", username="b""#), "a repeated name")
        XCTAssertNil(DigestAuthority.parameters(#"Digest username="a"#), "an open quote")
        XCTAssertNil(DigestAuthority.parameters(#"Basic YTpi"#))
        XCTAssertNil(DigestAuthority.parameters("Digest " + String(repeating: "a=b,", count: 2000)), "over 4 KiB")
        XCTAssertNil(DigestAuthority.parameters(#"Digest username"#))
    }

    /// A client's answer to the first challenge, as RFC 7616 §3.4 has it computed.
    func answer(_ challenge: String, user: String, password: String, method: String = "GET", uri: String = "/", qop: Bool? = nil,
                count: String = "00000001") -> String {
        let parameters = DigestAuthority.parameters(challenge)!
        let algorithm = DigestAlgorithm(rawValue: parameters["algorithm"]!)!
        let nonce = parameters["nonce"]!
        let counted = (qop ?? (parameters["qop"] != nil)) ? (count: count, clientNonce: "c0ffee") : nil
        let response = DigestAuthority.response(stored: AccessList.credentialDigest(user, parameters["realm"]!, password, algorithm), nonce: nonce,
                                                counted: counted, method: method, uri: uri, algorithm)
        return "Digest username=\"\(user)\", realm=\"\(parameters["realm"]!)\", nonce=\"\(nonce)\", uri=\"\(uri)\", algorithm=\(algorithm.rawValue), "
            + (counted.map { "qop=auth, nc=\($0.count), cnonce=\"\($0.clientNonce)\", " } ?? "") + "response=\"\(AccessList.hex(response))\""
    }

    func testDigestOverHTTPAndRTSP() {
        let gate = AccessGate(list: list, token: "operator-token-0123", log: .silent())
        let now: Int64 = 1000 * second
        XCTAssertEqual(gate.check(nil, method: "GET", uri: "/", client: "10.0.0.1", channel: .http, now: now), .challenge(stale: false))
        let http = gate.challenges(.http, stale: false, client: "10.0.0.1", now: now)
        XCTAssertEqual(http.count, 2)
        XCTAssertTrue(http[0].contains("algorithm=SHA-256") && http[0].contains("qop=\"auth\"") && http[0].contains("realm=\"\(realm)\""), http[0])
        XCTAssertTrue(http[1].contains("algorithm=MD5"))
        for (n, challenge) in http.enumerated() {
            XCTAssertEqual(gate.check(answer(challenge, user: "alice", password: "correct horse", uri: "/streams/a/playlist.m3u8?_HLS_msn=3", count: "0000000\(2 * n + 1)"),
                                      method: "GET", uri: "/streams/a/playlist.m3u8", client: "10.0.0.1", channel: .http, now: now + second),
                           .allowed(user: "alice"))
            XCTAssertEqual(gate.check(answer(challenge, user: "frigate", password: "Nvr2secretqrstuvwxyz2345", count: "0000000\(2 * n + 2)"), method: "GET", uri: "/",
                                      client: "10.0.0.1", channel: .http, now: now), .allowed(user: "frigate"))
        }
        let rtsp = gate.challenges(.rtsp, stale: false, client: "10.0.0.1", now: now)
        XCTAssertEqual(rtsp.count, 1)
        XCTAssertFalse(rtsp[0].contains("qop"), "GStreamer answers in RFC 2069's form")
        let uri = "rtsp://10.0.0.2:8554/live"
        XCTAssertEqual(gate.check(answer(rtsp[0], user: "alice", password: "correct horse", method: "DESCRIBE", uri: uri), method: "DESCRIBE",
                                  uri: uri, client: "10.0.0.1", channel: .rtsp, now: now), .allowed(user: "alice"))
        // Wrong password, another method than the one signed, another resource, a made-up nonce.
        XCTAssertEqual(gate.check(answer(rtsp[0], user: "alice", password: "wrong", method: "DESCRIBE", uri: uri), method: "DESCRIBE",
                                  uri: uri, client: "10.0.0.1", channel: .rtsp, now: now), .refused)
        XCTAssertEqual(gate.check(answer(rtsp[0], user: "alice", password: "correct horse", method: "DESCRIBE", uri: uri), method: "SETUP",
                                  uri: uri, client: "10.0.0.1", channel: .rtsp, now: now), .refused)
        XCTAssertEqual(gate.check(answer(http[0], user: "alice", password: "correct horse", uri: "/a"), method: "GET", uri: "/b",
                                  client: "10.0.0.1", channel: .http, now: now), .refused)
        let forged = answer(http[0].replacingOccurrences(of: "nonce=\"0", with: "nonce=\"1"), user: "alice", password: "correct horse", count: "00000009")
        XCTAssertEqual(gate.check(forged, method: "GET", uri: "/", client: "10.0.0.1", channel: .http, now: now), .challenge(stale: true),
                       "a nonce this board did not make for this address is never let in")
        // An old nonce with the right password: challenged again, stale.
        XCTAssertEqual(gate.check(answer(http[0], user: "alice", password: "correct horse"), method: "GET", uri: "/", client: "10.0.0.1",
                                  channel: .http, now: now + 601 * second), .challenge(stale: true))
        XCTAssertTrue(gate.challenges(.http, stale: true, client: "10.0.0.1", now: now)[0].hasSuffix("stale=true"))
    }

    /// Issue 44: a captured Digest answer is not taken again — not with the count it had
    /// (a browser's parallel requests may still come in any order), not from another
    /// address — and over HTTP an answer must carry a count (RFC 2069's form is RTSP's).
    func testACapturedDigestAnswerIsNotTakenTwice() {
        let gate = AccessGate(list: list, log: .silent())
        let now: Int64 = 2000 * second
        let challenge = gate.challenges(.http, stale: false, client: "10.0.0.1", now: now)[0]
        func check(_ count: String, from client: String = "10.0.0.1", uri: String = "/streams/a/playlist.m3u8") -> AccessGate.Decision {
            gate.check(answer(challenge, user: "alice", password: "correct horse", uri: uri, count: count), method: "GET", uri: uri,
                       client: client, channel: .http, now: now + second)
        }
        XCTAssertEqual(check("00000003"), .allowed(user: "alice"))
        XCTAssertEqual(check("00000003"), .challenge(stale: true), "the same count again: a replay")
        XCTAssertEqual(check("00000001"), .allowed(user: "alice"), "an earlier count not yet used (requests overtake one another)")
        XCTAssertEqual(check("00000002"), .allowed(user: "alice"))
        XCTAssertEqual(check("00000001"), .challenge(stale: true))
        XCTAssertEqual(check("00000050"), .allowed(user: "alice"))
        XCTAssertEqual(check("00000004"), .challenge(stale: true), "more than 64 behind the highest: taken as seen")
        XCTAssertEqual(check("00000051", from: "10.0.0.66"), .challenge(stale: true), "the nonce was made for another address")
        XCTAssertEqual(gate.check(answer(challenge, user: "alice", password: "correct horse", qop: false), method: "GET", uri: "/",
                                  client: "10.0.0.1", channel: .http, now: now + second), .refused, "no count over HTTP")
        // Over RTSP, RFC 2069's form (no count) is taken, from the nonce's own address.
        let rtsp = gate.challenges(.rtsp, stale: false, client: "2001:db8:1:2::5", now: now)[0]
        let uri = "rtsp://10.0.0.2:8554/live"
        let signed = answer(rtsp, user: "alice", password: "correct horse", method: "DESCRIBE", uri: uri)
        XCTAssertEqual(gate.check(signed, method: "DESCRIBE", uri: uri, client: "2001:db8:1:2::9", channel: .rtsp, now: now), .allowed(user: "alice"),
                       "the same /64")
        XCTAssertEqual(gate.check(signed, method: "DESCRIBE", uri: uri, client: "2001:db8:9:9::5", channel: .rtsp, now: now), .challenge(stale: true))
    }

    /// The counts of at most `capacity` nonces are kept; a nonce dropped from them is
    /// stale from then on, never new again.
    func testForgottenNoncesAreStaleNotNew() {
        let counts = NonceCounts(capacity: 2)
        let lifetime: Int64 = 600 * second
        XCTAssertTrue(counts.first(1, nonce: "a", made: 10, now: 11 * second, lifetime: lifetime))
        XCTAssertTrue(counts.first(1, nonce: "b", made: 11, now: 12 * second, lifetime: lifetime))
        XCTAssertTrue(counts.first(1, nonce: "c", made: 12, now: 13 * second, lifetime: lifetime), "a is forgotten")
        XCTAssertFalse(counts.first(1, nonce: "a", made: 10, now: 14 * second, lifetime: lifetime), "a again: stale, not new")
        XCTAssertFalse(counts.first(2, nonce: "a", made: 10, now: 14 * second, lifetime: lifetime))
        XCTAssertFalse(counts.first(1, nonce: "b", made: 11, now: 14 * second, lifetime: lifetime), "b is remembered")
        XCTAssertTrue(counts.first(2, nonce: "b", made: 11, now: 14 * second, lifetime: lifetime))
    }

    func testBasicAndTheOperatorsToken() {
        let gate = AccessGate(list: list, token: "operator-token-0123", log: .silent())
        let basic = { (user: String, password: String) in "Basic " + Base64.encode(Array("\(user):\(password)".utf8)) }
        XCTAssertEqual(gate.check(basic("alice", "correct horse"), method: "GET", uri: "/", client: "10.0.0.1", channel: .http), .allowed(user: "alice"))
        XCTAssertEqual(gate.check(basic("alice", "nope"), method: "GET", uri: "/", client: "10.0.0.1", channel: .http), .refused)
        XCTAssertEqual(gate.check(basic("alice", "correct horse"), method: "DESCRIBE", uri: "/", client: "10.0.0.1", channel: .rtsp), .refused,
                       "RTSP takes Digest only")
        XCTAssertEqual(gate.check("Bearer operator-token-0123", method: "GET", uri: "/", client: "10.0.0.1", channel: .http), .allowed(user: "operator"))
        XCTAssertEqual(gate.check("Bearer operator-token-0124", method: "GET", uri: "/", client: "10.0.0.1", channel: .http), .refused)
        XCTAssertEqual(gate.check("Negotiate abc", method: "GET", uri: "/", client: "10.0.0.1", channel: .http), .refused)
    }

    /// Ten failures, then one attempt each six seconds; another address is not held up.
    func testFailedLoginsAreLimitedPerAddress() {
        let gate = AccessGate(list: list, log: .silent())
        let now: Int64 = 5000 * second
        let wrong = "Basic " + Base64.encode(Array("alice:guess".utf8))
        for attempt in 0..<10 {
            XCTAssertEqual(gate.check(wrong, method: "GET", uri: "/", client: "192.0.2.7", channel: .http, now: now + Int64(attempt)), .refused)
        }
        XCTAssertEqual(gate.check(wrong, method: "GET", uri: "/", client: "192.0.2.7", channel: .http, now: now + second), .throttled(seconds: 5))
        let right = "Basic " + Base64.encode(Array("alice:correct horse".utf8))
        XCTAssertEqual(gate.check(right, method: "GET", uri: "/", client: "192.0.2.7", channel: .http, now: now + second), .throttled(seconds: 5),
                       "not even the right password is checked while throttled")
        XCTAssertEqual(gate.check(right, method: "GET", uri: "/", client: "192.0.2.8", channel: .http, now: now + second), .allowed(user: "alice"))
        XCTAssertEqual(gate.check(nil, method: "GET", uri: "/", client: "192.0.2.7", channel: .http, now: now + second), .challenge(stale: false))
        XCTAssertEqual(gate.check(right, method: "GET", uri: "/", client: "192.0.2.7", channel: .http, now: now + 7 * second), .allowed(user: "alice"))
        XCTAssertEqual(gate.check(wrong, method: "GET", uri: "/", client: "192.0.2.7", channel: .http, now: now + 7 * second), .refused)
        XCTAssertEqual(gate.check(wrong, method: "GET", uri: "/", client: "192.0.2.7", channel: .http, now: now + 7 * second), .throttled(seconds: 5))
    }

    func testAddressesAsCounted() {
        XCTAssertEqual(LoginLimiter.key("2001:db8:1:2:aaaa::1"), LoginLimiter.key("2001:db8:1:2:bbbb::9"), "one /64")
        XCTAssertNotEqual(LoginLimiter.key("2001:db8:1:2::1"), LoginLimiter.key("2001:db8:1:3::1"))
        XCTAssertEqual(LoginLimiter.key("::ffff:192.0.2.1"), LoginLimiter.key("192.0.2.1"))
        XCTAssertEqual(LoginLimiter.key("192.0.2.1"), [192, 0, 2, 1])
        let limiter = LoginLimiter(burst: 1, refillSeconds: 60, capacity: 3)
        for host in 1...5 { limiter.failed("192.0.2.\(host)", now: Int64(host) * second) }
        XCTAssertNil(limiter.wait("192.0.2.1", now: 6 * second), "the oldest was forgotten")
        XCTAssertNotNil(limiter.wait("192.0.2.5", now: 6 * second))
    }
}

