import Basics
import Foundation
import XCTest
import HLS
import TestSupport

/// `video.ladder`: rungs of one capture, through the onair binary. Each rung decodes to the
/// same frames, cut at the same frames, in sync with the one audio rendition.
final class LadderTests: XCTestCase {
    func testTwoRungsFromOneCaptureAreAlignedAndInSync() throws {
        let out = try temporaryDirectory("ladder")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--pace", "fast", "--duration", "12", "--out", out,
                                              "--listen", "off", "--set", "video.ladder=auto", "--set", "record.enabled=off"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let started = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=stream.started") }.map(String.init))
        XCTAssertEqual(logValue(started, "rungs"), "1280x720@1.5M,854x480@900k", "auto: the configured picture and the next preset below")
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/streams").first)
        let stream = out + "/streams/" + id
        XCTAssertEqual(checkerFindings(stream), [], "HLS_RULES, rung alignment (V6) and the audio group (V3, V4, V7) included")

        let index = try XCTUnwrap(MultivariantPlaylist(parsing: try String(contentsOfFile: stream + "/index.m3u8", encoding: .utf8)))
        XCTAssertEqual(index.audio.map(\.uri), ["audio/playlist.m3u8"], "one audio rendition, not the same AAC in every rung")
        XCTAssertEqual(index.variants.map(\.uri), ["v0/playlist.m3u8", "v1/playlist.m3u8"])
        XCTAssertEqual(index.variants.map { "\($0.width)x\($0.height)" }, ["1280x720", "854x480"])
        XCTAssertEqual(index.variants.map(\.audioGroup), ["audio", "audio"])
        XCTAssertEqual(index.iFrameStreams.map(\.uri), ["v0/iframes.m3u8", "v1/iframes.m3u8"])
        XCTAssertGreaterThan(index.variants[0].bandwidth, index.variants[1].bandwidth)
        for name in ["v0", "v1"] {
            let init0 = try Data(contentsOf: URL(fileURLWithPath: "\(stream)/\(name)/init.mp4"))
            XCTAssertNil(init0.range(of: Data("mp4a".utf8)), "\(name) carries pictures only")
        }

        // ffmpeg reads every rendition: each rung decodes to every frame, in sync with the
        // shared sound within one frame.
        let decode = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", stream + "/index.m3u8", "-map", "0", "-f", "null", "-"])
        XCTAssertEqual(decode.status, 0)
        XCTAssertEqual(decode.stderr, "", "ffmpeg reports nothing")
        var rungs: [Measurement] = []
        for rung in 0..<2 {
            let m = try measure(stream + "/index.m3u8", scratch: "\(out)/rung\(rung)", firstAudioFrame: nil, video: rung)
            XCTAssertEqual(m.indices, (0..<360).map { UInt32($0) }, "rung \(rung): continuous frame indices")
            XCTAssertEqual(m.flashFrames.count, 12)
            XCTAssertEqual(m.onsets.count, m.flashFrames.count, "one beep per flash")
            for (flash, onset) in zip(m.flashFrames, m.onsets) {
                XCTAssertEqual(onset, m.pts[flash], accuracy: 1.0 / 30, "rung \(rung): A/V offset within one video frame")
            }
            rungs.append(m)
        }
        XCTAssertEqual(rungs[0].pts, rungs[1].pts, "the same timestamps in both rungs")
        // Segment boundaries and IDRs fall on the same frame in every rung.
        XCTAssertEqual(try iFrameIndices(stream + "/v0", scratch: out + "/iframe0"), [0, 60, 120, 180, 240, 300])
        XCTAssertEqual(try iFrameIndices(stream + "/v1", scratch: out + "/iframe1"), [0, 60, 120, 180, 240, 300])
    }

    /// onair's own counts of what it dropped, for a failure's message.
    static func counts(_ port: UInt16) -> String {
        guard let status = try? HTTPClient.request(port: port, "/api/status"),
              let json = try? JSONSerialization.jsonObject(with: Data(status.body)) as? [String: Any] else { return "no /api/status\n" }
        return "onair dropped \(json["dropped_video_frames"] ?? "?") pictures and \(json["dropped_audio_chunks"] ?? "?") sound chunks\n"
    }

