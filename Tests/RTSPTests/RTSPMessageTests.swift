import RTSP
import XCTest

/// RFC 2326 as clients send it: ffmpeg's, GStreamer's and VLC's requests as they write
/// them, split anywhere; interleaved data between them; every bound; the answers.
final class RTSPMessageTests: XCTestCase {
    static let describe = "DESCRIBE rtsp://192.168.1.20:8554/live RTSP/1.0\r\nAccept: application/sdp\r\nCSeq: 2\r\n"
        + "User-Agent: Lavf59.27.100\r\n\r\n"
    static let setup = "SETUP rtsp://192.168.1.20:8554/live/trackID=0 RTSP/1.0\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n"
        + "CSeq: 3\r\n\r\n"

    func testRequestsComeWholeHoweverTheBytesAreSplit() throws {
        let bytes = Array((Self.describe + Self.setup).utf8) + [0x24, 1, 0, 3, 0xAA, 0xBB, 0xCC]
            + Array("SET_PARAMETER rtsp://h/live RTSP/1.0\r\nCSeq: 4\r\nContent-Length: 5\r\n\r\nhello".utf8)
        for step in [1, 7, 64, bytes.count] {
            var parser = RTSPParser()
            var messages: [RTSPMessage] = []
            for start in stride(from: 0, to: bytes.count, by: step) {
                messages += try parser.feed(Array(bytes[start..<min(bytes.count, start + step)]))
            }
            XCTAssertEqual(parser.pending, 0)
            XCTAssertEqual(messages.count, 4, "split every \(step)")
            guard case .request(let describe) = messages[0], case .request(let setup) = messages[1],
                  case .interleaved(1, [0xAA, 0xBB, 0xCC]) = messages[2], case .request(let set) = messages[3] else {
                return XCTFail("\(messages)")
            }
            XCTAssertEqual([describe.method, describe.uri], ["DESCRIBE", "rtsp://192.168.1.20:8554/live"])
            XCTAssertEqual(describe.cseq, 2)
            XCTAssertEqual(describe.header("user-agent"), "Lavf59.27.100")
            XCTAssertEqual(setup.header("TRANSPORT"), "RTP/AVP/TCP;unicast;interleaved=0-1")
            XCTAssertEqual(set.body, Array("hello".utf8))
        }
    }

    func testWhatIsNotAnRTSPRequestIsRefusedWithItsStatus() {
        func refused(_ text: String, _ expected: RTSPParseError, line: UInt = #line) {
            var parser = RTSPParser()
            XCTAssertThrowsError(try parser.feed(Array(text.utf8)), line: line) {
                XCTAssertEqual($0 as? RTSPParseError, expected, line: line)
                XCTAssertFalse("\($0)".contains("\n"), line: line)
            }
        }
        refused("GET / HTTP/1.1\r\nHost: x\r\n\r\n", .version("HTTP/1.1"))
        refused("OPTIONS\r\n\r\n", .requestLine("OPTIONS"))
        refused("OPTIONS * RTSP/1.0\r\nno colon here\r\n\r\n", .header("no colon here"))
        refused("OPTIONS * RTSP/1.0\r\nContent-Length: -1\r\n\r\n", .contentLength("-1"))
        refused("OPTIONS * RTSP/1.0\r\nContent-Length: 99999999999999999999\r\n\r\n", .contentLength("99999999999999999999"))
        refused("ANNOUNCE * RTSP/1.0\r\nContent-Length: 70000\r\n\r\n", .bodyTooLarge(70000))
        refused("OPTIONS * RTSP/1.0\r\n" + (0...64).map { "X-\($0): 1\r\n" }.joined() + "\r\n", .tooManyHeaders)
        refused("OPTIONS * RTSP/1.0\r\nX: " + String(repeating: "a", count: 9000), .headTooLarge)
        XCTAssertEqual(RTSPParseError.version("x").status, 505)
        XCTAssertEqual(RTSPParseError.bodyTooLarge(1).status, 413)
        XCTAssertEqual(RTSPParseError.header("x").status, 400)
    }

