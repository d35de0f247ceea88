import Foundation
import XCTest
import HLS
import Layout
import TestSupport

/// onair publishing to a real HTTP origin (Debian's nginx with WebDAV PUT).
final class PublishTests: XCTestCase {
    func testPublishesEveryStreamToAnHTTPOrigin() throws {
        let origin = try NginxOrigin()
        defer { origin.stop() }
        let out = try temporaryDirectory("publish")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "6", "--listen", "off", "--out", out,
                                              "--set", "video.quality=low", "--set", "publish.url=http://127.0.0.1:\(origin.port)/live/",
                                              "--set", "publish.header=X-Onair-Token: t0k3n"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        for event in ["publish.destination", "upload.ok", "playlist.published", "stream.published", "publish.drained"] {
            XCTAssertTrue(onair.stderr.contains("event=\(event)"), event)
        }
        XCTAssertFalse(onair.stderr.contains("t0k3n"), "headers (tokens) stay out of the log")
        try assertOriginMatches(out, origin, prefix: "live/cam1/")
        // The board's folder is a complete viewing site: the viewer reads streams.json beside it.
        let page = try HTTPClient.request(port: origin.port, "/live/cam1/index.html")
        XCTAssertTrue(page.text.contains("fetch(\"streams.json\""), "the page reads the list beside it")
        let list = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: origin.port, "/live/cam1/streams.json").body)) as? [[String: Any]]
        XCTAssertEqual(list?.count, 1)
        XCTAssertEqual(list?.first?["state"] as? String, "ended")
        XCTAssertEqual((list?.first?["playlist"] as? String).map { $0.hasSuffix("/index.m3u8") && !$0.hasPrefix("/") }, true)
    }

    /// A ladder's renditions (two rungs, the sound, each rung's I-frames) go up under the
    /// same rules, each playlist on its own: the origin ends with every file, byte for
    /// byte, and the stream there passes the rules (rung alignment and the audio group too).
    func testALadderPublishesEveryRendition() throws {
        let origin = try NginxOrigin()
        defer { origin.stop() }
        let out = try temporaryDirectory("publish-ladder")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "6", "--listen", "off", "--out", out,
                                              "--set", "video.ladder=auto", "--set", "record.enabled=off",
                                              "--set", "publish.url=http://127.0.0.1:\(origin.port)/live/"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(onair.stderr.contains("event=stream.published"), onair.stderr)
        try assertOriginMatches(out, origin, prefix: "live/cam1/")
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/streams").first)
        for name in ["v0/playlist.m3u8", "v0/iframes.m3u8", "v1/playlist.m3u8", "v1/iframes.m3u8", "audio/playlist.m3u8"] {
            let text = try String(contentsOfFile: "\(origin.root)/live/cam1/\(id)/\(name)", encoding: .utf8)
            XCTAssertTrue(text.hasSuffix("#EXT-X-ENDLIST\n"), name)
        }
        let journal = try String(contentsOfFile: "\(out)/streams/\(id)/.published", encoding: .utf8)
        XCTAssertTrue(journal.contains("segments=3,3,3\n") && journal.contains("listed=3,3,3\n") && journal.contains("endlist=1"), journal)
    }

    /// A board whose storage.min_free deletes its published streams still lists them at
    /// the destination, where they still play; the owner takes one off the list with
    /// `onair forget` (between runs) or `POST /api/forget` (while running).
    func testEvictedStreamsStayListedUntilForgotten() throws {
        let origin = try NginxOrigin()
        defer { origin.stop() }
        let out = try temporaryDirectory("evict")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let board = ["--out", out, "--set", "device.name=cam1", "--set", "publish.url=http://127.0.0.1:\(origin.port)/live/"]
        func stream(_ extra: [String] = []) throws -> String {
            let before = Set((try? FileManager.default.contentsOfDirectory(atPath: out + "/streams")) ?? [])
            let onair = try Child(onairBinary(), ["run", "--pace", "fast", "--duration", "2", "--listen", "off", "--set", "video.quality=low"]
                                  + board + extra)
            XCTAssertEqual(onair.wait().status, 0, onair.stderr)
            XCTAssertTrue(onair.stderr.contains("event=publish.drained"), onair.stderr)
            return try XCTUnwrap(Set(try FileManager.default.contentsOfDirectory(atPath: out + "/streams")).subtracting(before).first)
        }
        func listed() throws -> [String] {
            let list = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: origin.port, "/live/cam1/streams.json").body)) as? [[String: Any]]
            return try XCTUnwrap(list).compactMap { $0["id"] as? String }
        }
        let first = try stream()
        // More free space asked for than the disk has: every published stream goes at start.
        let second = try stream(["--set", "storage.min_free=1000T"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: out + "/streams/" + first), "deleted from the board")
        XCTAssertEqual(try listed(), [second, first], "still listed")
        let decode = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", "http://127.0.0.1:\(origin.port)/live/cam1/\(first)/index.m3u8", "-f", "null", "-"])
        XCTAssertEqual(decode.status, 0, decode.stderr)

        // The owner deleted the first at the destination.
        let forget = try runTool(onairBinary(), ["forget", first] + board)
        XCTAssertEqual(forget.status, 0, forget.stderr)
        let said = String(decoding: forget.stdout, as: UTF8.self)
        XCTAssertTrue(said.hasPrefix("forgot \(first): cam1/streams.json at http://127.0.0.1:\(origin.port)/live/"), said)
        let unknown = try runTool(onairBinary(), ["forget", "20000101T000000Z-cam1"] + board)
        XCTAssertEqual(unknown.status, 2)
        XCTAssertEqual(unknown.stderr.filter { $0 == "\n" }.count, 1, unknown.stderr)
        XCTAssertTrue(unknown.stderr.hasPrefix("onair: forget: 20000101T000000Z-cam1 is not a stream this board published"), unknown.stderr)

        // A running board: its next list leaves the first out; the API forgets the second.
        let token = "0123456789abcdef0123"
        let onair = try Child(onairBinary(), ["run", "--listen", "127.0.0.1:0", "--set", "video.quality=low", "--set", "server.token=\(token)",
                                              "--set", "hls.segment_seconds=1"] + board)
        let port = try onair.listeningPort()
        func wait(for expected: ([String]) -> Bool) throws -> [String] {
            var seen: [String] = []
            for _ in 0..<240 {
                seen = (try? listed()) ?? []
                if expected(seen) { break }
                usleep(250_000)
            }
            return seen
        }
        let running = try wait { $0.count == 2 && $0[1] == second }
        XCTAssertEqual(running.count, 2, "the live stream and the second; the first stays forgotten: \(running)")
        let auth = ["Authorization": "Bearer \(token)"]
        let refused = try HTTPClient.request(port: port, "/api/forget?stream=20000101T000000Z-cam1", method: "POST", headers: auth)
        XCTAssertEqual(refused.status, 404, refused.text)
        XCTAssertEqual(try HTTPClient.request(port: port, "/api/forget", method: "POST", headers: auth).status, 400)
        XCTAssertEqual(try HTTPClient.request(port: port, "/api/forget?stream=\(second)", method: "POST").status, 401, "control needs the token")
        let forgotten = try HTTPClient.request(port: port, "/api/forget?stream=\(second)", method: "POST", headers: auth)
        XCTAssertEqual(forgotten.status, 200, forgotten.text)
        XCTAssertEqual(try wait { $0 == [running[0]] }, [running[0]], "only the live stream is left")
        // Issue 29: forgetting the stream being recorded trapped onair at its next segment.
        let live = running[0]
        let busy = try HTTPClient.request(port: port, "/api/forget?stream=\(live)", method: "POST", headers: auth)
        XCTAssertEqual(busy.status, 409, busy.text)
        XCTAssertEqual(busy.text, "\(live) is being recorded now: stop it first (POST /api/record/stop), then forget it\n")
        let beside = try runTool(onairBinary(), ["forget", live] + board)
        XCTAssertEqual(beside.status, 2, beside.stderr)
        XCTAssertEqual(beside.stderr, "onair: forget: \(live) is still being recorded (its playlist has no EXT-X-ENDLIST): stop it first\n")
        XCTAssertEqual(try HTTPClient.request(port: port, "/api/streams").status, 200, "still running")
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(onair.stderr.contains("event=stream.forgotten id=\(second) source=api"), onair.stderr)
    }

    /// The origin is down while the stream is recorded and comes up only while onair is
    /// draining at exit: nothing is lost, nothing is listed early, the stream is closed.
    func testAnOriginThatComesBackGetsTheWholeStream() throws {
        let port = try NginxOrigin.freePort()
        let out = try temporaryDirectory("outage")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "4", "--listen", "off", "--out", out,
                                              "--set", "video.quality=low", "--set", "publish.url=http://127.0.0.1:\(port)/",
                                              "--set", "publish.max_backoff=2", "--set", "publish.drain_seconds=60"])
        XCTAssertNotNil(onair.waitForLog("event=upload.retry"), onair.stderr)
        XCTAssertNotNil(onair.waitForLog("event=stream.ended"), onair.stderr)
        let origin = try NginxOrigin(port: port)
        defer { origin.stop() }
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(onair.stderr.contains("event=publish.drained"), onair.stderr)
        try assertOriginMatches(out, origin, prefix: "cam1/")
    }

    /// kill -9 mid-stream with the origin unreachable; the origin comes back; onair starts
    /// again, not recording: it closes the killed stream with what was completely stored
    /// and publishes it to the end.
    func testAStreamKilledMidwayIsPublishedCompletelyOnTheNextStart() throws {
        let port = try NginxOrigin.freePort()
        let out = try temporaryDirectory("crash")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let publish = ["--set", "publish.url=http://127.0.0.1:\(port)/", "--set", "publish.max_backoff=1"]
        let first = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--out", out, "--listen", "off", "--set", "video.quality=low",
                                              "--set", "hls.segment_seconds=1"] + publish)
        XCTAssertNotNil(first.waitForLog("seq=3 "), first.stderr)
        first.signal(SIGKILL)
        _ = first.wait()
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/streams").first)
        XCTAssertFalse(try String(contentsOfFile: "\(out)/streams/\(id)/playlist.m3u8", encoding: .utf8).contains("ENDLIST"))

        let origin = try NginxOrigin(port: port)
        defer { origin.stop() }
        let second = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--out", out, "--listen", "off", "--start", "button"] + publish)
        XCTAssertNotNil(second.waitForLog("event=stream.published"), second.stderr)
        XCTAssertTrue(second.stderr.contains("event=stream.recovered id=\(id)"), second.stderr)
        second.signal(SIGTERM)
        XCTAssertEqual(second.wait().status, 0, second.stderr)
        try assertOriginMatches(out, origin, prefix: "cam1/")
    }

    /// S3 PutObject signed by libcurl's SigV4, against a server that checks signatures:
    /// every object arrives byte for byte with its Content-Type and Cache-Control as
    /// metadata; credentials come from the AWS_* variables and never reach the log.
    func testPublishesToS3WithSignedRequests() throws {
        let s3 = try MotoS3()
        defer { s3.stop() }
        let out = try temporaryDirectory("s3")
        defer { try? FileManager.default.removeItem(atPath: out) }
        setenv("AWS_ACCESS_KEY_ID", s3.accessKey, 1)
        setenv("AWS_SECRET_ACCESS_KEY", s3.secretKey, 1)
        defer { unsetenv("AWS_ACCESS_KEY_ID"); unsetenv("AWS_SECRET_ACCESS_KEY") }
        let onair = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "4", "--listen", "off", "--out", out,
                                              "--set", "video.quality=low", "--set", "publish.url=s3://\(s3.bucket)/live/",
                                              "--set", "publish.s3.endpoint=\(s3.endpoint)"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(onair.stderr.contains("event=stream.published"), onair.stderr)
        XCTAssertFalse(onair.stderr.contains(s3.secretKey), "the secret stays out of the log")
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/streams").first)
        let objects = try s3.objects(prefix: "live/cam1/")
        let local = out + "/streams/" + id
        let names = try FileManager.default.subpathsOfDirectory(atPath: local).filter { $0.contains(".") && !$0.hasPrefix(".") }
        // The poster goes a second after the stream began if it is still live then: on a
        // loaded machine this 4 s stream (paced fast) may be.
        let poster = "live/cam1/poster.jpg"
        XCTAssertEqual(Set(objects.keys).subtracting([poster]), Set(names.map { "live/cam1/\(id)/\($0)" } + ["live/cam1/index.html", "live/cam1/streams.json"]))
        if let jpeg = objects[poster] { XCTAssertEqual(jpeg.contentType, "image/jpeg") }
        XCTAssertEqual(objects["live/cam1/index.html"]?.contentType, "text/html; charset=utf-8")
        XCTAssertEqual(objects["live/cam1/streams.json"]?.contentType, "application/json")
        for name in names {
            let object = try XCTUnwrap(objects["live/cam1/\(id)/\(name)"], name)
            XCTAssertEqual(object.body, FileManager.default.contents(atPath: local + "/" + name).map { Array($0) }, name)
            XCTAssertEqual(object.contentType, name.hasSuffix(".m3u8") ? "application/vnd.apple.mpegurl" : "video/mp4", name)
            XCTAssertEqual(object.cacheControl, name.hasSuffix(".m3u8") ? "no-cache" : "public, max-age=31536000, immutable", name)
        }

        // Virtual-host style: the bucket in the host name (libcurl resolves *.localhost to
        // loopback), signed the same way.
        let virtualOut = out + "/virtual"
        let virtual = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "2", "--listen", "off", "--out", virtualOut,
                                                "--set", "video.quality=low", "--set", "publish.url=s3://\(s3.bucket)/vhost/",
                                                "--set", "publish.s3.endpoint=http://localhost:\(s3.port)",
                                                "--set", "publish.s3.path_style=false"])
        XCTAssertEqual(virtual.wait().status, 0, virtual.stderr)
        XCTAssertTrue(virtual.stderr.contains("url=\"http://\(s3.bucket).localhost:\(s3.port)/vhost/"), virtual.stderr)
        let virtualID = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: virtualOut + "/streams").first)
        XCTAssertEqual(try s3.objects(prefix: "vhost/")["vhost/cam1/\(virtualID)/init.mp4"]?.body,
                       FileManager.default.contents(atPath: "\(virtualOut)/streams/\(virtualID)/init.mp4").map { Array($0) })

        // A wrong secret is refused by the server (the signature is checked), retried,
        // reported, and still never logged.
        let wrong = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "2", "--listen", "off", "--out", out + "/wrong",
                                              "--set", "video.quality=low", "--set", "publish.url=s3://\(s3.bucket)/wrong/",
                                              "--set", "publish.s3.endpoint=\(s3.endpoint)", "--set", "publish.drain_seconds=1",
                                              "--set", "publish.s3.secret_key=not-the-secret"])
        XCTAssertEqual(wrong.wait().status, 0, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("event=upload.retry"), wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("HTTP 403"), wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("event=publish.incomplete"), wrong.stderr)
        XCTAssertFalse(wrong.stderr.contains("not-the-secret"))
        XCTAssertEqual(try s3.objects(prefix: "wrong/").count, 0)
    }

    /// Through a proxy that fails, resets, stalls past the timeout and goes dark for six
    /// seconds, while the test polls the origin itself: the origin's playlist only grows,
    /// everything it lists is already there and identical to the local file, and at the
    /// end the origin holds the whole stream.
    func testFailuresResetsStallsAndAnOutageNeverShowAViewerAnythingMissing() throws {
        let origin = try NginxOrigin()
        defer { origin.stop() }
        let proxy = try FaultProxy(upstream: origin.port) { number, elapsed in
            if elapsed > 5 && elapsed < 11 { return .reset }         // full outage
            if number % 11 == 0 { return .stall(seconds: 3) }         // past publish.timeout
            if number % 7 == 0 { return .reset }
            if number % 5 == 0 { return .status(503) }
            return .pass
        }
        defer { proxy.stop() }
        let out = try temporaryDirectory("faults")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--duration", "16", "--listen", "off", "--out", out,
                                              "--set", "video.quality=low", "--set", "hls.segment_seconds=1",
                                              "--set", "publish.url=http://127.0.0.1:\(proxy.port)/live/",
                                              "--set", "publish.timeout=1", "--set", "publish.max_backoff=2"])
        var previous: [String: String] = [:]
        var seen = Set<String>()
        var polls = 0
        while onair.process.isRunning {
            // Both media playlists, each under the rules on its own: the I-frame playlist
            // lists ranges of the same segments.
            for name in ["playlist.m3u8", "iframes.m3u8"] {
                guard let id = try? FileManager.default.contentsOfDirectory(atPath: out + "/streams").first else { continue }
                let response = try HTTPClient.request(port: origin.port, "/live/cam1/\(id)/\(name)")
                if response.status == 200 {
                    if name == "playlist.m3u8" { polls += 1 }
                    if let before = previous[name] { XCTAssertEqual(ReloadChecker.check(previous: before, next: response.text, path: name), []) }
                    previous[name] = response.text
                    for segment in ParsedPlaylist(text: response.text).segments where !seen.contains(segment.uri) {
                        let media = try HTTPClient.request(port: origin.port, "/live/cam1/\(id)/\(segment.uri)")
                        XCTAssertEqual(media.status, 200, "\(segment.uri) is listed, so it must be there")
                        XCTAssertEqual(media.body, FileManager.default.contents(atPath: "\(out)/streams/\(id)/\(segment.uri)").map { Array($0) })
                        seen.insert(segment.uri)
                    }
                }
            }
            usleep(250_000)
        }
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertGreaterThan(proxy.faults, 10)
        XCTAssertGreaterThan(polls, 10, "the origin was watched while it grew")
        XCTAssertTrue(onair.stderr.contains("event=publish.drained"), onair.stderr)
        let errors = Set(onair.stderr.split(separator: "\n").filter { $0.contains("event=upload.retry") }.compactMap { line in
            line.range(of: "error=\"").map { String(line[$0.upperBound...].prefix(while: { $0 != ":" && $0 != "\"" })) }
        })
        for kind in ["HTTP 503", "Operation timed out after", "Recv failure"] where !errors.contains(where: { $0.hasPrefix(kind) }) {
            XCTFail("no retry after '\(kind)' in the log: \(errors.sorted())")
        }
        try assertOriginMatches(out, origin, prefix: "live/cam1/")
    }

    /// video.quality = auto: a probe upload before the camera starts picks the preset.
    func testTheUplinkProbeChoosesTheQuality() throws {
        let fast = try RecordingServer(status: { _ in 201 })
        let refusing = try RecordingServer(status: { _ in 503 })
        defer { fast.stop(); refusing.stop() }
        for (server, chosen, width) in [(fast, "high", "1280"), (refusing, "low", "854")] {
            let out = try temporaryDirectory("probe")
            defer { try? FileManager.default.removeItem(atPath: out) }
            let onair = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "1", "--listen", "off", "--out", out,
                                                  "--set", "video.quality=auto", "--set", "publish.url=http://127.0.0.1:\(server.port)/",
                                                  "--set", "publish.drain_seconds=1"])
            XCTAssertEqual(onair.wait().status, 0, onair.stderr)
            let probe = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=uplink.probe") }, onair.stderr)
            XCTAssertEqual(logValue(String(probe), "chosen"), chosen, String(probe))
            let started = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=source.started") })
            XCTAssertEqual(logValue(String(started), "width"), width)
        }
        XCTAssertEqual(fast.requests.first?.path, "/.onair-probe", "the probe goes before anything else")
    }

    /// HTTPS checks the origin's certificate unless publish.insecure says otherwise, and
    /// saying so is warned about.
    func testHTTPSVerifiesCertificatesUnlessToldNotTo() throws {
        let origin = try NginxOrigin(tls: true)
        defer { origin.stop() }
        let common = ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "2", "--listen", "off", "--set", "video.quality=low",
                      "--set", "publish.url=https://127.0.0.1:\(origin.port)/", "--set", "publish.drain_seconds=1"]
        let checked = try Child(onairBinary(), common + ["--out", try temporaryDirectory("tls")])
        XCTAssertEqual(checked.wait().status, 0, checked.stderr)
        XCTAssertTrue(checked.stderr.contains("SSL certificate problem"), checked.stderr)
        XCTAssertTrue(checked.stderr.contains("event=publish.incomplete"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: origin.root + "/cam1/streams.json"), "nothing reached an unverified origin")

        let out = try temporaryDirectory("insecure")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let insecure = try Child(onairBinary(), common + ["--out", out, "--set", "publish.insecure=true", "--set", "publish.drain_seconds=30"])
        XCTAssertEqual(insecure.wait().status, 0, insecure.stderr)
        XCTAssertTrue(insecure.stderr.contains("level=warn event=publish.insecure"), insecure.stderr)
        XCTAssertTrue(insecure.stderr.contains("event=publish.drained"), insecure.stderr)
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/streams").first)
        XCTAssertEqual(FileManager.default.contents(atPath: "\(origin.root)/cam1/\(id)/init.mp4"), FileManager.default.contents(atPath: "\(out)/streams/\(id)/init.mp4"))
    }

    /// Apache mod_dav, which needs its collections made (MKCOL) before a PUT into them.
    func testPublishesToApacheWebDAV() throws {
        let apache = try ApacheOrigin()
        defer { apache.stop() }
        let out = try temporaryDirectory("apache")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "4", "--listen", "off", "--out", out,
                                              "--set", "video.quality=low", "--set", "publish.url=http://127.0.0.1:\(apache.port)/"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(onair.stderr.contains("event=publish.drained"), onair.stderr)
        try assertOriginMatches(out, root: apache.root, port: apache.port, prefix: "cam1/")
    }

    /// With the origin down, onair waits at exit for uploads to drain; a signal then stops
    /// the wait, and everything stays in the spool for the next start.
    func testASignalDuringTheDrainStopsWaiting() throws {
        let port = try NginxOrigin.freePort()
        let out = try temporaryDirectory("cancel")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--set", "device.name=cam1", "--pace", "fast", "--duration", "2", "--listen", "off", "--out", out,
                                              "--set", "video.quality=low", "--set", "publish.url=http://127.0.0.1:\(port)/",
                                              "--set", "publish.drain_seconds=600"])
        XCTAssertNotNil(onair.waitForLog("event=publish.draining"), onair.stderr)
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait(seconds: 60).status, 0, "it stopped waiting instead of draining for 600 s")
        XCTAssertTrue(onair.stderr.contains("stops=drain"), onair.stderr)
        XCTAssertTrue(onair.stderr.contains("event=publish.incomplete"), onair.stderr)
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/streams").first)
        XCTAssertTrue(try String(contentsOfFile: "\(out)/streams/\(id)/playlist.m3u8", encoding: .utf8).hasSuffix("#EXT-X-ENDLIST\n"),
                      "the local stream is complete; only its upload waits")
    }
}

