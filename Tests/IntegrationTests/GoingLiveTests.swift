import Foundation
import MPEGTS
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// onair going live on RTMP servers no one here wrote: Debian's nginx with
/// libnginx-mod-rtmp, as itself and behind its stream module's TLS (RTMPS), recording
/// what it takes to FLV, which ffmpeg decodes back.
final class GoingLiveTests: XCTestCase {
    /// One stream to two destinations at once, RTMP and RTMPS (the certificate checked
    /// against the CA the test made, through SSL_CERT_FILE), and a third whose name the
    /// certificate does not carry: the first two get every picture the stream has, in
    /// order, each flash with its beep, and end the broadcast (deleteStream) with the
    /// stream; the third is refused by onair itself, says why, and tries again.
    func testRTMPAndRTMPSGetEveryPictureWithItsSoundAndAWrongCertificateIsRefused() throws {
        let nginx = try NginxRTMP(tls: true)
        defer { nginx.stop() }
        let tls = try XCTUnwrap(nginx.tlsPort)
        let out = try temporaryDirectory("destinations")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), [
            "run", "--source", "synthetic", "--listen", "off", "--out", out, "--duration", "8",
            // 1280x720: the index band decodes at 640x360, exactly half.
            "--set", "video.quality=medium", "--set", "webrtc.port=off", "--set", "rtsp.port=off",
            "--set", "destination.plain.url=rtmp://127.0.0.1:\(nginx.port)/live", "--set", "destination.plain.key=plain",
            "--set", "destination.secure.url=rtmps://localhost:\(tls)/live/secure",
            "--set", "destination.wrongname.url=rtmps://127.0.0.1:\(tls)/live/wrongname",
        ], environment: ["SSL_CERT_FILE": nginx.caFile])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let log = onair.stderr
        let ended = try XCTUnwrap(logLines(log, "event=stream.ended").first, log)
        let frames = try XCTUnwrap(Int(logValue(ended, "frames") ?? ""), ended)
        let repeated = Int(logValue(ended, "repeated") ?? "") ?? -1, skipped = Int(logValue(ended, "skipped") ?? "") ?? -1
        XCTAssertFalse(log.contains("plain") && log.contains("key=plain"), "the key is never logged")

        let scratch = try temporaryDirectory("destinations-decode")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for name in ["plain", "secure"] {
            XCTAssertTrue(log.contains("event=destination.live name=\(name) "), "\(name)\n\(log)")
            let files = nginx.files(name)
            XCTAssertEqual(files.count, 1, "\(name): one broadcast\n\(nginx.log)")
            guard let file = files.first else { continue }
            let decoded = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "null", "-"])
            XCTAssertEqual(decoded.stderr, "", "\(name): ffmpeg decodes it without a word")
            let m = try measure(file, scratch: "\(scratch)/\(name)", firstAudioFrame: nil)
            // The destination joined before the stream began: it has every picture the
            // stream has (the live job's own repeats and skips included).
            XCTAssertEqual(m.indices.count, frames, "\(name): every picture")
            // The synthetic camera numbers its frames at its own rate: each picture is the
            // one a whole number of its frames after the one before (the most common step).
            let steps = zip(m.indices.dropFirst(), m.indices).map { Int64($0) - Int64($1) }
            let step = Dictionary(grouping: steps, by: { $0 }).max { $0.value.count < $1.value.count }?.key ?? 1
            XCTAssertTrue(steps.allSatisfy { $0 >= 0 }, "\(name): in order: \(steps)")
            XCTAssertLessThanOrEqual(steps.filter { $0 != step }.count, 2 * repeated + skipped, "\(name): consecutive: \(Dictionary(grouping: steps, by: { $0 }).mapValues(\.count)) \(steps)")
            assertEveryFlashHasItsBeep(m, name, context: log)
            let endedLine = logLines(log, "event=destination.ended name=\(name) ").first ?? ""
            XCTAssertEqual(logValue(endedLine, "frames"), String(frames), endedLine)
            XCTAssertEqual(logValue(endedLine, "dropped"), "0", endedLine)
        }
        // FCUnpublish and deleteStream: nginx-rtmp logs the second for each broadcast.
        XCTAssertGreaterThanOrEqual(nginx.log.components(separatedBy: "deleteStream").count - 1, 2, nginx.log)
        let refused = logLines(log, "event=destination.failed name=wrongname ")
        XCTAssertGreaterThanOrEqual(refused.count, 2, "refused, and tried again\n\(log)")
        XCTAssertTrue(refused.first?.contains("certificate not trusted") == true || refused.first?.contains("mismatch") == true,
                      String(refused.first ?? ""))
        XCTAssertEqual(nginx.files("wrongname"), [])
    }

    /// SRT to receivers no one here wrote: FFmpeg's SRT reader (libsrt) as a listener gets
    /// every picture of the stream, each flash with its beep; srt-live-transmit (srt-tools)
    /// writes what onair sent as it came, a transport stream that breaks none of a
    /// receiver's rules (continuity, PAT/PMT, PCR); and srt-live-transmit listening with a
    /// passphrase onair does not know refuses the call: onair says so in libsrt's words and
    /// tries again.
    func testSRTCarriesEveryPictureInATransportStreamAndAWrongPassphraseIsRefused() throws {
        let port = try NginxOrigin.freePort(), locked = try NginxOrigin.freePort(), raw = try NginxOrigin.freePort()
        let scratch = try temporaryDirectory("srt")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let received = scratch + "/received.ts"
        let receiver = try Child("/usr/bin/ffmpeg", ["-v", "error", "-i", "srt://127.0.0.1:\(port)?mode=listener", "-c", "copy",
                                                     "-f", "mpegts", received])
        let refuser = try Child("/usr/bin/srt-live-transmit", ["-q", "srt://:\(locked)?mode=listener&passphrase=correct-horse-battery",
                                                               "file://con"])
        defer { refuser.signal(SIGTERM); _ = refuser.wait() }
        let asSent = scratch + "/as-sent.ts"
        _ = FileManager.default.createFile(atPath: asSent, contents: nil)
        let writer = try Child("/bin/sh", ["-c", "exec /usr/bin/srt-live-transmit -q 'srt://:\(raw)?mode=listener' file://con > \(asSent)"])
        defer { writer.signal(SIGTERM); _ = writer.wait() }
        for listening in [port, locked, raw] { XCTAssertTrue(waitForUDPPort(listening), "a receiver listens on \(listening)") }
        let out = try temporaryDirectory("srt-onair")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), [
            "run", "--source", "synthetic", "--listen", "off", "--out", out, "--duration", "8",
            "--set", "video.quality=medium", "--set", "webrtc.port=off", "--set", "rtsp.port=off",
            "--set", "destination.studio.url=srt://127.0.0.1:\(port)?latency=200",
            "--set", "destination.locked.url=srt://127.0.0.1:\(locked)", "--set", "destination.locked.passphrase=not-the-right-one",
            "--set", "destination.raw.url=srt://127.0.0.1:\(raw)",
        ])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        _ = receiver.wait(seconds: 30)
        let log = onair.stderr
        XCTAssertFalse(log.contains("not-the-right-one"), "the passphrase is never logged")
        let ended = try XCTUnwrap(logLines(log, "event=stream.ended").first, log)
        let frames = try XCTUnwrap(Int(logValue(ended, "frames") ?? ""), ended)
        // What onair sent, as srt-live-transmit wrote it (its last block of 4 KiB may not
        // reach the file when the call ends: whole packets are checked).
        writer.signal(SIGTERM)
        _ = writer.wait()
        let sent = try [UInt8](Data(contentsOf: URL(fileURLWithPath: asSent)))
        let report = TSCheck.check(Array(sent.prefix(sent.count / 188 * 188)))
        XCTAssertEqual(report.problems, [])
        XCTAssertGreaterThan(report.packets, 1000)
        XCTAssertGreaterThanOrEqual(report.starts[0x100] ?? 0, frames - 30, "the pictures, but for what the last block held")
        let decoded = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", received, "-f", "null", "-"])
        XCTAssertEqual(decoded.stderr, "", "ffmpeg decodes it without a word")
        let m = try measure(received, scratch: scratch + "/m", firstAudioFrame: nil)
        XCTAssertEqual(m.indices.count, frames, "every picture")
        assertEveryFlashHasItsBeep(m, "srt", context: log)
        let studio = logLines(log, "event=destination.ended name=studio ").first ?? ""
        XCTAssertEqual(logValue(studio, "frames"), String(frames), studio)
        let refused = logLines(log, "event=destination.failed name=locked ")
        XCTAssertGreaterThanOrEqual(refused.count, 2, log)
        XCTAssertTrue(refused.first?.contains("Incorrect passphrase") == true, String(refused.first ?? ""))
    }

    /// A studio that pulls: onair listens (mode=listener) and FFmpeg calls it once the
    /// stream is live; it gets the stream from an IDR, every picture onair says it sent,
    /// decoded without a word.
    func testAnSRTListenerLetsAStudioPullTheStream() throws {
        let port = try NginxOrigin.freePort()
        let out = try temporaryDirectory("srt-listener")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), [
            "run", "--source", "synthetic", "--listen", "off", "--out", out, "--duration", "8",
            "--set", "video.quality=medium", "--set", "webrtc.port=off", "--set", "rtsp.port=off",
            "--set", "destination.studio.url=srt://127.0.0.1:\(port)?mode=listener",
        ])
        XCTAssertNotNil(onair.waitForLog("event=destination.connecting name=studio "), onair.stderr)
        XCTAssertTrue(waitForUDPPort(port), "onair listens\n" + onair.stderr)
        let received = out + "/pulled.ts"
        let studio = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", "srt://127.0.0.1:\(port)?mode=caller", "-c", "copy", "-f", "mpegts", received],
                                 seconds: 60)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let log = onair.stderr
        let ended = try XCTUnwrap(logLines(log, "event=destination.ended name=studio ").first, log)
        XCTAssertEqual(logValue(ended, "dropped"), "0", "what waited while it listened is not sent, nor counted")
        let frames = try XCTUnwrap(Int(logValue(ended, "frames") ?? ""), ended)
        XCTAssertGreaterThan(frames, 60, ended)
        XCTAssertEqual(try videoFrames(received), frames, studio.stderr)
        let decoded = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", received, "-f", "null", "-"])
        XCTAssertEqual(decoded.stderr, "", "ffmpeg decodes it without a word")
    }

    /// A platform that takes less than the top rung gets a lower rung of the ladder from
    /// the same encoders (`rung`): with `video.ladder=auto`, one destination takes the top
    /// rung and one the second; a third asks for a rung the ladder does not have, is told
    /// so at the start and takes the lowest. When the heat leaves the top rung out, the
    /// top's destination goes on with the second rung from its IDR (a new sequence header:
    /// FFmpeg decodes both sizes without a word), and each destination has every picture
    /// of the stream.
    func testADestinationTakesItsRungOfTheLadderAndTheNextWhileTheHeatLeavesItOut() throws {
        let nginx = try NginxRTMP()
        defer { nginx.stop() }
        let out = try temporaryDirectory("destination-rungs")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let sensor = out + "-temp"
        try "40000\n".write(toFile: sensor, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: sensor) }
        let onair = try Child(onairBinary(), [
            "run", "--source", "synthetic", "--listen", "off", "--out", out,
            // 854x480 and 640x360; the cost check must not leave the top rung out here.
            "--set", "video.quality=low", "--set", "video.ladder=auto", "--set", "performance.capacity.x264=30M", "--set", "record.enabled=off",
            "--set", "thermal.sensor=\(sensor)", "--set", "thermal.dwell_s=1", "--set", "webrtc.port=off", "--set", "rtsp.port=off",
            "--set", "destination.top.url=rtmp://127.0.0.1:\(nginx.port)/live/top",
            "--set", "destination.second.url=rtmp://127.0.0.1:\(nginx.port)/live/second", "--set", "destination.second.rung=2",
            "--set", "destination.third.url=rtmp://127.0.0.1:\(nginx.port)/live/third", "--set", "destination.third.rung=3",
        ])
        XCTAssertNotNil(onair.waitForLog("event=destination.live name=top "), onair.stderr)
        sleep(3)  // the top rung for a while
        try "90000\n".write(toFile: sensor, atomically: true, encoding: .utf8)
        XCTAssertNotNil(onair.waitForLog("event=stream.rungs "), onair.stderr)
        sleep(2)  // the second for a while
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let log = onair.stderr
        XCTAssertTrue(logLines(log, "event=destination.unsuited name=third ").first?
            .contains("rung 3, but video.ladder has 2 rungs: it sends the lowest") == true, log)
        let ended = try XCTUnwrap(logLines(log, "event=stream.ended").first, log)
        let frames = try XCTUnwrap(Int(logValue(ended, "frames") ?? ""), ended)

        /// The height of each picture of the one broadcast nginx-rtmp recorded for `name`.
        func heights(_ name: String) throws -> [Int] {
            let files = nginx.files(name)
            XCTAssertEqual(files.count, 1, "\(name): one broadcast\n\(nginx.log)")
            guard let file = files.first else { return [] }
            let decoded = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "null", "-"])
            XCTAssertEqual(decoded.stderr, "", "\(name): ffmpeg decodes it without a word")
            let probed = try runTool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=height",
                                                         "-of", "csv=p=0", file])
            // A frame with side data has more fields after its height.
            return String(decoding: probed.stdout, as: UTF8.self).split(separator: "\n").compactMap { $0.split(separator: ",").first.flatMap { Int($0) } }
        }
        let top = try heights("top")
        XCTAssertEqual(top.count, frames, "top: every picture")
        let runs = zip(top, top.dropFirst()).filter { $0 != $1 }.map { "\($0)→\($1)" }
        XCTAssertEqual(runs, ["480→360"], "top: its own rung, then the second from the drop on")
        for name in ["second", "third"] {
            let heights = try heights(name)
            XCTAssertEqual(heights.count, frames, "\(name): every picture")
            XCTAssertEqual(Set(heights), [360], "\(name): the second rung throughout")
        }
    }

    /// A key the server refuses (nginx-rtmp's on_publish asks a test server, which says
    /// 403 to it), a host that does not resolve, a server that stops reading and an RTMPS
    /// one whose connection is cut: each says what happened in one line and tries again,
    /// while an RTMP and an SRT destination beside them, the HTTP origin and the
    /// recording lose nothing.
    func testFaultyDestinationsTouchNothingElse() throws {
        let keys = try RecordingServer(status: { String(decoding: $0.body, as: UTF8.self).contains("name=goodkey") ? 200 : 403 })
        defer { keys.stop() }
        let nginx = try NginxRTMP(tls: true, keyCheck: keys.port)
        defer { nginx.stop() }
        let stalled = try TCPFaultProxy(upstream: nginx.port)
        defer { stalled.stop() }
        let cut = try TCPFaultProxy(upstream: try XCTUnwrap(nginx.tlsPort))
        defer { cut.stop() }
        let srtPort = try NginxOrigin.freePort()
        let received = try temporaryDirectory("destination-faults-srt") + "/received.ts"
        defer { try? FileManager.default.removeItem(atPath: (received as NSString).deletingLastPathComponent) }
        let srt = try Child("/usr/bin/ffmpeg", ["-v", "error", "-i", "srt://127.0.0.1:\(srtPort)?mode=listener", "-c", "copy", "-f", "mpegts", received])
        XCTAssertTrue(waitForUDPPort(srtPort), "FFmpeg listens")
        let origin = try NginxOrigin()
        defer { origin.stop() }
        let out = try temporaryDirectory("destination-faults")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), [
            "run", "--source", "synthetic", "--listen", "127.0.0.1:0", "--out", out, "--duration", "24",
            "--set", "video.quality=low", "--set", "webrtc.port=off", "--set", "rtsp.port=off",
            "--set", "publish.url=http://127.0.0.1:\(origin.port)/live/", "--set", "device.name=cam1",
            "--set", "destination.good.url=rtmp://127.0.0.1:\(nginx.port)/keyed/goodkey",
            "--set", "destination.wrongkey.url=rtmp://127.0.0.1:\(nginx.port)/keyed", "--set", "destination.wrongkey.key=badkey",
            "--set", "destination.nohost.url=rtmp://no-such-host.invalid/live/x",
            "--set", "destination.stalled.url=rtmp://127.0.0.1:\(stalled.port)/live/stalled",
            "--set", "destination.cut.url=rtmps://localhost:\(cut.port)/live/cut",
            "--set", "destination.srt.url=srt://127.0.0.1:\(srtPort)",
        ], environment: ["SSL_CERT_FILE": nginx.caFile])
        let port = try onair.listeningPort()
        XCTAssertNotNil(onair.waitForLog("event=destination.live name=stalled "), onair.stderr)
        stalled.mode = .stall
        // What /api/status and /metrics say meanwhile: each destination, by name.
        XCTAssertNotNil(onair.waitForLog("event=destination.live name=good "), onair.stderr)
        XCTAssertNotNil(onair.waitForLog("event=destination.failed name=nohost "), onair.stderr)
        let status = try apiStatus(port: port)
        let listed = try XCTUnwrap(status["destinations"] as? [[String: Any]], "\(status)")
        XCTAssertEqual(listed.compactMap { $0["name"] as? String }, ["cut", "good", "nohost", "srt", "stalled", "wrongkey"])
        let byName = Dictionary(uniqueKeysWithValues: listed.map { ($0["name"] as? String ?? "", $0) })
        XCTAssertEqual(byName["good"]?["state"] as? String, "live", "\(listed)")
        XCTAssertEqual(byName["good"]?["kind"] as? String, "rtmp")
        XCTAssertEqual(byName["good"]?["rung"] as? Int, 1, "the top rung, counted from 1 as onair.conf does")
        XCTAssertTrue([nil, 1].contains(byName["good"]?["rung_sent"] as? Int), "\(listed)")
        XCTAssertEqual(byName["cut"]?["kind"] as? String, "rtmps")
        XCTAssertEqual(byName["srt"]?["kind"] as? String, "srt")
        XCTAssertTrue((byName["nohost"]?["last_error"] as? String)?.contains("cannot resolve") == true, "\(listed)")
        XCTAssertTrue(["retrying", "connecting"].contains(byName["nohost"]?["state"] as? String ?? ""), "\(listed)")
        let metrics = String(decoding: try HTTPClient.request(port: port, "/metrics").body, as: UTF8.self)
        XCTAssertTrue(metrics.contains("onair_destination_live{device=\"cam1\",destination=\"good\"} 1"), metrics)
        XCTAssertTrue(metrics.contains("onair_destination_live{device=\"cam1\",destination=\"nohost\"} 0"), metrics)
        XCTAssertNotNil(onair.waitForLog("event=destination.live name=cut "), onair.stderr)
        usleep(4_000_000)
        cut.cut()
        XCTAssertNotNil(onair.waitForLog("event=destination.failed name=cut ", seconds: 10), onair.stderr)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let log = onair.stderr
        func lines(_ event: String, _ name: String) -> [String] { logLines(log, "event=destination.\(event) name=\(name) ") }
        XCTAssertFalse(log.contains("badkey") || log.contains("goodkey"), "keys are never logged")

        let wrongKey = lines("failed", "wrongkey")
        XCTAssertGreaterThanOrEqual(wrongKey.count, 2, log)
        XCTAssertTrue(wrongKey.first?.contains("is the stream key right?") == true, wrongKey.first ?? "")
        XCTAssertTrue(lines("failed", "nohost").first?.contains("cannot resolve no-such-host.invalid") == true, log)
        // The stalled server: pictures dropped to the next IDR, then given up, and tried again.
        XCTAssertFalse(lines("dropped", "stalled").isEmpty, log)
        XCTAssertTrue(lines("failed", "stalled").contains { $0.contains("stopped reading") || $0.contains("did not take the stream") }, log)
        XCTAssertGreaterThanOrEqual(stalled.connections, 2, "tried again")
        // The cut: said, and live again on a new connection.
        XCTAssertTrue(lines("failed", "cut").first?.contains("closed the connection") == true, log)
        XCTAssertGreaterThanOrEqual(lines("live", "cut").count, 2, log)
        XCTAssertEqual(nginx.files("cut").count, 2, nginx.log)

        // Beside them: the good destination got every picture, the recording and the origin
        // every segment.
        let ended = try XCTUnwrap(logLines(log, "event=stream.ended").first, log)
        let frames = try XCTUnwrap(Int(logValue(ended, "frames") ?? ""), ended)
        let good = try XCTUnwrap(lines("ended", "good").first, log)
        XCTAssertEqual(logValue(good, "frames"), String(frames), good)
        XCTAssertEqual(logValue(good, "dropped"), "0", good)
        let file = try XCTUnwrap(nginx.files("goodkey").first, nginx.log)
        XCTAssertEqual(try videoFrames(file), frames)
        _ = srt.wait(seconds: 30)
        // Six destinations connect at once here: the SRT one may go live after the first
        // IDR, and begin at the next; the listener gets every picture onair sent it.
        let srtEnded = try XCTUnwrap(lines("ended", "srt").first, log)
        XCTAssertEqual(logValue(srtEnded, "dropped"), "0", srtEnded)
        let srtFrames = try XCTUnwrap(logValue(srtEnded, "frames"))
        XCTAssertGreaterThan(Int(srtFrames) ?? 0, frames - 60, srtEnded)
        XCTAssertEqual(try videoFrames(received).map(String.init), srtFrames)
        let recording = try XCTUnwrap(logLines(log, "event=recording.ended").first, log)
        XCTAssertEqual(logValue(recording, "frames"), String(frames), recording)
        XCTAssertTrue(log.contains("event=publish.drained"), log)
        try assertOriginMatches(out, origin, prefix: "live/cam1/")
    }

    /// The pictures ffprobe decodes in `file` (a transport stream lists its streams under
    /// its program too: the first count).
    func videoFrames(_ file: String) throws -> Int? {
        let counted = try runTool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                                                       "stream=nb_read_frames", "-of", "csv=p=0", file])
        return String(decoding: counted.stdout, as: UTF8.self).split(separator: "\n").first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }
}
