import Foundation
import XCTest

/// `onair fetch` as a user runs it against a device: killed with SIGKILL at random points,
/// the same command finishes with the same bytes as a run that was never interrupted.
final class FetchCommandTests: XCTestCase {
    func testKilledAtRandomTheSameCommandFinishesWithTheSameBytes() throws {
        let out = try temporaryDirectory("fetch")
        defer { try? FileManager.default.removeItem(atPath: out) }
        XCTAssertEqual(try Child(onairBinary(), ["run", "--source", "synthetic", "--pace", "fast", "--duration", "30", "--out", out + "/device",
                                                 "--listen", "off", "--set", "video.quality=low", "--set", "hls.segment_seconds=0.5"]).wait().status, 0)
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/device/streams").first)
        // A scratch file an export left when a crash came between making and unlinking it.
        try FileManager.default.createDirectory(atPath: out + "/device/.export", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: out + "/device/.export/.scratch-AbC123", contents: Data([0]))
        let device = try Child(onairBinary(), ["run", "--out", out + "/device", "--listen", "127.0.0.1:0", "--start", "button",
                                               "--set", "record.enabled=off"])
        defer { device.signal(SIGTERM); _ = device.wait() }
        let listening = try XCTUnwrap(device.waitForLog("event=server.listening"), device.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out + "/device/.export/.scratch-AbC123"), "gone at the start")
        let base = try XCTUnwrap(logValue(listening, "url"))  // http://127.0.0.1:<port>/
        let url = base + (base.hasSuffix("/") ? "" : "/") + "streams/\(id)/index.m3u8"

        let whole = try Child(onairBinary(), ["fetch", url, "--out", out + "/whole.mp4"])
        XCTAssertEqual(whole.wait().status, 0, whole.stderr)
        XCTAssertTrue(whole.stderr.contains("fetch: 0:30 of 0:30"), whole.stderr)
        var kills = 0
        for delay in [0.02, 0.04, 0.07, 0.1, 0.15] {
            let fetch = try Child(onairBinary(), ["fetch", url, "--out", out + "/resumed.mp4"])
            usleep(UInt32(delay * Double.random(in: 0.5...1.5) * 1e6))
            fetch.signal(SIGKILL)
            if fetch.wait().status != 0 { kills += 1 }
        }
        let last = try Child(onairBinary(), ["fetch", url, "--out", out + "/resumed.mp4"])
        XCTAssertEqual(last.wait().status, 0, last.stderr)
        XCTAssertGreaterThan(kills, 0, "at least one run was killed before it finished")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: out + "/resumed.mp4")),
                       try Data(contentsOf: URL(fileURLWithPath: out + "/whole.mp4")))
        let bad = try Child(onairBinary(), ["fetch", "ftp://device/x.m3u8"])
        XCTAssertEqual(bad.wait().status, 2)
        XCTAssertEqual(bad.stderr, "onair: fetch: 'ftp://device/x.m3u8' is not an http(s) URL\n")
    }
}
