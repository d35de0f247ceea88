import Basics
import Foundation
import XCTest
import HLS
import MP4
import TestSupport

/// onair in real time with its web server: the live stream over HTTP, played by the viewer
/// in headless Chromium and Firefox; the stdin button; SIGTERM finishing the stream cleanly.
final class LiveTests: XCTestCase {
    func testLiveStreamOverHTTPPlaysInChromium() throws {
        let (onair, port, out) = try serveSynthetic("live")
        let streams = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 2 }
        let id = try XCTUnwrap(streams.first?["id"] as? String)
        XCTAssertEqual(streams.first?["state"] as? String, "live")
        XCTAssertEqual(streams.first?["playlist"] as? String, "/streams/\(id)/index.m3u8")
        XCTAssertEqual(streams.first?["export"] as? String, "/api/export?stream=\(id)", "the stream as one MP4, listed")
        let export = try HTTPClient.request(port: port, "/api/export?stream=\(id)")
        XCTAssertEqual(export.status, 200, "a live stream exports up to its newest segment")
        XCTAssertEqual(Array(export.body[4..<8]), Array("ftyp".utf8))
        let base = "/streams/\(id)"

        // Headers a player and a cache rely on.
        let playlist = try HTTPClient.request(port: port, base + "/playlist.m3u8")
        XCTAssertEqual(playlist.header("Content-Type"), "application/vnd.apple.mpegurl")
        XCTAssertEqual(playlist.header("Cache-Control"), "no-cache")
        XCTAssertFalse(playlist.text.contains("#EXT-X-ENDLIST"))
        let segment = try HTTPClient.request(port: port, base + "/seg/000001.m4s")
        XCTAssertEqual(segment.status, 200)
        XCTAssertEqual(segment.header("Content-Type"), "video/mp4")
        XCTAssertEqual(segment.header("Cache-Control"), "public, max-age=31536000, immutable")
        let range = try HTTPClient.request(port: port, base + "/seg/000001.m4s", headers: ["Range": "bytes=0-7"])
        XCTAssertEqual(range.status, 206)
        XCTAssertEqual(range.body, Array(segment.body[0..<8]))
        XCTAssertEqual(Array(range.body[4..<8]), Array("moof".utf8))
        XCTAssertEqual(try HTTPClient.request(port: port, base + "/../../../etc/passwd").status / 100, 4)
        XCTAssertEqual(try HTTPClient.request(port: port, "/streams/%2e%2e/%2e%2e/etc/passwd").status / 100, 4)

        // Chromium plays it over WebRTC (the viewer's default on the board), as low-latency
        // HLS through MSE, part by part (?mode=ll), as regular HLS natively (?ll=0), and
        // segment by segment through MSE (what Firefox gets without parts): each way the
        // media clock advances with no player error.
        let browser = try Chromium()
        for (page, player) in [("/", "webrtc"), ("/?mode=ll", "mse-ll"), ("/?ll=0", "native"), ("/?ll=0&mse=1", "mse")] {
            let last = try watchViewer(browser, "http://127.0.0.1:\(port)\(page)", player: player)
            XCTAssertEqual(last["hls"] as? String, "maybe", "native HLS is there")
            XCTAssertEqual(last["w"] as? Int, 854, player)
            if player == "native" { XCTAssertTrue((last["src"] as? String ?? "").hasSuffix(base + "/index.m3u8")) }
        }

