import Foundation
import TestSupport
import Threading
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A real onair's live stream read over RTSP by the clients NVRs and hubs are built on:
/// FFmpeg (Frigate, Home Assistant) over TCP and UDP, GStreamer's rtspsrc, many at once.
final class RTSPPlaybackTests: XCTestCase {
    /// onair on the synthetic camera and microphone, and its RTSP URL.
    func serve(_ name: String, _ settings: [String] = []) throws -> (onair: Child, port: UInt16, url: String, stream: String) {
        let (onair, port, _) = try serveSynthetic(name, settings)
        let line = try XCTUnwrap(onair.waitForLog("event=rtsp.listening"), onair.stderr)
        let rtsp = try XCTUnwrap(logValue(line, "port"))
        let streams = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 1 }
        let stream = try XCTUnwrap(streams.first?["id"] as? String)
        return (onair, port, "rtsp://127.0.0.1:\(rtsp)/live", stream)
    }

    /// ffmpeg copies 6 s (180 pictures) of the stream over each transport; decoded back, every picture's
    /// index band follows the one before (nothing lost or repeated), and each second's
    /// flash and beep are within a frame of each other — the sender reports put sound and
    /// picture on one clock. (`-copyts` keeps the stream's own times: ffmpeg's parser gives
    /// the first picture from any RTSP source no time — its "Timestamps are unset" warning
    /// — and shifting the rest to it would misplace the sound.)
    /// On a machine so loaded that the live encoder falls behind its camera, the encoder
    /// itself repeats a picture into the slots of those it never got (and may put two in
    /// one slot, skipping one): those it counts, and says at the end (`stream.ended`'s
    /// `repeated`, `skipped`). RTSP must lose or repeat nothing more: each step between
    /// indices is 1, but for at most two steps per picture repeated (the repeat, the jump
    /// after it) and one per picture skipped.
    func testFFmpegGetsEveryFrameAndTheSoundInSyncOverTCPAndUDP() throws {
        let (onair, _, url, _) = try serve("rtsp-ffmpeg", ["video.quality=high"])
        var stopped = false
        defer { if !stopped { onair.signal(SIGTERM); onair.wait() } }
        let scratch = try temporaryDirectory("rtsp-ffmpeg-out")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var steps: [String: [Int64]] = [:]
        for transport in ["tcp", "udp"] {
            let file = "\(scratch)/\(transport).mkv"
            let copied = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-copyts", "-rtsp_transport", transport, "-i", url, "-frames:v", "180", "-c", "copy", "-y", file])
            XCTAssertEqual(copied.status, 0, copied.stderr)
            XCTAssertEqual(copied.stderr, "", "\(transport): ffmpeg said nothing was wrong")
            let m = try measure(file, scratch: "\(scratch)/\(transport)", firstAudioFrame: nil)
            XCTAssertEqual(m.indices.count, 180, transport)
            steps[transport] = zip(m.indices.dropFirst(), m.indices).map { Int64($0) - Int64($1) }
            XCTAssertGreaterThanOrEqual(m.flashFrames.count, 4, transport)
            // The first picture has no time of its own (above): its flash is not compared.
            var timed = m
            timed.flashFrames.removeAll { $0 == 0 }
            assertEveryFlashHasItsBeep(timed, transport)
        }
        onair.signal(SIGTERM)
        onair.wait()
        stopped = true
        let ended = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=stream.ended") }.map(String.init), onair.stderr)
        let repeated = Int64(logValue(ended, "repeated") ?? "") ?? -1, skipped = Int64(logValue(ended, "skipped") ?? "") ?? -1
        XCTAssertTrue(repeated >= 0 && skipped >= 0, ended)
        for (transport, steps) in steps.sorted(by: { $0.key < $1.key }) {
            XCTAssertTrue(steps.allSatisfy { $0 >= 0 }, "\(transport): pictures in order: \(steps)")
            let irregular = steps.filter { $0 != 1 }.count
            XCTAssertLessThanOrEqual(Int64(irregular), 2 * repeated + skipped,
                                     "\(transport): consecutive pictures but for what the encoder repeated (\(repeated)) or skipped (\(skipped)): \(steps)")
        }
    }

    func testGStreamersRTSPSourcePlaysPictureAndSound() throws {
        let (onair, _, url, _) = try serve("rtsp-gstreamer")
        defer { onair.signal(SIGTERM); onair.wait() }
        for transport in ["tcp", "udp"] {
            let played = try runTool("/usr/bin/gst-launch-1.0", [
                "rtspsrc", "location=\(url)", "protocols=\(transport)", "name=s",
                "s.", "!", "rtph264depay", "!", "avdec_h264", "!", "fakesink", "num-buffers=90",
                "s.", "!", "rtpmp4gdepay", "!", "avdec_aac", "!", "fakesink", "num-buffers=120",
            ], seconds: 60)
            let output = String(decoding: played.stdout, as: UTF8.self)
            // The report shows a failure's last lines: GStreamer's own account goes last.
            XCTAssertEqual(played.status, 0, "\(transport): onair:\n" + onair.stderr + "\ngst-launch-1.0 exited \(played.status):\n" + output + played.stderr)
            XCTAssertTrue(output.contains("Got EOS from element"), "\(transport): both sinks had their buffers\n" + output + played.stderr)
            XCTAssertFalse(output.contains("ERROR"), output)
        }
    }

    /// Ten RTSP clients at once (TCP and UDP) while two HLS viewers read the playlist: each
    /// gets the stream, and /api/status shows all ten.
    func testTenClientsAtOnceWhileHLSViewersWatch() throws {
        let (onair, port, url, stream) = try serve("rtsp-ten", ["rtsp.max_clients_per_address=16"])
        defer { onair.signal(SIGTERM); onair.wait() }
        let scratch = try temporaryDirectory("rtsp-ten-out")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let hls = try (0..<2).map { n in
            try Child("/usr/bin/ffmpeg", ["-v", "error", "-i", "http://127.0.0.1:\(port)/streams/\(stream)/index.m3u8", "-t", "8", "-c", "copy", "-y", "\(scratch)/hls\(n).ts"])
        }
        let clients = try (0..<10).map { n in
            try Child("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", n % 2 == 0 ? "tcp" : "udp", "-i", url, "-t", "5", "-c", "copy", "-y",
                                          "\(scratch)/client\(n).mkv"])
        }
        var most = 0
        let deadline = Date().addingTimeInterval(30)
        while clients.contains(where: { $0.process.isRunning }) && Date() < deadline {
            let sessions = (try apiStatus(port: port)["rtsp"] as? [String: Any])?["sessions"] as? [[String: Any]] ?? []
            most = max(most, sessions.filter { $0["playing"] as? Bool == true }.count)
            usleep(200_000)
        }
        XCTAssertEqual(most, 10, "ten playing at once")
        for (n, client) in clients.enumerated() {
            XCTAssertEqual(client.wait(seconds: 60).status, 0, client.stderr)
            let packets = try runTool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                                                           "stream=nb_read_packets", "-of", "csv=p=0", "\(scratch)/client\(n).mkv"])
            XCTAssertGreaterThanOrEqual(Int(String(decoding: packets.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, 120,
                                        "client \(n)")
        }
        for viewer in hls { XCTAssertEqual(viewer.wait(seconds: 60).status, 0, viewer.stderr) }
    }

    /// Issue 44's flood: every place held by connections that play nothing, kept alive
    /// with GET_PARAMETER (8 from one address, 2 from another), and re-opened as soon as one
    /// is closed. ffprobe still gets the stream, each of three times.
    func testIdleConnectionsCannotKeepARealClientOut() throws {
        let (onair, _, url, _) = try serve("rtsp-idle", ["rtsp.max_clients=10", "rtsp.max_clients_per_address=8"])
        defer { onair.signal(SIGTERM); onair.wait() }
        let port = try XCTUnwrap(UInt16(url.split(separator: ":").last!.prefix { $0.isNumber }))
        let stop = Locked(false)
        let holders = (0..<10).map { n in
            WorkerThread(name: "idle-\(n)") {
                var cseq = 0
                while !stop.withLock({ $0 }) {
                    guard let socket = RawSocket(port: port, from: n < 8 ? "127.0.0.2" : "127.0.0.3", timeoutMilliseconds: 1000) else { usleep(50_000); continue }
                    // Kept alive until the server closes it; then opened again.
                    while !stop.withLock({ $0 }) {
                        cseq += 1
                        guard socket.send("GET_PARAMETER \(url) RTSP/1.0\r\nCSeq: \(cseq)\r\n\r\n"), !socket.response().isEmpty else { break }
                        usleep(200_000)
                    }
                }
            }
        }
        defer {
            stop.withLock { $0 = true }
            for holder in holders { holder.join() }
        }
        usleep(1_000_000)  // every place taken
        for attempt in 0..<3 {
            let probe = try runTool("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name",
                                                         "-of", "csv=p=0", url], seconds: 60)
            XCTAssertEqual(probe.status, 0, "attempt \(attempt): \(probe.stderr)")
            XCTAssertTrue(String(decoding: probe.stdout, as: UTF8.self).contains("h264"), "attempt \(attempt)")
        }
    }

    /// A client killed mid-stream (no TEARDOWN) is reaped at once: its connection closed.
    func testAClientKilledMidStreamIsReaped() throws {
        let (onair, port, url, _) = try serve("rtsp-killed")
        defer { onair.signal(SIGTERM); onair.wait() }
        let client = try Child("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "udp", "-i", url, "-f", "null", "-"])
        func sessions() throws -> [[String: Any]] { (try apiStatus(port: port)["rtsp"] as? [String: Any])?["sessions"] as? [[String: Any]] ?? [] }
        let deadline = Date().addingTimeInterval(30)
        while try sessions().first?["playing"] as? Bool != true && Date() < deadline { usleep(100_000) }
        XCTAssertEqual(try sessions().count, 1)
        // The server reads the live feed while a client plays, and only then (issue 45);
        // the HLS packager reads it all the while a stream is live.
        func readers() throws -> [String] { (try apiStatus(port: port)["live_readers"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } }
        XCTAssertEqual(try readers(), ["hls", "rtsp"])
        client.signal(SIGKILL)
        client.wait()
        XCTAssertNotNil(onair.waitForLog("event=rtsp.ended", seconds: 10), onair.stderr)
        XCTAssertEqual(try sessions().count, 0)
        let left = Date().addingTimeInterval(10)
        while try readers() != ["hls"] && Date() < left { usleep(100_000) }
        XCTAssertEqual(try readers(), ["hls"], "the feed is left with the last client")
    }
}
