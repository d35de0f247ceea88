import Foundation
import XCTest
import Devices
import HLS
import TestSupport

/// The talk's start-up order and responsive capture, through the onair binary in real
/// time: camera and preview first, then everything else, and no frame lost to a start
/// that came before the encoders existed.
final class StartupTests: XCTestCase {
    func times(_ log: String, _ events: [String]) -> [Double] {
        events.map { event in
            log.split(separator: "\n").first { $0.contains("event=\(event) ") || $0.hasSuffix("event=\(event)") }
                .flatMap { logValue(String($0), "t_ms") }.flatMap(Double.init) ?? -1
        }
    }

    /// The index band of the first picture of the stream under `out`.
    func firstFrameIndex(_ out: String) throws -> UInt32? {
        let ids = try FileManager.default.contentsOfDirectory(atPath: out + "/streams")
        let frame = out + "/first.gray"
        XCTAssertEqual(try runBinaryTool("/usr/bin/ffmpeg", ["-v", "error", "-i", out + "/streams/\(ids[0])/index.m3u8", "-frames:v", "1",
                                                             "-f", "rawvideo", "-pix_fmt", "gray", "-"], output: frame).status, 0)
        let luma = Array(try Data(contentsOf: URL(fileURLWithPath: frame)))
        return luma.withUnsafeBufferPointer { SyntheticPattern.decodeIndex(luma: $0, width: 854, height: 480) }
    }

    func testPreviewFirstThenTheRestAndTheStreamStillStartsAtFrameZero() throws {
        let out = try temporaryDirectory("deferred")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--duration", "2", "--listen", "127.0.0.1:0",
                                              "--out", out, "--set", "video.quality=low"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let events = ["camera.first_frame", "preview.first_frame", "deferred_start.began", "encoder.ready", "server.listening",
                      "deferred_start.done"]
        let t = times(onair.stderr, events)
        XCTAssertFalse(t.contains(-1), onair.stderr)
        XCTAssertEqual(t, t.sorted(), "in the talk's order: \(zip(events, t).map { "\($0)=\($1)" })")
        // The two start-up times, for the console and the system test.
        let done = onair.stderr.split(separator: "\n").first { $0.contains("event=deferred_start.done") }.map(String.init) ?? ""
        XCTAssertNotNil(done.range(of: #"first_frame_ms=[0-9.]+ done_ms=[0-9.]+"#, options: .regularExpression), done)
        XCTAssertEqual(try firstFrameIndex(out), 0, "--start now: the camera's first frame, held while the encoders opened")
    }

    /// startup.deferred = manual: only the preview runs until the call (SIGUSR1); frames
    /// from before it wait in the start-up buffer, which keeps the newest second.
    func testManualStartWaitsForTheCallAndKeepsTheNewestBufferedFrames() throws {
        let out = try temporaryDirectory("manual")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--duration", "2", "--listen", "off", "--out", out,
                                              "--set", "video.quality=low", "--set", "startup.deferred=manual",
                                              "--set", "startup.buffer_seconds=1"])
        XCTAssertNotNil(onair.waitForLog("event=deferred_start.waiting"), onair.stderr)
        Thread.sleep(forTimeInterval: 2)
        XCTAssertFalse(onair.stderr.contains("encoder.ready"), "nothing but the preview before the call")
        XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: out + "/streams"))?.count ?? 0, 0)
        onair.signal(SIGUSR1)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let buffer = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=startup.buffer") }.map(String.init))
        let dropped = try XCTUnwrap(logValue(buffer, "dropped_frames").flatMap(UInt32.init))
        XCTAssertEqual(logValue(buffer, "held_frames"), "30", "one second at 30 fps")
        XCTAssertGreaterThan(dropped, 30)
        XCTAssertEqual(try firstFrameIndex(out), dropped, "the stream starts at the oldest frame still held")
    }

    /// performance.overload: a session the encoders cannot sustain is lowered (the
    /// recording first) or refused in one line, before it starts.
    func testAnOverloadIsLoweredOrRefusedBeforeTheStart() throws {
        let out = try temporaryDirectory("overload")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let common = ["run", "--source", "synthetic", "--pace", "fast", "--duration", "1", "--listen", "off", "--out", out,
                      "--set", "video.quality=low", "--set", "record.width=1920", "--set", "record.height=1080",
                      "--set", "performance.capacity.x264=30M"]
        let lowered = try Child(onairBinary(), common)
        XCTAssertEqual(lowered.wait().status, 0, lowered.stderr)
        XCTAssertTrue(lowered.stderr.contains("event=performance.cost cost=2.48 "), lowered.stderr)
        XCTAssertTrue(lowered.stderr.contains("level=warn event=performance.lowered changes=\"recording to 854x480\" cost=0.82"), lowered.stderr)
        XCTAssertTrue(lowered.stderr.contains("event=recording.started") && lowered.stderr.contains("width=854 height=480 fps=30 bitrate=5000000"))
        let refused = try Child(onairBinary(), common + ["--set", "performance.overload=refuse"])
        XCTAssertEqual(refused.wait().status, 2)
        let errors = refused.stderr.split(separator: "\n").filter { !$0.hasPrefix("t_ms=") }
        XCTAssertEqual(errors.count, 1, refused.stderr)
        XCTAssertTrue(errors.first?.hasPrefix("onair: encoding would cost 2.48 of what the encoders sustain (live 854x480@30 on x264 + recording 1920x1080@30 on x264); lower the recording") ?? false, refused.stderr)
    }

    /// record.preroll_seconds = 3, a press at about 10 s: the stream and the recording both
    /// begin at the IDR at or before the press − 3 s (IDRs every 60 frames), and hold the
    /// same frames.
    func testPrerollBeginsAtTheIDRAtOrBeforeThePressMinusN() throws {
        let out = try temporaryDirectory("preroll")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--duration", "2", "--listen", "off", "--out", out,
                                              "--set", "video.quality=low", "--start", "button", "--set", "record.preroll_seconds=3"],
                              stdin: true)
        XCTAssertNotNil(onair.waitForLog("event=deferred_start.done"), onair.stderr)
        Thread.sleep(forTimeInterval: 10)
        onair.send("")
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let used = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=preroll.used output=live") }.map(String.init))
        let press = try XCTUnwrap(logValue(used, "press_frame").flatMap(UInt32.init))
        let first = try XCTUnwrap(try firstFrameIndex(out))
        XCTAssertEqual(first % 60, 0, "an IDR of the armed encoder's 2 s grid")
        XCTAssertLessThanOrEqual(first, press - 90)
        XCTAssertLessThan(press - 90, first + 60, "the last IDR at or before press − 3 s")
        XCTAssertEqual(logValue(used, "frames_before"), String(press - first))
        let stream = try FileManager.default.contentsOfDirectory(atPath: out + "/streams")[0]
        let directory = out + "/streams/" + stream
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
        let ended = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=stream.ended") }.map(String.init))
        let recorded = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=recording.ended") }.map(String.init))
        XCTAssertEqual(logValue(ended, "frames"), logValue(recorded, "frames"), "the recording holds the same frames")
        XCTAssertEqual(logValue(ended, "frames"), String(press - first + 60), "pre-roll, then 2 s")
        XCTAssertEqual(logValue(ended, "silence_samples"), "0", "the sound runs on through the press")
    }
}
