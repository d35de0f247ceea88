import Foundation
import TestSupport
import XCTest

/// A real onair's live stream in a real browser over WHEP: Chromium offers, onair answers,
/// ICE-lite, DTLS and SRTP come up, and the pictures decode as H.264.
final class WebRTCPlaybackTests: XCTestCase {
    /// A page that plays `/whep` of the server given to `play(base)`; what happens is in
    /// window variables the test reads.
    static let page = """
        <!doctype html><body><script>
        window.state = null;
        window.play = async function(base) {
          const pc = new RTCPeerConnection();
          pc.addTransceiver('video', {direction: 'recvonly'});
          pc.addTransceiver('audio', {direction: 'recvonly'});
          const video = document.createElement('video');
          video.muted = true; video.autoplay = true; video.playsInline = true;
          document.body.appendChild(video);
          pc.ontrack = e => { if (e.track.kind == 'video') video.srcObject = e.streams[0] || new MediaStream([e.track]); };
          await pc.setLocalDescription(await pc.createOffer());
          const r = await fetch(base + '/whep', {method: 'POST', headers: {'Content-Type': 'application/sdp'}, body: pc.localDescription.sdp});
          const text = await r.text();
          if (r.status != 201) throw new Error('POST /whep: ' + r.status + ' ' + text);
          window.resource = base + r.headers.get('Location');
          await pc.setRemoteDescription({type: 'answer', sdp: text});
          window.pc = pc; window.video = video;
          return 'offered';
        };
        window.stats = async function() {
          const report = await window.pc.getStats();
          let out = {state: window.pc.connectionState};
          report.forEach(s => {
            if (s.type == 'inbound-rtp' && s.kind == 'video') {
              out.framesDecoded = s.framesDecoded || 0; out.nackCount = s.nackCount || 0; out.packetsLost = s.packetsLost || 0;
              out.codec = (report.get(s.codecId) || {}).mimeType;
              out.freezeCount = s.freezeCount || 0; out.width = s.frameWidth; out.height = s.frameHeight;
            }
            if (s.type == 'inbound-rtp' && s.kind == 'audio') {
              out.audioCodec = (report.get(s.codecId) || {}).mimeType;
              out.samples = s.totalSamplesReceived || 0; out.concealed = s.concealedSamples || 0;
            }
          });
          out.videoTime = window.video.currentTime;
          return JSON.stringify(out);
        };
        window.run = function(f, ...args) {
          window.state = null;
          f(...args).then(v => { window.state = v; }, e => { window.state = 'error ' + e; });
          return 'started';
        };
        </script></body>
        """

    func testChromiumPlaysTheLiveStreamOverWHEP() throws { try play(in: try Chromium()) }

    /// Debian's Firefox ESR receives H.264 over WebRTC only through Cisco's OpenH264
    /// plugin, which it downloads at its first run; offline it offers VP8, VP9 and AV1,
    /// and onair, which sends the one stream it encodes, refuses in one line (406) — the
    /// viewer page then plays LL-HLS.
    func testFirefoxWithoutOpenH264IsRefusedInOneLine() throws {
        let browser = try Firefox()
        let port = try startLive()
        try browser.open("file://" + (try pageFile()))
        XCTAssertEqual(try browser.evaluate("window.run(window.play, 'http://127.0.0.1:\(port)')") as? String, "started")
        XCTAssertThrowsError(try waitFor(browser, "window.state")) { error in
            XCTAssertTrue("\(error)".contains("POST /whep: 406 the offer has no H.264"), "\(error)")
        }
    }

