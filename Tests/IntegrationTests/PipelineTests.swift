import Foundation
import XCTest
import Devices
import HLS
import TestSupport

/// The real pipeline, end to end, through the onair binary: synthetic camera and mic →
/// libavcodec → Swift fMP4/HLS → files, decoded back by ffmpeg and measured with the
/// synthetic source's own frame index and flash/beep marks.
final class PipelineTests: XCTestCase {
    func streamDirectory(_ out: String) throws -> String {
        let ids = try FileManager.default.contentsOfDirectory(atPath: out + "/streams").sorted()
        XCTAssertEqual(ids.count, 1, "one stream")
        return out + "/streams/" + (ids.last ?? "")
    }

    func testTwelveSecondsFastDecodeEveryFrameAndMeasureSync() throws {
        let out = try temporaryDirectory("fast")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--pace", "fast", "--duration", "12",
                                              "--out", out, "--listen", "off"])
        let result = onair.wait()
        XCTAssertEqual(result.status, 0, onair.stderr)
        let ended = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=stream.ended") }.map(String.init))
        XCTAssertEqual(logValue(ended, "segments"), "6")
        XCTAssertEqual(logValue(ended, "duration"), "12.000")
        for event in ["source.started", "encoder.selected", "stream.started", "segment.stored"] {
            XCTAssertTrue(onair.stderr.contains("event=\(event)"), "log has \(event)")
        }
        let stream = try streamDirectory(out)
        XCTAssertEqual(checkerFindings(stream), [], "our own checker of HLS_RULES.md")

        // The packager is deterministic: the samples taken back out of the stream and
        // packaged again (onair-bench, the same Segmenter and writer) give the same bytes.
        let repackaged = out + "/repackaged"
        let bench = try runTool(URL(fileURLWithPath: onairBinary()).deletingLastPathComponent().appendingPathComponent("onair-bench").path,
                                ["package", stream, repackaged])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        for n in 1...6 {
            let name = "seg/" + String(repeating: "0", count: 5) + "\(n).m4s"
            XCTAssertEqual(FileManager.default.contents(atPath: "\(repackaged)/streams/bench/\(name)"),
                           FileManager.default.contents(atPath: "\(stream)/\(name)"), name)
        }
        XCTAssertEqual(FileManager.default.contents(atPath: repackaged + "/streams/bench/init.mp4"),
                       FileManager.default.contents(atPath: stream + "/init.mp4"))

        // ffmpeg decodes every frame without a word of complaint.
        let decode = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", stream + "/index.m3u8", "-f", "null", "-"])
        XCTAssertEqual(decode.status, 0)
        XCTAssertEqual(decode.stderr, "", "ffmpeg reports nothing")

        // The I-frame playlist: each range, after init.mp4, is one segment's opening IDR,
        // which decodes to that segment's first frame (every 60th).
        XCTAssertEqual(try iFrameIndices(stream, scratch: out + "/iframe"), [0, 60, 120, 180, 240, 300])

        let live = try measure(stream + "/index.m3u8", scratch: out + "/live", firstAudioFrame: nil)
        XCTAssertEqual(live.indices.count, 360, "12 s at 30 fps")
        XCTAssertEqual(live.indices.first, 0, "--start now records from the camera's first frame")
        XCTAssertEqual(live.indices, (0..<360).map { UInt32($0) }, "continuous frame indices")
        XCTAssertEqual(live.flashFrames.count, 12)
        XCTAssertEqual(live.flashFrames.map { $0 % 30 }, Array(repeating: 0, count: live.flashFrames.count))
        XCTAssertEqual(live.pts.first ?? 0, 10.0, accuracy: 0.0001, "the stream starts at 10 s")
        XCTAssertEqual(live.audioStart, 10.0 - 1024.0 / 48_000, accuracy: 0.0001, "audio starts earlier by the AAC priming")
        XCTAssertEqual(live.onsets.count, live.flashFrames.count, "one beep per flash")
        for (flash, onset) in zip(live.flashFrames, live.onsets) {
            XCTAssertEqual(onset, live.pts[flash], accuracy: 1.0 / 30, "A/V offset within one video frame")
        }

        // The local recording holds the very same frames, in a progressive MP4 that starts
        // at 0 with its audio priming cut by the edit list, in sync the same way.
        let recordings = try FileManager.default.contentsOfDirectory(atPath: out + "/recordings").sorted()
        XCTAssertEqual(recordings, [URL(fileURLWithPath: stream).lastPathComponent + ".json", URL(fileURLWithPath: stream).lastPathComponent + ".mp4"],
                       "one finished recording with the stream's id, no .part left")
        let file = out + "/recordings/" + recordings[1]
        let recordingDecode = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "null", "-"])
        XCTAssertEqual(recordingDecode.stderr, "", "ffmpeg reports nothing")
        let recorded = try measure(file, scratch: out + "/recorded", firstAudioFrame: 0)
        XCTAssertEqual(recorded.indices, live.indices, "frame count and frames equal the live stream's")
        XCTAssertEqual(recorded.pts.first ?? 1, 0, accuracy: 0.0001)
        XCTAssertEqual(recorded.onsets.count, recorded.flashFrames.count)
        for (flash, onset) in zip(recorded.flashFrames, recorded.onsets) {
            XCTAssertEqual(onset, recorded.pts[flash], accuracy: 1.0 / 30, "A/V offset within one video frame")
        }
        let recordingEnded = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=recording.ended") }.map(String.init))
        XCTAssertEqual(logValue(recordingEnded, "frames"), "360")
        XCTAssertNotNil(logValue(recordingEnded, "write_ms_p99"), "write latency is reported")
    }

    /// A power cut (kill -9) mid-recording: the next start finalises the `.part` into a
    /// playable MP4 from its complete fragments, missing at most the last second, and
    /// lists it in /api/recordings.
    func testKillNineMidRecordingThenTheNextStartFinalisesIt() throws {
        let out = try temporaryDirectory("reckill")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--listen", "off", "--out", out,
                                              "--set", "video.quality=low"])
        XCTAssertNotNil(onair.waitForLog("seq=3 "), onair.stderr)
        let recorded = onair.stderr.split(separator: "\n").filter { $0.contains("event=segment.stored") }.count
        onair.signal(SIGKILL)
        _ = onair.wait()
        let parts = try FileManager.default.contentsOfDirectory(atPath: out + "/recordings").filter { $0.hasSuffix(".mp4.part") }
        XCTAssertEqual(parts.count, 1, "the crash leaves the recording as .part")

        let port = try NginxOrigin.freePort()
        let next = try Child(onairBinary(), ["run", "--source", "synthetic", "--out", out, "--listen", "127.0.0.1:\(port)",
                                             "--set", "video.quality=low", "--set", "session.start=button"])
        defer { next.signal(SIGTERM); _ = next.wait() }
        let recovered = try XCTUnwrap(next.waitForLog("event=recording.recovered"), next.stderr)
        let seconds = try XCTUnwrap(logValue(recovered, "seconds").flatMap(Double.init))
        // At the kill, at least `recorded` live segments (2 s each) were captured; the
        // recording lost at most its last second (plus what its encoder still held).
        XCTAssertGreaterThanOrEqual(seconds, Double(recorded * 2) - 1.5, recovered)
        let id = String(parts[0].dropLast(".mp4.part".count))
        let file = out + "/recordings/\(id).mp4"
        let decode = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "null", "-"])
        XCTAssertEqual(decode.status, 0)
        XCTAssertEqual(decode.stderr, "", "ffmpeg reports nothing")
        XCTAssertFalse(FileManager.default.fileExists(atPath: out + "/recordings/" + parts[0]))
        _ = next.waitForLog("event=server.listening")
        let listing = try HTTPClient.request(port: port, "/api/recordings")
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(listing.body)) as? [String: Any])
        let entries = try XCTUnwrap(json["recordings"] as? [[String: Any]])
        XCTAssertEqual(entries.map { $0["id"] as? String }, [id])
        XCTAssertEqual(entries.first?["file"] as? String, "\(id).mp4")
        let download = try HTTPClient.request(port: port, "/recordings/\(id).mp4", headers: ["Range": "bytes=4-7"])
        XCTAssertEqual(download.status, 206)
        XCTAssertEqual(download.body, Array("ftyp".utf8), "moov-first MP4: ftyp at the start")
    }

    /// record.codec = hevc: from hardware when an HEVC encoder opens, else H.264, said in the
    /// log (this machine has no HEVC encoder block; HEVCSampleTests checks the HEVC writer).
    func testHEVCRecordingsFallBackToH264WithoutAnHEVCEncoder() throws {
        let out = try temporaryDirectory("hevc")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let common = ["run", "--source", "synthetic", "--pace", "fast", "--duration", "2", "--listen", "off", "--out", out,
                      "--set", "video.quality=low", "--set", "record.codec=hevc"]
        let fallback = try Child(onairBinary(), common)
        XCTAssertEqual(fallback.wait().status, 0, fallback.stderr)
        XCTAssertTrue(fallback.stderr.contains("event=record.codec requested=hevc using=h264 reason="), fallback.stderr)
        let files = try FileManager.default.contentsOfDirectory(atPath: out + "/recordings").filter { $0.hasSuffix(".mp4") }
        XCTAssertEqual(files.count, 1, "\(files)")
        let probe = try runTool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name",
                                                     "-of", "csv=p=0", out + "/recordings/" + files[0]])
        XCTAssertEqual(String(decoding: probe.stdout, as: UTF8.self), "h264\n")
    }

    func testPortraitStreamFromARotatedCamera() throws {
        let out = try temporaryDirectory("rotated")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--pace", "fast", "--duration", "4",
                                              "--out", out, "--listen", "off", "--set", "video.quality=low", "--set", "video.rotation=90"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let stream = try streamDirectory(out)
        XCTAssertEqual(checkerFindings(stream), [])
        let index = try String(contentsOfFile: stream + "/index.m3u8", encoding: .utf8)
        XCTAssertTrue(index.contains("RESOLUTION=480x854"), index)
        let probe = try runTool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                                                     "-of", "csv=p=0", stream + "/index.m3u8"])
        XCTAssertEqual(String(decoding: probe.stdout, as: UTF8.self).split(separator: "\n").first, "480,854")
    }

    /// A nonsense NTP server in time.servers is one clear line; the run goes on. (Whether
    /// this machine's clock is synchronised is its own affair: the stream is valid either way.)
    func testANonsenseTimeServerIsOneLineAndTheRunGoesOn() throws {
        let out = try temporaryDirectory("time")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--pace", "fast", "--duration", "2", "--out", out,
                                              "--listen", "off", "--set", "video.quality=low", "--set", "time.servers=10.0.2.2 not!a-host"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let lines = onair.stderr.split(separator: "\n").filter { $0.contains("event=config.ignored") }
        XCTAssertEqual(lines.count, 1, onair.stderr)
        XCTAssertTrue(lines.first?.contains("--set: time.servers: 'not!a-host' is not a host name or an IP address; left out") ?? false,
                      String(lines.first ?? ""))
        XCTAssertTrue(onair.stderr.contains("event=clock synchronized="), "the clock's trust is logged at the start")
        XCTAssertEqual(checkerFindings(try streamDirectory(out)), [])
    }

    /// A disk that never has room enough: older streams are deleted (unpublished ones with
    /// an error event), the stream being recorded is kept and comes out whole.
    func testAFullDiskCostsOldStreamsNotTheRecording() throws {
        let out = try temporaryDirectory("full")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let common = ["run", "--source", "synthetic", "--pace", "fast", "--listen", "off", "--out", out, "--set", "video.quality=low"]
        XCTAssertEqual(try Child(onairBinary(), common + ["--duration", "2"]).wait().status, 0)
        let old = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/streams").first)
        let onair = try Child(onairBinary(), common + ["--duration", "4", "--set", "storage.min_free=1000T"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(onair.stderr.contains("event=storage.deleted_unpublished id=\(old)"), onair.stderr)
        XCTAssertTrue(onair.stderr.contains("level=error event=storage.low"), onair.stderr)
        let left = try FileManager.default.contentsOfDirectory(atPath: out + "/streams")
        XCTAssertEqual(left.count, 1)
        XCTAssertNotEqual(left.first, old)
        XCTAssertEqual(checkerFindings(out + "/streams/" + left[0]), [])
    }

    /// audio.enabled = auto: a capture device that does not open means a video-only
    /// stream, said with a warning, not a failure.
    func testAMissingMicrophoneWithAudioAutoRecordsVideoOnly() throws {
        let out = try temporaryDirectory("noaudio")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--pace", "fast", "--duration", "2", "--listen", "off",
                                              "--out", out, "--set", "video.quality=low", "--set", "audio.device=nosuchpcm"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(onair.stderr.contains("level=warn event=audio.unavailable"), onair.stderr)
        let stream = try streamDirectory(out)
        XCTAssertEqual(checkerFindings(stream), [])
        let index = try String(contentsOfFile: stream + "/index.m3u8", encoding: .utf8)
        XCTAssertFalse(index.contains("mp4a"), "no audio track is declared")
    }

    /// A button line that is no GPIO chip's, a tally chip that is not there, an input
    /// device that is missing and a sensor that cannot be read: the appliance comes up
    /// and records all the same, says each once (why, and what still works), and lists
    /// them in /api/status (issue 33: such a board used to exit and restart for good).
    func testDevicesThatCannotBeHadDoNotStopTheAppliance() throws {
        let (onair, port, out) = try serveSynthetic("unavailable", [
            "button.gpio=/dev/null:3", "tally.gpio=gpiochip99:4", "button.input=/dev/input/event99", "thermal.sensor=/nonexistent/temp",
            "server.token=operator-token-0123456"])
        defer { onair.signal(SIGTERM); onair.wait() }
        var unavailable: [[String: Any]] = []
        for _ in 0..<100 where unavailable.count < 4 {
            let status = try HTTPClient.request(port: port, "/api/status")
            unavailable = (try JSONSerialization.jsonObject(with: Data(status.body)) as? [String: Any])?["unavailable"] as? [[String: Any]] ?? []
            usleep(100_000)
        }
        let problems = Dictionary(uniqueKeysWithValues: unavailable.map { ($0["key"] as? String ?? "", ($0["device"] as? String ?? "") + ": " + ($0["problem"] as? String ?? "")) })
        XCTAssertEqual(problems, ["button.gpio": "/dev/null:3: not a GPIO chip",
                                  "tally.gpio": "gpiochip99:4: no such GPIO chip (gpiodetect lists the board's)",
                                  "button.input": "/dev/input/event99: no such device",
                                  "thermal.sensor": "/nonexistent/temp: cannot be read as millidegrees"], onair.stderr)
        let said = onair.stderr.split(separator: "\n").filter { $0.contains("event=device.unavailable") }
        XCTAssertEqual(said.count, 4, "each once: \(said)")
        XCTAssertTrue(said.contains { $0.contains("key=button.gpio") && $0.contains("meanwhile=\"keys (/dev/input/event99), POST /api/record/start\"") }, "\(said)")
        // Recording goes on as ever.
        XCTAssertEqual(try HTTPClient.request(port: port, "/api/record/stop", method: "POST", headers: ["Authorization": "Bearer operator-token-0123456"]).status, 200)
        _ = try waitForStreams(port) { ($0.first?["segments"] as? Int ?? 0) >= 1 }
        XCTAssertTrue(FileManager.default.fileExists(atPath: out + "/streams"))
    }

    /// `onair selftest` on this machine: x264 encodes its ten frames; the hardware this
    /// machine lacks (a VA-API GPU, a V4L2 codec, a screen) is ABSENT, not failed.
    func testSelftestPassesWhatIsHereAndSaysWhatIsAbsent() throws {
        let child = try Child(onairBinary(), ["selftest", "--seconds", "1"])
        let result = child.wait()
        XCTAssertEqual(result.status, 0, child.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.hasPrefix("selftest: PASS encoder x264: 10 frames 1280x720 by libx264, the first an IDR") }, "\(lines)")
        for name in ["encoder vaapi", "encoder v4l2m2m", "display"] {
            XCTAssertTrue(lines.contains { $0.hasPrefix("selftest: PASS \(name)") || $0.hasPrefix("selftest: ABSENT \(name)") }, "\(name): \(lines)")
        }
        XCTAssertTrue(lines.last?.hasPrefix("selftest: ") ?? false && lines.last?.contains(" 0 failed, ") ?? false, "\(lines)")
    }

    func testBadInputGetsOneLineAndExitStatus2() throws {
        let cases: [([String], String)] = [
            (["run", "--duration", "soon"], "onair: --duration: expected seconds"),
            (["run", "--frobnicate"], "onair: unknown flag '--frobnicate'"),
            (["run", "--config", "/nonexistent/onair.conf"], "onair: --config /nonexistent/onair.conf: cannot read the file"),
            (["run", "--set", "video.fps=0"], "onair: --set: video.fps: expected an integer in 1…240, got '0'"),
            (["validate", "/nonexistent"], "onair: validate: /nonexistent/index.m3u8 does not exist"),
            (["run", "--listen", "off", "--source", "synthetic", "--set", "audio.device=nosuchpcm", "--set", "audio.enabled=on"],
             "onair: audio device nosuchpcm: cannot open: "),
            // A device that is no camera: the real ioctl path answers, and says which call.
            (["run", "--listen", "off", "--source", "v4l2", "--set", "video.device=/dev/null"],
             "onair: /dev/null: VIDIOC_QUERYCAP: Inappropriate ioctl for device"),
            (["run", "--set", "video.device=video0"], "onair: --set: video.device: expected auto or a device path"),
            (["run", "--set", "button.gpio=gpiochip0"], "onair: --set: button.gpio: expected off or a line such as gpiochip0:17"),
            (["selftest", "--seconds", "99"], "onair: selftest: --seconds expects a whole number of seconds from 0 to 60, got '99'"),
            (["run", "--set", "button.keys=KEY_NOPE"], "onair: --set: button.keys: expected key names"),
            (["run", "--set", "thermal.fps_steps=30,fast"], "onair: --set: thermal.fps_steps: expected frame rates"),
            (["run", "--listen", "off", "--source", "synthetic", "--set", "preview.device=/dev/null"],
             "onair: preview.device /dev/null: not a KMS display")
        ]
        for (arguments, message) in cases {
            let child = try Child(onairBinary(), arguments)
            XCTAssertEqual(child.wait().status, 2, arguments.joined(separator: " "))
            // One error line; any other line is a log event of the run so far (a microphone
            // is opened after the preview is up, so the camera's events come first).
            let lines = child.stderr.split(separator: "\n")
            let errors = lines.filter { !$0.hasPrefix("t_ms=") }
            XCTAssertEqual(errors.count, 1, child.stderr)
            XCTAssertTrue(errors.first?.hasPrefix(message) ?? false, child.stderr)
            XCTAssertEqual(lines.last, errors.first, "the error is the last word")
        }
        let config = try temporaryDirectory("conf") + "/onair.conf"
        try "[video]\nfps = 30\nbogus = 1\n".write(toFile: config, atomically: true, encoding: .utf8)
        let child = try Child(onairBinary(), ["run", "--config", config])
        XCTAssertEqual(child.wait().status, 2)
        XCTAssertEqual(child.stderr, "onair: \(config):3: unknown key 'video.bogus'\n")
    }

    func testValidateReportsABrokenStream() throws {
        let out = try temporaryDirectory("broken")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let files = StreamBuilder.make()
        files["index.m3u8"] = files["index.m3u8"]!.replacingOccurrences(of: ",mp4a.40.2", with: "")
        try FileManager.default.createDirectory(atPath: out + "/seg", withIntermediateDirectories: true)
        for (path, bytes) in files.files { try Data(bytes).write(to: URL(fileURLWithPath: out + "/" + path)) }
        let child = try Child(onairBinary(), ["validate", out])
        let result = child.wait()
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("error C3 index.m3u8:4"), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("\(out): 1 errors, 0 warnings\n"), result.stdout)
    }
}