extension XCTestCase {
    /// Every file onair stored locally is on the origin, byte for byte, and the origin's
    /// copy is a complete, valid stream.
    func assertOriginMatches(_ out: String, _ origin: NginxOrigin, prefix: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try assertOriginMatches(out, root: origin.root, port: origin.port, prefix: prefix, file: file, line: line)
    }

    func assertOriginMatches(_ out: String, root originRoot: String, port: UInt16, prefix: String,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let ids = try FileManager.default.contentsOfDirectory(atPath: out + "/streams").filter { !$0.hasPrefix(".") }
        XCTAssertEqual(ids.count, 1, file: file, line: line)
        for id in ids {
            let local = out + "/streams/" + id
            let remote = originRoot + "/" + prefix + id
            for name in try FileManager.default.subpathsOfDirectory(atPath: local) where name.contains(".") && !name.hasPrefix(".") {
                XCTAssertEqual(FileManager.default.contents(atPath: remote + "/" + name), FileManager.default.contents(atPath: local + "/" + name),
                               "\(id)/\(name)", file: file, line: line)
            }
            XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: remote + "/" + $0).map { Array($0) } }, [], file: file, line: line)
            let main = StreamLayout.mainPlaylist(index: try? String(contentsOfFile: remote + "/index.m3u8", encoding: .utf8))
            XCTAssertTrue(ParsedPlaylist(text: try String(contentsOfFile: remote + "/" + main, encoding: .utf8)).isEnded, file: file, line: line)
            let decode = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", "http://127.0.0.1:\(port)/\(prefix)\(id)/index.m3u8", "-f", "null", "-"])
            XCTAssertEqual(decode.status, 0, file: file, line: line)
            XCTAssertEqual(decode.stderr, "", file: file, line: line)
        }
    }
}