    /// The viewer plays a live ladder: Chromium with its own HLS (it chooses the rung),
    /// Firefox through MSE with the sound in a buffer of its own; each page shows the
    /// picture size that plays, and the sound plays.
    func testTheViewerPlaysALadderInChromiumAndFirefox() throws {
        let (onair, port, _) = try serveSynthetic("ladder-viewer", ["video.ladder=auto"])
        _ = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 3 }
        let chromium = try Chromium()
        let native = try watchViewer(chromium, "http://127.0.0.1:\(port)/?mode=ll", player: "native")
        let size = "\(native["w"] as? Int ?? 0)x" + "\(try XCTUnwrap(chromium.evaluate("video.videoHeight") as? Int))"
        XCTAssertTrue(["854x480", "640x360"].contains(size), size)
        XCTAssertEqual(try chromium.evaluate("document.getElementById('rung').textContent") as? String, size, "the page says which rung plays")
        XCTAssertGreaterThan(try XCTUnwrap(chromium.evaluate("video.webkitAudioDecodedByteCount") as? Int), 0, "the audio rendition plays")
        let firefox = try Firefox()
        let mse = try watchViewer(firefox, "http://127.0.0.1:\(port)/", player: "mse-ladder")
        let rung = try XCTUnwrap(firefox.evaluate("video.dataset.rung") as? String)
        XCTAssertEqual(rung, "\(mse["w"] as? Int ?? 0)x\(try XCTUnwrap(firefox.evaluate("video.videoHeight") as? Int))")
        XCTAssertEqual(try firefox.evaluate("video.mozHasAudio") as? Bool, true, "the audio rendition plays")
        // An export is one rung with its sound: the top one, or the one max_bitrate and
        // max_size allow; every frame in it, in sync.
        let streams = try waitForStreams(port) { !$0.isEmpty }
        let id = try XCTUnwrap(streams.first?["id"] as? String)
        let scratch = try temporaryDirectory("ladder-export")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for (query, size) in [("", "854x480"), ("&max_size=700x400", "640x360"), ("&max_bitrate=600000", "640x360")] {
            let export = try HTTPClient.request(port: port, "/api/export?stream=\(id)\(query)")
            XCTAssertEqual(export.status, 200, export.text)
            XCTAssertTrue(export.headers["content-disposition"]?.contains("_\(size).mp4") ?? false, "\(export.headers)")
            let file = "\(scratch)/\(size).mp4"
            try Data(export.body).write(to: URL(fileURLWithPath: file))
            let probe = try runTool("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width,height", "-of", "csv=p=0", file])
            XCTAssertEqual(String(decoding: probe.stdout, as: UTF8.self).split(separator: "\n").sorted(),
                           ["audio", "video,\(size.replacingOccurrences(of: "x", with: ","))"], query)
            let m = try measure(file, scratch: "\(scratch)/m", firstAudioFrame: 0)
            // In real time beside two browsers the camera drops frames; what is there is in order.
            XCTAssertEqual(m.indices, m.indices.sorted(), "\(query): frames in order")
            XCTAssertGreaterThan(m.indices.count, 60, query)
            assertEveryFlashHasItsBeep(m, query, context: Self.counts(port) + onair.stderr)
        }
        // `onair fetch` of the live ladder: the rung --max-size allows, with its sound.
        let copy = scratch + "/fetched.mp4"
        let fetch = try runTool(onairBinary(), ["fetch", "http://127.0.0.1:\(port)/streams/\(id)/index.m3u8", "--max-size", "700x400", "--out", copy],
                                seconds: 60)
        XCTAssertEqual(fetch.status, 0, fetch.stderr)
        XCTAssertTrue(fetch.stderr.contains("fetch: variant 640x360 at ") && fetch.stderr.contains("fetch: sound Main, a rendition of its own"), fetch.stderr)
        let probe = try runTool("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width,height", "-of", "csv=p=0", copy])
        XCTAssertEqual(String(decoding: probe.stdout, as: UTF8.self).split(separator: "\n").sorted(), ["audio", "video,640,360"])
        let fetched = try measure(copy, scratch: "\(scratch)/f", firstAudioFrame: 0)
        XCTAssertEqual(fetched.indices, fetched.indices.sorted(), "fetched: frames in order")
        XCTAssertGreaterThan(fetched.indices.count, 60)
        assertEveryFlashHasItsBeep(fetched, "fetched", context: Self.counts(port) + onair.stderr)
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
    }

    /// Chromium's HLS plays the top rung over a fast link; when the link weakens below
    /// it, Chromium switches down to the rung the link affords and keeps playing.
    func testChromiumSwitchesDownWhenTheLinkWeakens() throws {
        let (onair, port, _) = try serveSynthetic("ladder-throttled", ["video.ladder=auto"])
        _ = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 3 }
        let proxy = try FaultProxy(upstream: port) { _, _ in .pass }
        defer { proxy.stop() }
        let chromium = try Chromium()
        try chromium.open("http://127.0.0.1:\(proxy.port)/?mode=hls")
        var heights: [Int] = []
        /// Watches for up to two minutes until rung `height` has played two seconds of media.
        func watch(until height: Int) throws -> Bool {
            var since: Double?
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline {
                if let text = try? chromium.evaluate("JSON.stringify([video.videoHeight, video.currentTime])") as? String,
                   let state = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Double] {
                    if heights.last != Int(state[0]) { heights.append(Int(state[0])) }
                    if Int(state[0]) == height {
                        if since == nil { since = state[1] }
                        if state[1] > since! + 2 { return true }
                    } else {
                        since = nil
                    }
                }
                usleep(500_000)
            }
            return false
        }
        XCTAssertTrue(try watch(until: 480), "the top rung plays over the fast link: \(heights)")
        // 700 kbit/s: below the top rung's BANDWIDTH (about 1.06 Mbit/s with its sound),
        // above the lower one's (about 0.5).
        proxy.server.replyThrottle = 700_000 / 8
        XCTAssertTrue(try watch(until: 360), "the lower rung plays over the weak link: \(heights)")
        print("ladder: picture heights seen, fast then weak link: \(heights)")
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
    }

    /// Under heat the top rung goes first: the console says which, the top rung carries
    /// the pictures of the one below (so a player on it plays on, at that picture), and it
    /// comes back once the board is cool; the stream stays correct throughout. Chromium
    /// plays it with its own HLS, Firefox with the viewer's MSE player (which appends the
    /// init each segment names).
    func testUnderHeatTheTopRungGoesFirstAndPlayersPlayOn() throws {
        let sensor = try temporaryDirectory("ladder-heat-sensor") + "/temp"
        try "40000\n".write(toFile: sensor, atomically: true, encoding: .utf8)
        let (onair, port, out) = try serveSynthetic("ladder-heat", ["video.ladder=auto", "thermal.sensor=\(sensor)", "thermal.dwell_s=1"])
        _ = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 2 }
        let chromium = try Chromium()
        try chromium.open("http://127.0.0.1:\(port)/?mode=ll")
        let firefox = try Firefox()
        try firefox.open("http://127.0.0.1:\(port)/")
        /// Firefox's media time, and whether its player failed.
        func firefoxState() -> (time: Double, failed: Bool) {
            let text = (try? firefox.evaluate("JSON.stringify([video.currentTime, video.error ? 1 : 0])") as? String) ?? "[0,0]"
            let state = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Double]) ?? [0, 0]
            return (state[0], state[1] != 0)
        }
        var seen: [Int] = []
        var played = 0.0
        /// Watches for up to two minutes until `done`: the heights of the pictures seen, in
        /// turn, and how far it has played.
        func play(until done: () -> Bool) throws -> Bool {
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline {
                if let text = try? chromium.evaluate("JSON.stringify([video.videoHeight, video.currentTime])") as? String,
                   let state = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Double] {
                    if seen.last != Int(state[0]) { seen.append(Int(state[0])) }
                    played = state[1]
                    if done() { return true }
                }
                usleep(500_000)
            }
            return false
        }
        func firefoxHeight() -> Int { (try? firefox.evaluate("video.videoHeight") as? Int) ?? 0 }
        XCTAssertTrue(try play { seen.last == 480 && firefoxHeight() == 480 }, "the top rung plays in both: \(seen), \(firefoxHeight())")
        try "90000\n".write(toFile: sensor, atomically: true, encoding: .utf8)
        XCTAssertTrue(try play { onair.stderr.contains("event=stream.rungs") && seen.last == 360 }, "the top rung dropped: \(seen)")
        /// What /api/status says of the ladder.
        func ladderStatus() throws -> [String: [String]] {
            let status = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: port, "/api/status").body)) as? [String: Any]
            return (status?["ladder"] as? [String: [String]]) ?? [:]
        }
        XCTAssertEqual(try ladderStatus(), ["live": ["640x360@400k"], "dropped": ["854x480@900k"]])
        let dropped = played, firefoxAtDrop = firefoxState().time
        XCTAssertTrue(try play { played > dropped + 4 }, "four more seconds play while it is hot: \(seen)")
        // Firefox's player stays on the top rung (the link affords it) and appends the
        // lower rung's init before the carried segments.
        XCTAssertTrue(try play { (firefoxState().time > firefoxAtDrop + 4 && firefoxHeight() == 360) || firefoxState().failed },
                      "Firefox plays on too, at the carried picture")
        XCTAssertFalse(firefoxState().failed, "Firefox's player: \(String(describing: try? firefox.evaluate("video.error && video.error.message")))")
        try "40000\n".write(toFile: sensor, atomically: true, encoding: .utf8)
        XCTAssertTrue(try play { onair.stderr.contains("event=thermal.rungs dropped=none") && seen.last == 480 }, "back when cool: \(seen)")
        XCTAssertEqual(try ladderStatus(), ["live": ["854x480@900k", "640x360@400k"], "dropped": []])
        print("ladder under heat: picture heights seen: \(seen)")
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let said = onair.stderr.split(separator: "\n")
        XCTAssertTrue(said.contains { $0.contains("event=thermal.rungs dropped=854x480@900k live=640x360@400k") && $0.contains("reason=hot") },
                      onair.stderr)
        XCTAssertTrue(said.contains { $0.contains("event=stream.rungs") && $0.contains("live=640x360@400k dropped=854x480@900k") }, onair.stderr)
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/streams").first)
        XCTAssertEqual(checkerFindings(out + "/streams/" + id), [])
        let top = try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: "\(out)/streams/\(id)/v0/playlist.m3u8", encoding: .utf8)))
        XCTAssertTrue(top.entries.contains { $0.map == "../v1/init.mp4" }, "the top rung carried the one below")
        XCTAssertEqual(top.entries.last?.map, nil, "and ended on its own pictures")
    }

    /// GStreamer's hlsdemux2 with `max-bitrate` picks the lower rung, and the top one when
    /// the limit affords it (ffmpeg reads them all, testTwoRungsFromOneCaptureAreAlignedAndInSync).
    /// hlsdemux2 needs a streams-aware parent (urisourcebin, parsebin), which creates it, so
    /// the property goes to it through the bin (gst-launch sets `hlsdemux2-0::max-bitrate`
    /// when the child appears); it takes the first variant listed, then switches before
    /// its first fragment, so the last picture size it negotiates is the one it plays.
    /// Debian's GStreamer 1.22 without gst-plugins-bad does not go on to play a live
    /// stream whose sound is a rendition of its own (it waits on the sound's buffering), so
    /// the pipeline is stopped after 15 s.
    func testHlsdemux2WithMaxBitratePicksTheRungItAllows() throws {
        let (onair, port, _) = try serveSynthetic("ladder-gstreamer", ["video.ladder=auto"])
        let streams = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 2 }
        let url = "http://127.0.0.1:\(port)" + (try XCTUnwrap(streams.first?["playlist"] as? String))
        // Both limits at once: each pipeline is stopped after its 15 s, so one after the
        // other would wait twice.
        let limits = [(700_000, 640), (5_000_000, 854)]
        let pipelines = try limits.map { bits, _ in
            try Child("/usr/bin/timeout", ["15", "/usr/bin/gst-launch-1.0", "-v", "urisourcebin", "uri=\(url)",
                                           "hlsdemux2-0::max-bitrate=\(bits)", "!", "parsebin", "!", "fakesink", "sync=false"])
        }
        for ((bits, width), gst) in zip(limits, pipelines) {
            let said = gst.wait(seconds: 60).stdout + gst.stderr
            XCTAssertFalse(said.contains("ERROR"), said)
            let widths = said.matches(of: /width=\(int\)(\d+)/).map { Int($0.1)! }
            XCTAssertEqual(widths.last, width, "max-bitrate \(bits): \(widths), \(said.suffix(2000))")
            if bits > 1_000_000 { XCTAssertEqual(Set(widths), [854], "the top rung only, when the limit affords it") }
        }
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
    }

    /// Bad input: one line naming the key and what was wrong, exit 2, nothing written.
    func testABadLadderIsOneLineAndExitStatus2() throws {
        let out = try temporaryDirectory("ladder-bad")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let cases = [
            ("banana", "onair: --set: video.ladder: expected off, auto or rungs like 1280x720@2.5M,854x480@900k, got 'banana'"),
            ("1280x720@2.5M,1280x720@2.5M", "onair: --set: video.ladder: rung 1280x720@2.5M is listed twice"),
            ("1281x720@1M", "onair: --set: video.ladder: must be even for 4:2:0 video, got 1281"),
            ("1280x720@fast", "onair: --set: video.ladder: expected bits per second like 1500000, 1500k or 1.5M, got 'fast'"),
            ("640x360@1M,1280x720@500k", "onair: video.ladder: rung 1280x720@500k is larger than the capture, 640x360 (the top rung's picture)"),
        ]
        for (value, message) in cases {
            let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--pace", "fast", "--duration", "1", "--out", out,
                                                  "--listen", "off", "--set", "video.ladder=\(value)"])
            XCTAssertEqual(onair.wait().status, 2, value)
            let lines = onair.stderr.split(separator: "\n").filter { !$0.hasPrefix("t_ms=") }
            XCTAssertEqual(lines, [Substring(message)], value)
        }
        XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: out + "/streams")) ?? [], [], "no stream was started")
    }

    /// More rungs than the encoders sustain: the top rung goes first (overload = lower), or
    /// the start is refused naming the rung to drop (overload = refuse).
    func testAnOverloadDropsTheTopRungOrIsRefused() throws {
        let out = try temporaryDirectory("ladder-overload")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let common = ["run", "--source", "synthetic", "--pace", "fast", "--duration", "2", "--listen", "off", "--out", out,
                      "--set", "video.ladder=auto", "--set", "record.enabled=off", "--set", "performance.capacity.x264=30M"]
        let lowered = try Child(onairBinary(), common)
        XCTAssertEqual(lowered.wait().status, 0, lowered.stderr)
        XCTAssertTrue(lowered.stderr.contains("event=performance.cost cost=1.33 outputs=\"live 1280x720@30 on x264; live rung 2 854x480@30 on x264\""),
                      lowered.stderr)
        XCTAssertTrue(lowered.stderr.contains("level=warn event=performance.lowered changes=\"live without its top rung 1280x720\" cost=0.41"),
                      lowered.stderr)
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/streams").first)
        XCTAssertEqual(checkerFindings(out + "/streams/" + id), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(out)/streams/\(id)/v0"), "one rung left: one muxed variant")
        let refused = try Child(onairBinary(), common + ["--set", "performance.overload=refuse"])
        XCTAssertEqual(refused.wait().status, 2)
        let errors = refused.stderr.split(separator: "\n").filter { !$0.hasPrefix("t_ms=") }.map(String.init)
        XCTAssertEqual(errors, ["onair: encoding would cost 1.33 of what the encoders sustain (live 1280x720@30 on x264 + live rung 2 854x480@30 on x264); "
                                + "drop the top rung 1280x720@1.5M from video.ladder, or lower the live stream (video.quality, video.fps), "
                                + "or set performance.overload=lower"])
    }
}
