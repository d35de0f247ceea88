import Foundation
import XCTest
import Devices
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
}
