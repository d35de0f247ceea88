import Foundation
import TestSupport
import Threading
import XCTest

/// Issue 44 against a running onair: the hostile WHEP clients a LAN can hold.
final class HostileWebRTCTests: XCTestCase {
    static let fingerprint = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")
    static let head = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\na=ice-ufrag:Z7bS\r\n"
        + "a=ice-pwd:a9Qm2GKlxbN4t6nS0N2bqUaX\r\na=fingerprint:\(fingerprint)\r\n"

    /// One m=video of `formats`, `rtpmaps` H.264 rtpmap lines that decide nothing.
    static func offer(formats: [String], rtpmaps: Int) -> String {
        head + "m=video 9 UDP/TLS/RTP/SAVPF \(formats.joined(separator: " "))\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
            + (0..<rtpmaps).map { "a=rtpmap:\($0 % 128) H264/90000\r\n" }.joined()
    }

    /// An offer a browser would send: one H.264 it can be answered in.
    static let honest = head + "m=video 9 UDP/TLS/RTP/SAVPF 102\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
        + "a=rtpmap:102 H264/90000\r\na=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640c1f\r\n"

    func post(_ port: UInt16, _ sdp: String) throws -> HTTPResponse {
        try HTTPClient.request(port: port, "/whep", method: "POST", headers: ["Content-Type": "application/sdp"], body: Array(sdp.utf8))
    }

    /// Four 64 KB offers at once (each cost ~67 s of the web server before) are refused,
    /// and /api/status is answered meanwhile — a viewer is never kept waiting by them.
    func testOffersOfSixtyFourKilobytesStallNobody() throws {
        let port = try startLive()
        let wide = Self.offer(formats: Array(repeating: "1", count: 16_300), rtpmaps: 1_300)
        let deep = Self.offer(formats: (0..<128).map(String.init), rtpmaps: 1_950)
        XCTAssertLessThanOrEqual(wide.utf8.count, 64 << 10)
        let statuses = Locked<[Int]>([])
        let senders = (0..<4).map { n in
            WorkerThread(name: "hostile-\(n)") {
                let status = (try? self.post(port, n % 2 == 0 ? wide : deep).status) ?? 0
                statuses.withLock { $0.append(status) }
            }
        }
        let status = try HTTPClient.request(port: port, "/api/status")
        XCTAssertEqual(status.status, 200, "the API answers while the offers are read")
        for sender in senders { sender.join() }
        XCTAssertEqual(statuses.withLock { $0 }.sorted(), [400, 400, 406, 406], "too many formats; no H.264 that decodes the stream")
    }

    /// The session's resource ends it; the name /api/status lists for it does not.
    func testOnlyTheOffererCanEndItsSession() throws {
        let port = try startLive()
        let created = try post(port, Self.honest)
        XCTAssertEqual(created.status, 201, String(decoding: created.body, as: UTF8.self))
        let location = try XCTUnwrap(created.header("Location"))
        var listed: [[String: Any]] = []
        for _ in 0..<50 where listed.isEmpty {
            let status = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: port, "/api/status").body)) as? [String: Any]
            listed = (status?["webrtc"] as? [String: Any])?["sessions"] as? [[String: Any]] ?? []
            if listed.isEmpty { usleep(100_000) }
        }
        let name = try XCTUnwrap(listed.first?["id"] as? String)
        XCTAssertFalse(location.contains(name), "the listed name is not the resource")
        XCTAssertEqual(try HTTPClient.request(port: port, "/whep/session/" + name, method: "DELETE").status, 404)
        XCTAssertEqual(try HTTPClient.request(port: port, location, method: "DELETE").status, 200)
    }

    /// A live synthetic stream with WebRTC on any port; its web server's port.
    func startLive() throws -> UInt16 {
        let (onair, port, _) = try serveSynthetic("hostile-webrtc", ["webrtc.port=0"])
        addTeardownBlock { _ = onair }
        _ = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 1 }
        return port
    }
}