    /// §12.17: a CSeq that is not a non-negative integer is none.
    func testCSeqMustBeANumberThatFits() throws {
        for (value, expected) in [("7", 7), (" 12 ", 12), ("-1", nil), ("abc", nil), ("99999999999999999999", nil)] as [(String, Int?)] {
            var parser = RTSPParser()
            let messages = try parser.feed(Array("OPTIONS * RTSP/1.0\r\nCSeq: \(value)\r\n\r\n".utf8))
            guard case .request(let request) = messages.first else { return XCTFail() }
            XCTAssertEqual(request.cseq, expected, value)
        }
    }

    func testResponsesRepeatCSeqAndCountTheirBody() {
        let ok = RTSPResponse(status: 200, headers: [("Public", "OPTIONS, DESCRIBE")])
        XCTAssertEqual(String(decoding: ok.serialized(cseq: 3), as: UTF8.self), "RTSP/1.0 200 OK\r\nCSeq: 3\r\nPublic: OPTIONS, DESCRIBE\r\n\r\n")
        let described = RTSPResponse(status: 200, headers: [("Content-Type", "application/sdp")], body: Array("v=0\r\n".utf8))
        XCTAssertEqual(String(decoding: described.serialized(cseq: 2), as: UTF8.self),
                       "RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Type: application/sdp\r\nContent-Length: 5\r\n\r\nv=0\r\n")
        XCTAssertEqual(String(decoding: RTSPResponse(status: 461).serialized(cseq: nil), as: UTF8.self),
                       "RTSP/1.0 461 Unsupported Transport\r\nContent-Length: 0\r\n\r\n")
    }

    func testTransportsAreTakenAsClientsWriteThem() throws {
        XCTAssertEqual(try RTSPTransport.choose("RTP/AVP;unicast;client_port=5000-5001"), .udp(rtp: 5000, rtcp: 5001))
        XCTAssertEqual(try RTSPTransport.choose("RTP/AVP/UDP;unicast;client_port=6970"), .udp(rtp: 6970, rtcp: 6971))
        XCTAssertEqual(try RTSPTransport.choose("RTP/AVP/TCP;unicast;interleaved=2-3"), .interleaved(rtp: 2, rtcp: 3))
        XCTAssertEqual(try RTSPTransport.choose("RTP/AVP/TCP;unicast", nextChannel: 4), .interleaved(rtp: 4, rtcp: 5))
        // VLC lists several; multicast is passed over for the first unicast one.
        XCTAssertEqual(try RTSPTransport.choose("RTP/AVP;multicast, RTP/AVP;unicast;client_port=7000-7001"), .udp(rtp: 7000, rtcp: 7001))
        for bad in ["RTP/AVP;unicast", "RTP/AVP;unicast;client_port=0-1", "RTP/AVP;unicast;client_port=70000-70001",
                    "RTP/AVP/TCP;interleaved=255-256", "RTP/SAVP;unicast;client_port=5000-5001", "RTP/AVP;client_port=-5"] {
            XCTAssertThrowsError(try RTSPTransport.choose(bad), bad) { XCTAssertEqual($0 as? RTSPTransport.Refusal, .unsupported(bad)) }
        }
        XCTAssertThrowsError(try RTSPTransport.choose(nil)) { XCTAssertEqual($0 as? RTSPTransport.Refusal, .missing) }
        XCTAssertEqual(RTSPTransport.udp(rtp: 5000, rtcp: 5001).header(serverPorts: (8000, 8001), ssrc: 0xAB),
                       "RTP/AVP;unicast;client_port=5000-5001;server_port=8000-8001;ssrc=000000AB")
        XCTAssertEqual(RTSPTransport.interleaved(rtp: 0, rtcp: 1).header(ssrc: 0xDEADBEEF), "RTP/AVP/TCP;unicast;interleaved=0-1;ssrc=DEADBEEF")
    }
}