    /// A live synthetic stream with WebRTC on any port; its web server's port.
    func startLive() throws -> UInt16 {
        let (onair, port, _) = try serveSynthetic("webrtc", ["webrtc.port=0"])
        addTeardownBlock { _ = onair }
        var live = false
        for _ in 0..<120 where !live {
            let list = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: port, "/api/streams").body)) as? [[String: Any]]
            if let first = list?.first, (first["segments"] as? Int ?? 0) >= 1 { live = true } else { usleep(250_000) }
        }
        XCTAssertTrue(live)
        return port
    }

    func pageFile() throws -> String {
        let page = try temporaryDirectory("webrtc-page") + "/play.html"
        try Self.page.write(toFile: page, atomically: true, encoding: .utf8)
        return page
    }

    func play(in browser: Browser) throws {
        let port = try startLive()
        let base = "http://127.0.0.1:\(port)"
        try browser.open("file://" + (try pageFile()))
        XCTAssertEqual(try browser.evaluate("window.run(window.play, '\(base)')") as? String, "started")
        XCTAssertEqual(try waitFor(browser, "window.state"), "offered")
        var last: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            _ = try browser.evaluate("window.run(window.stats)")
            last = try JSONSerialization.jsonObject(with: Data(try waitFor(browser, "window.state").utf8)) as? [String: Any] ?? [:]
            if (last["framesDecoded"] as? Int ?? 0) >= 60 { break }
            usleep(250_000)
        }
        XCTAssertGreaterThanOrEqual(last["framesDecoded"] as? Int ?? 0, 60, "\(last)")
        XCTAssertEqual(last["codec"] as? String, "video/H264")
        XCTAssertEqual(last["state"] as? String, "connected")
        // The sound, as Opus from the same microphone: at 48 kHz, two seconds' worth and
        // more (the picture's 60 frames), little of it made up by the browser.
        XCTAssertEqual(last["audioCodec"] as? String, "audio/opus", "\(last)")
        XCTAssertGreaterThan(last["samples"] as? Int ?? 0, 48_000, "\(last)")
        XCTAssertLessThan(Double(last["concealed"] as? Int ?? 0), 0.2 * Double(last["samples"] as? Int ?? 1), "\(last)")

        // onair lists the session: connected, its media address, what it sent.
        let sessions = try webrtcSessions(port)
        XCTAssertEqual(sessions.count, 1, "\(sessions)")
        let session = try XCTUnwrap(sessions.first)
        XCTAssertEqual(session["connected"] as? Bool, true)
        XCTAssertEqual(session["client"] as? String, "127.0.0.1")
        XCTAssertGreaterThan(session["packets"] as? Int ?? 0, 60)
        XCTAssertGreaterThan(session["audio_packets"] as? Int ?? 0, 50)
        XCTAssertNotNil(session["first_picture_ms"] as? Int)

        // The resource: a CORS preflight, no trickle, and DELETE ends it (once).
        let resource = try XCTUnwrap(browser.evaluate("window.resource") as? String).replacingOccurrences(of: base, with: "")
        XCTAssertTrue(resource.hasPrefix("/whep/session/"), resource)
        let preflight = try HTTPClient.request(port: port, resource, method: "OPTIONS")
        XCTAssertEqual(preflight.status, 204)
        XCTAssertEqual(preflight.headers["access-control-allow-origin"], "*")
        XCTAssertEqual(try HTTPClient.request(port: port, resource, method: "PATCH", headers: ["Content-Type": "application/trickle-ice-sdpfrag"],
                                              body: Array("a=end-of-candidates\r\n".utf8)).status, 405)
        XCTAssertEqual(try HTTPClient.request(port: port, resource, method: "DELETE").status, 200)
        var remaining = 1
        for _ in 0..<50 where remaining > 0 {
            remaining = try webrtcSessions(port).count
            if remaining > 0 { usleep(100_000) }
        }
        XCTAssertEqual(remaining, 0, "DELETE ended the session")
        XCTAssertEqual(try HTTPClient.request(port: port, resource, method: "DELETE").status, 404)
    }

    func webrtcSessions(_ port: UInt16) throws -> [[String: Any]] {
        let status = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: port, "/api/status").body)) as? [String: Any]
        return (status?["webrtc"] as? [String: Any])?["sessions"] as? [[String: Any]] ?? []
    }

    /// A value the page sets when its promise settles (at most 10 s).
    func waitFor(_ browser: Browser, _ expression: String) throws -> String {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let value = try browser.evaluate(expression) as? String {
                if value.hasPrefix("error ") { throw Chromium.Failure(description: value) }
                return value
            }
            usleep(20_000)
        }
        throw Chromium.Failure(description: "\(expression) was never set")
    }
}
