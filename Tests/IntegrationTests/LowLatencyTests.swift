import Foundation
import XCTest
import HLS
import Layout
import TestSupport

/// onair's live stream with low-latency parts on its own web server, followed as an
/// LL-HLS player follows it (preload hints and blocking reloads), every part compared with
/// the segment it became; and the same URL played by ffmpeg and by GStreamer's hlsdemux2,
/// which read it as regular HLS.
final class LowLatencyTests: XCTestCase {
    /// The part the playlist hints, and its segment and index.
    func hint(_ playlist: String) -> (uri: String, msn: Int, part: Int)? {
        guard let uri = LowLatencyChecker.parse(playlist).hint, let (msn, part) = StreamLayout.partNumbers(uri) else { return nil }
        return (uri, msn, part)
    }

    func testPartsAreTheirSegmentsAndRegularPlayersPlayTheSameURL() throws {
        let (onair, port, _) = try serveSynthetic("ll")
        var id: String?
        for _ in 0..<120 where id == nil {
            let list = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: port, "/api/streams").body)) as? [[String: Any]]
            if let first = list?.first, (first["segments"] as? Int ?? 0) >= 1 { id = first["id"] as? String } else { usleep(250_000) }
        }
        let base = "/streams/\(try XCTUnwrap(id))"

        var playlist = try HTTPClient.request(port: port, base + "/playlist.m3u8").text
        // 0.2 s at 30 fps (6 frames), raised to five frames at 24 fps for the thermal ladder.
        XCTAssertTrue(playlist.contains("#EXT-X-PART-INF:PART-TARGET=0.20834\n"), playlist)
        XCTAssertTrue(playlist.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,"))
        // Follow the live edge for about three segments: each hinted part as it is made.
        var parts: [Int: [(index: Int, bytes: [UInt8])]] = [:]
        for _ in 0..<30 {
            let next = try XCTUnwrap(hint(playlist), playlist)
            let part = try HTTPClient.request(port: port, base + "/" + next.uri)
            XCTAssertEqual(part.status, 200, next.uri)
            parts[next.msn, default: []].append((next.part, part.body))
            let reload = try HTTPClient.request(port: port, base + "/playlist.m3u8?_HLS_msn=\(next.msn)&_HLS_part=\(next.part)")
            XCTAssertEqual(reload.status, 200)
            XCTAssertTrue(reload.text.contains("URI=\"\(next.uri)\""))
            playlist = reload.text
        }
        // Every segment whose parts were all seen from its first: the parts are it.
        let whole = parts.filter { $0.value.first?.index == 0 }.keys.sorted().dropLast()
        XCTAssertGreaterThanOrEqual(whole.count, 1)
        for msn in whole {
            let reload = try HTTPClient.request(port: port, base + "/playlist.m3u8?_HLS_msn=\(msn)")
            XCTAssertTrue(reload.text.contains(StreamLayout.segment(msn)))
            let segment = try HTTPClient.request(port: port, base + "/" + StreamLayout.segment(msn))
            XCTAssertEqual(segment.status, 200)
            XCTAssertNil(partsDiffer(parts: parts[msn]!.map(\.bytes), segment: segment.body), "segment \(msn)")
        }

        // The same URLs for players that know nothing of parts.
        let url = "http://127.0.0.1:\(port)\(base)/index.m3u8"
        let ffmpeg = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", url, "-t", "4", "-f", "null", "-"], seconds: 60)
        XCTAssertEqual(ffmpeg.status, 0, ffmpeg.stderr)
        XCTAssertEqual(ffmpeg.stderr.trimmingCharacters(in: .whitespacesAndNewlines), "")
        // hlsdemux2 through urisourcebin (it needs a streams-aware parent) and parsebin:
        // 400 buffers (audio frames, mostly) is more than the playlist holds at the start,
        // so it has to follow the live playlist to end.
        let gst = try runTool("/usr/bin/gst-launch-1.0", ["urisourcebin", "uri=\(url)", "!", "parsebin", "!", "identity", "eos-after=400",
                                                          "!", "fakesink"], seconds: 60)
        let gstSaid = String(decoding: gst.stdout, as: UTF8.self) + gst.stderr
        XCTAssertEqual(gst.status, 0, gstSaid)
        XCTAssertTrue(gstSaid.contains("Got EOS from element"), gstSaid)
        XCTAssertFalse(gstSaid.contains("ERROR"), gstSaid)
        // onair validate follows the same stream as a low-latency player and finds nothing.
        let validate = try runTool(onairBinary(), ["validate", url, "--seconds", "4"], seconds: 60)
        let said = String(decoding: validate.stdout, as: UTF8.self)
        XCTAssertEqual(validate.status, 0, said + validate.stderr)
        XCTAssertTrue(said.contains(": 0 errors, 0 warnings ("), said)
        XCTAssertFalse(said.contains(" 0 parts"), said)
        // What is not a live low-latency stream is one line and exit 2.
        for (arguments, expected) in [(["validate", url, "--seconds", "0"], "--seconds"),
                                      (["validate", "http://127.0.0.1:1/x.m3u8"], "127.0.0.1:1"),
                                      (["validate", url, "--fast"], "--fast")] {
            let refused = try runTool(onairBinary(), arguments, seconds: 60)
            XCTAssertEqual(refused.status, 2, "\(arguments)")
            XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.stderr)
            XCTAssertTrue(refused.stderr.contains(expected), refused.stderr)
        }
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0)
        let ended = try runTool(onairBinary(), ["validate", "http://127.0.0.1:\(port)\(base)/index.m3u8"], seconds: 60)
        XCTAssertEqual(ended.status, 2, "the server is gone")
    }

    /// 500 players waiting on onair itself at once (from 16 addresses: 32 connections each
    /// is the per-address limit): every one answered with the part it waited for, no
    /// frame dropped, and segments go on being stored.
    func testFiveHundredHeldRequestsCostNoFrame() throws {
        let (onair, port, _) = try serveSynthetic("ll500")
        let status = { try apiStatus(port: port) }
        var playlist = ""
        for _ in 0..<120 where hint(playlist) == nil {
            if let id = try status()["stream"] as? String, (try status()["segments_stored"] as? Int ?? 0) >= 1 {
                playlist = try HTTPClient.request(port: port, "/streams/\(id)/playlist.m3u8").text
            } else { usleep(250_000) }
        }
        let id = try XCTUnwrap(try status()["stream"] as? String)
        let next = try XCTUnwrap(hint(playlist), playlist)
        let before = try status()["segments_stored"] as? Int ?? 0
        // A segment ahead: every request is held for about two seconds.
        let asked = "_HLS_msn=\(next.msn + 1)&_HLS_part=0"
        var sockets: [RawSocket] = []
        for n in 0..<500 {
            let socket = try XCTUnwrap(RawSocket(port: port, from: "127.0.0.\(2 + n % 16)", timeoutMilliseconds: 20_000), "connection \(n)")
            XCTAssertTrue(socket.send("GET /streams/\(id)/playlist.m3u8?\(asked) HTTP/1.1\r\nHost: x\r\n\r\n"))
            sockets.append(socket)
        }
        var answered = 0
        for socket in sockets {
            let reply = String(decoding: socket.response(), as: UTF8.self)
            if reply.hasPrefix("HTTP/1.1 200") && reply.contains("part/\(String(format: "%06d", next.msn + 1)).0.m4s") { answered += 1 }
        }
        XCTAssertEqual(answered, 500)
        let after = try status()
        XCTAssertEqual(after["dropped_video_frames"] as? Int, 0)
        XCTAssertEqual(after["dropped_audio_chunks"] as? Int, 0)
        XCTAssertGreaterThan(after["segments_stored"] as? Int ?? 0, before)
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0)
    }
}
