import Basics
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `[access]` on a real onair, through real clients: with users made by `onair passwd`,
/// the viewer page, HLS, the snapshot, RTSP (ffmpeg, GStreamer) and the browser's
/// player all ask for one and play with one; failed logins are limited per address.
final class ViewerAccessTests: XCTestCase {
    /// curl's status for `path` (and the headers it got), from `source` as it is told.
    func curl(_ port: UInt16, _ path: String, _ options: [String] = [], source: String = "127.0.0.1") throws -> (status: Int, headers: String) {
        let result = try runTool("/usr/bin/curl", ["-s", "-o", "/dev/null", "-D", "-", "-w", "%{http_code}", "--interface", source]
                                 + options + ["http://127.0.0.1:\(port)\(path)"], seconds: 30)
        let text = String(decoding: result.stdout, as: UTF8.self)
        return (Int(text.suffix(3)) ?? 0, text)
    }

    func testEveryWayOfWatchingAsksForAUserAndPlaysWithOne() throws {
        let scratch = try temporaryDirectory("access-config")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (config, secret) = try accessConfig(scratch)
        let (onair, port, _) = try serveSynthetic("access", ["server.token=operator-token-0123456"], arguments: ["--config", config])
        defer { onair.signal(SIGTERM); onair.wait() }
        let rtspLine = try XCTUnwrap(onair.waitForLog("event=rtsp.listening"), onair.stderr)
        let rtsp = try XCTUnwrap(logValue(rtspLine, "port"))
        XCTAssertNotNil(onair.waitForLog("event=access.users viewers=1 devices=1"), onair.stderr)
        XCTAssertNotNil(onair.waitForLog("event=segment.stored"), onair.stderr)
        let alice = ["--digest", "-u", "alice:correct horse"]

        // Nothing without a user; the challenge offers SHA-256, then MD5.
        let refused = try HTTPClient.request(port: port, "/")
        XCTAssertEqual(refused.status, 401)
        XCTAssertTrue(refused.header("WWW-Authenticate")?.hasPrefix("Digest realm=\"onair-") ?? false, "\(refused.headers)")
        for path in ["/", "/api/streams", "/api/status", "/metrics", "/api/snapshot.jpg"] {
            XCTAssertEqual(try curl(port, path).status, 401, path)
        }
        let challenge = try curl(port, "/").headers
        XCTAssertTrue(challenge.contains("algorithm=SHA-256") && challenge.contains("algorithm=MD5"), challenge)

        // With one: Digest (curl, as browsers), Basic (scripts), the device account, the operator's token.
        let streams = try XCTUnwrap(try runTool("/usr/bin/curl", ["-s", "--digest", "-u", "alice:correct horse", "http://127.0.0.1:\(port)/api/streams"]).stdout)
        let id = try XCTUnwrap(((try JSONSerialization.jsonObject(with: streams) as? [[String: Any]])?.first?["id"]) as? String, String(decoding: streams, as: UTF8.self))
        for path in ["/", "/api/status", "/streams/\(id)/index.m3u8", "/streams/\(id)/init.mp4"] {
            XCTAssertEqual(try curl(port, path, alice).status, 200, path)
        }
        var snapshot = 503
        for _ in 0..<50 where snapshot == 503 { snapshot = try curl(port, "/api/snapshot.jpg", alice).status; usleep(100_000) }
        XCTAssertEqual(snapshot, 200)
        XCTAssertEqual(try curl(port, "/metrics", ["-u", "alice:correct horse"]).status, 200, "Basic")
        let status = try runTool("/usr/bin/curl", ["-s", "--digest", "-u", "alice:correct horse", "http://127.0.0.1:\(port)/api/status"]).stdout
        let access = (try JSONSerialization.jsonObject(with: status) as? [String: Any])?["access"] as? [String: Any]
        XCTAssertEqual(access?["open"] as? Bool, false)
        XCTAssertEqual(access?["viewers"] as? Int, 1)
        XCTAssertEqual(access?["devices"] as? Int, 1)
        XCTAssertEqual(try curl(port, "/api/status", ["--digest", "-u", "nvr:\(secret)"]).status, 200, "a device account")
        XCTAssertEqual(try curl(port, "/api/status", ["-H", "Authorization: Bearer operator-token-0123456"]).status, 200, "the operator's token")
        XCTAssertEqual(try curl(port, "/api/status", ["--digest", "-u", "alice:wrong horse"]).status, 401)
        // ONVIF's clock is asked before any credentials (ONVIF Core §5.9.4.3).
        let clock = try HTTPClient.request(port: port, "/onvif/device_service", method: "POST", headers: ["Content-Type": "application/soap+xml"],
                                           body: Array(#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><GetSystemDateAndTime xmlns="http://www.onvif.org/ver10/device/wsdl"/></s:Body></s:Envelope>"#.utf8))
        XCTAssertEqual(clock.status, 200, clock.text)

        // HLS in ffmpeg (Digest over HTTP), RTSP in ffmpeg and GStreamer (Digest, RFC 2617).
        let hls = try runTool("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0",
                                                   "http://alice:correct%20horse@127.0.0.1:\(port)/streams/\(id)/index.m3u8"], seconds: 60)
        XCTAssertEqual(Set(String(decoding: hls.stdout, as: UTF8.self).split(separator: "\n")), ["aac", "h264"], hls.stderr)
        for transport in ["tcp", "udp"] {
            let probed = try runTool("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", transport, "-show_entries", "stream=codec_name", "-of", "csv=p=0",
                                                          "rtsp://nvr:\(secret)@127.0.0.1:\(rtsp)/live"], seconds: 60)
            XCTAssertEqual(String(decoding: probed.stdout, as: UTF8.self).split(separator: "\n").sorted(), ["aac", "h264"], transport + probed.stderr)
        }
        let anonymous = try runTool("/usr/bin/ffprobe", ["-v", "error", "rtsp://127.0.0.1:\(rtsp)/live"], seconds: 60)
        XCTAssertNotEqual(anonymous.status, 0)
        XCTAssertTrue(anonymous.stderr.contains("401"), anonymous.stderr)
        let wrong = try runTool("/usr/bin/ffprobe", ["-v", "error", "rtsp://alice:nope@127.0.0.1:\(rtsp)/live"], seconds: 60)
        XCTAssertTrue(wrong.stderr.contains("401"), wrong.stderr)
        let gstreamer = try runTool("/usr/bin/gst-launch-1.0", [
            "rtspsrc", "location=rtsp://127.0.0.1:\(rtsp)/live", "user-id=alice", "user-pw=correct horse", "protocols=tcp", "name=s",
            "s.", "!", "rtph264depay", "!", "avdec_h264", "!", "fakesink", "num-buffers=30",
            "s.", "!", "rtpmp4gdepay", "!", "avdec_aac", "!", "fakesink", "num-buffers=40",
        ], seconds: 60)
        XCTAssertTrue(String(decoding: gstreamer.stdout, as: UTF8.self).contains("Got EOS from element"),
                      String(decoding: gstreamer.stdout, as: UTF8.self) + gstreamer.stderr)

        // The browser's player, WebRTC by default, plays with a user: the page, the
        // catalog, the WHEP offer, the playlists. (Its Authorization is set through
        // DevTools, as a browser sends it once the owner has logged in: a name and
        // password in the page's URL would make every fetch() of the page a TypeError.)
        let browser = try Chromium()
        browser.extraHeaders = ["Authorization": "Basic " + Data("alice:correct horse".utf8).base64EncodedString()]
        _ = try watchViewer(browser, "http://127.0.0.1:\(port)/", player: "webrtc")
        _ = try watchViewer(browser, "http://127.0.0.1:\(port)/?mode=hls", player: "native")
        let stranger = try Chromium()
        try stranger.open("http://127.0.0.1:\(port)/")
        // Once the navigation has ended (not on the blank page before it): headless
        // Chromium, which cannot ask anyone for a password, ends on its error page; had
        // the board given the page, it would be the board's, with its player.
        let answered = try stranger.settled("!location.href.startsWith('about:') && document.readyState === 'complete' ? "
                                            + "JSON.stringify({at: location.href, player: document.getElementById('video') !== null}) : null")
        XCTAssertTrue(answered.contains("\"player\":false") && answered.contains("chrome-error:"), "without a user the viewer page is not given: \(answered)")

        // Ten wrong passwords from one address, then it waits (429, not even the right
        // password is checked); another address is not held up.
        for attempt in 0..<10 {
            XCTAssertEqual(try curl(port, "/api/status", ["--digest", "-u", "alice:guess\(attempt)"], source: "127.0.0.3").status, 401)
        }
        let throttled = try curl(port, "/api/status", alice, source: "127.0.0.3")
        XCTAssertEqual(throttled.status, 429)
        XCTAssertTrue(throttled.headers.lowercased().contains("retry-after: "), throttled.headers)
        XCTAssertEqual(try curl(port, "/api/status", alice, source: "127.0.0.4").status, 200)
        XCTAssertNotNil(onair.waitForLog("event=access.refused channel=http client=127.0.0.3"), onair.stderr)
    }