        // SIGTERM: the last segment is finished, ENDLIST written, exit 0.
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let directory = out + base
        let final = try String(contentsOfFile: directory + "/playlist.m3u8", encoding: .utf8)
        XCTAssertTrue(final.hasSuffix("#EXT-X-ENDLIST\n"))
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
    }

    /// Firefox (no native HLS) gets the viewer's MSE player: part by part by default, whole
    /// segments with ?ll=0; in both the media clock advances with no player error. Its
    /// WebRTC has no H.264 here (no OpenH264 plugin offline): the viewer falls back to
    /// LL-HLS and says why.
    func testTheViewerPlaysInFirefox() throws {
        let (onair, port, _) = try serveSynthetic("firefox")
        _ = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 2 }
        let browser = try Firefox()
        for (page, player) in [("/", "mse-ll"), ("/?ll=0", "mse")] {
            let last = try watchViewer(browser, "http://127.0.0.1:\(port)\(page)", player: player)
            XCTAssertEqual(last["hls"] as? String, "", "Firefox has no native HLS")
            XCTAssertEqual(last["w"] as? Int, 854, player)
            if page == "/" {
                XCTAssertTrue((last["info"] as? String ?? "").hasPrefix("WebRTC: 406 the offer has no H.264"), "\(last)")
                XCTAssertEqual(try browser.evaluate("document.getElementById('mode').textContent") as? String, "LL-HLS")
            }
        }
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
    }

    /// HLS_RULES §2 over real reloads: the playlist only grows, keeps its TARGETDURATION and
    /// media sequence, freezes after ENDLIST, and every segment it lists can be fetched
    /// whole the moment it is listed (L7) — the atomic write order seen from outside.
    func testLivePlaylistOnlyGrowsAndEverythingListedIsThere() throws {
        let (onair, port, out) = try serveSynthetic("reload", ["hls.segment_seconds=1"])
        let streams = try waitForStreams(port) { !$0.isEmpty }
        let base = "/streams/\(try XCTUnwrap(streams.first?["id"] as? String))"
        var previous: String?
        var fetched = Set<String>()
        var reloads = 0
        while true {
            let response = try HTTPClient.request(port: port, base + "/playlist.m3u8")
            if response.status == 404 { usleep(100_000); continue }  // not written yet
            XCTAssertEqual(response.status, 200)
            let text = response.text
            reloads += 1
            if let previous { XCTAssertEqual(ReloadChecker.check(previous: previous, next: text), []) }
            let playlist = ParsedPlaylist(text: text)
            for segment in playlist.segments where !fetched.contains(segment.uri) {
                let media = try HTTPClient.request(port: port, base + "/" + segment.uri)
                XCTAssertEqual(media.status, 200, segment.uri)
                XCTAssertEqual(try ParsedSegment(bytes: media.body).topLevel, ["moof", "mdat"], segment.uri)
                fetched.insert(segment.uri)
            }
            XCTAssertEqual(try HTTPClient.request(port: port, base + "/init.mp4").status, 200)
            previous = text
            if playlist.segments.count >= 6 { break }
            usleep(250_000)
        }
        // Stopping finishes the stream; the server goes with the process, so the final
        // playlist is read from disk.
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let final = try String(contentsOfFile: out + base + "/playlist.m3u8", encoding: .utf8)
        XCTAssertTrue(ParsedPlaylist(text: final).isEnded)
        XCTAssertEqual(ReloadChecker.check(previous: try XCTUnwrap(previous), next: final), [])
        XCTAssertGreaterThanOrEqual(fetched.count, 6)
        XCTAssertGreaterThan(reloads, 6, "polled while it grew")
    }

    /// A camera interruption leaves a hole in what the viewer's MSE player holds (the
    /// timeline jumps at EXT-X-DISCONTINUITY): it plays on past it instead of waiting at
    /// its edge. The hole is made for real: segments 1 and 3 of a stream, appended with
    /// the viewer's own functions to a MediaSource on its video element.
    func testTheViewerPlaysOnPastAHole() throws {
        let (onair, port, _) = try serveSynthetic("hole", ["audio.enabled=off"])
        let streams = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 3 }
        let base = "/streams/\(try XCTUnwrap(streams.first?["id"] as? String))/"
        let codecs = try XCTUnwrap(try HTTPClient.request(port: port, base + "index.m3u8").text
            .firstMatch(of: /CODECS="([^"]+)"/).map { String($0.1) })
        let browser = try Chromium()
        try browser.open("http://127.0.0.1:\(port)/?ll=0&mse=1")
        for _ in 0..<100 where try browser.evaluate("typeof append") as? String != "function" { usleep(100_000) }
        let setUp = """
            (async () => {
              generation += 1;  // the viewer's own player stops
              const source = new MediaSource();
              video.src = URL.createObjectURL(source);
              await new Promise(ok => source.addEventListener("sourceopen", ok, { once: true }));
              const buffer = source.addSourceBuffer('video/mp4; codecs="\(codecs)"');
              for (const name of ["init.mp4", "seg/000001.m4s", "seg/000003.m4s"]) await append(buffer, await bytes("\(base)" + name));
              video.currentTime = buffer.buffered.start(0);
              video.play();
              return JSON.stringify([0, 1].map(i => [buffer.buffered.start(i), buffer.buffered.end(i)]));
            })()
            """
        _ = try browser.call("Runtime.evaluate", ["expression": setUp, "awaitPromise": true, "returnByValue": true])
        let ranges = try XCTUnwrap(try browser.evaluate("JSON.stringify([0, 1].map(i => [video.buffered.start(i), video.buffered.end(i)]))") as? String)
        let bounds = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(ranges.utf8)) as? [[Double]])
        XCTAssertGreaterThan(bounds[1][0] - bounds[0][1], 1.5, "a hole of about a segment: \(bounds)")
        // The play head, in media seconds, until it is past the hole (or 20 s have gone).
        var position = 0.0
        for _ in 0..<80 where position <= bounds[1][0] + 0.5 {
            usleep(250_000)
            position = try browser.evaluate("video.currentTime") as? Double ?? 0
        }
        XCTAssertGreaterThan(position, bounds[1][0] + 0.5, "played on past the hole \(bounds)")
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0)
    }

    func testEnterTogglesRecordingIntoNewStreams() throws {
        let (onair, port, out) = try serveSynthetic("toggle", ["hls.segment_seconds=1"], stdin: true)
        let first = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 1 }
        let recording = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: port, "/api/status").body)) as? [String: Any]
        XCTAssertEqual(recording?["state"] as? String, "recording")
        XCTAssertEqual(recording?["stream"] as? String, first.first?["id"] as? String)
        XCTAssertEqual(recording?["dropped_video_frames"] as? Int, 0)
        onair.send("")  // stop
        let ended = try waitForStreams(port) { $0.first?["state"] as? String == "ended" }
        XCTAssertEqual(ended.count, 1)
        let armed = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: port, "/api/status").body)) as? [String: Any]
        XCTAssertEqual(armed?["state"] as? String, "armed")
        XCTAssertNil(armed?["stream"] as? String)
        onair.send("")  // start a new stream
        let two = try waitForStreams(port) { $0.count == 2 && ($0.first?["segments"] as? Int ?? 0) >= 1 }
        XCTAssertEqual(two.last?["state"] as? String, "ended")
        XCTAssertNotEqual(two.first?["id"] as? String, two.last?["id"] as? String)
        onair.signal(SIGINT)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        for stream in try FileManager.default.contentsOfDirectory(atPath: out + "/streams") {
            let directory = out + "/streams/" + stream
            XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [], stream)
        }
    }
}