    /// With no users, the console says once that anyone on the network may watch.
    func testAnOpenBoardSaysSo() throws {
        let (onair, port, _) = try serveSynthetic("access-open")
        defer { onair.signal(SIGTERM); onair.wait() }
        XCTAssertNotNil(onair.waitForLog("event=access.open"), onair.stderr)
        let status = try HTTPClient.request(port: port, "/api/status")
        XCTAssertEqual(status.status, 200)
        let access = (try JSONSerialization.jsonObject(with: Data(status.body)) as? [String: Any])?["access"] as? [String: Any]
        XCTAssertEqual(access?["open"] as? Bool, true, status.text)
    }
}

extension XCTestCase {
    /// A config with viewer alice and device account nvr, made by `onair passwd`; the
    /// device's secret as it was shown.
    func accessConfig(_ directory: String) throws -> (path: String, secret: String) {
        let path = directory + "/onair.conf"
        let viewer = try runTool("/bin/sh", ["-c", "printf 'correct horse\\n' | '\(onairBinary())' passwd alice --config '\(path)'"])
        XCTAssertEqual(viewer.status, 0, viewer.stderr)
        let device = try runTool(onairBinary(), ["passwd", "--device", "nvr", "--config", path])
        XCTAssertEqual(device.status, 0, device.stderr)
        let lines = String(decoding: device.stdout, as: UTF8.self).split(separator: "\n")
        let shown = try XCTUnwrap(lines.firstIndex { $0.contains("shown only now") }.map { String(lines[$0 + 1]) })
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertFalse(text.contains("correct horse"), "a viewer's password is not kept")
        return (path, shown)
    }
}
