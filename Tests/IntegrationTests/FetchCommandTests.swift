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

    /// Issue 44: a server that sends a segment without end. `onair fetch` writes each piece
    /// to disk as it comes, refuses the segment at its 64 MiB bound, and its peak memory
    /// does not depend on the segment's size (it held the whole bound, 140 MiB, before).
    func testAnEndlessSegmentIsNotHeldInMemory() throws {
        let out = try temporaryDirectory("fetch-endless")
        defer { try? FileManager.default.removeItem(atPath: out) }
        XCTAssertEqual(try Child(onairBinary(), ["run", "--source", "synthetic", "--pace", "fast", "--duration", "3", "--out", out + "/device",
                                                 "--listen", "off", "--set", "video.quality=low", "--set", "record.enabled=off"]).wait().status, 0)
        let id = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: out + "/device/streams").first)
        let stream = out + "/device/streams/" + id
        // Every path as the stream has it, but a segment is zeros for ever (no length).
        let server = try Child("/usr/bin/python3", ["-c", """
            import http.server, os, sys
            root = sys.argv[1]
            class Handler(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.0"
                def log_message(self, *a): pass
                def do_GET(self):
                    path = root + self.path
                    if self.path.endswith(".m4s"):
                        self.send_response(200); self.send_header("Content-Type", "video/iso.segment"); self.end_headers()
                        chunk = bytes(1 << 16)
                        try:
                            while True: self.wfile.write(chunk)
                        except OSError: return
                    if not os.path.isfile(path): self.send_error(404); return
                    data = open(path, "rb").read()
                    self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            print("port=%d" % server.server_address[1], file=sys.stderr, flush=True)
            server.serve_forever()
            """, stream])
        defer { server.signal(SIGTERM); _ = server.wait() }
        let port = try XCTUnwrap(server.waitForLog("port=").flatMap { UInt16($0.dropFirst(5)) }, server.stderr)
        let fetch = try Child("/usr/bin/time", ["-f", "peak_kb=%M", onairBinary(), "fetch", "http://127.0.0.1:\(port)/playlist.m3u8", "--out", out + "/copy.mp4"])
        let result = fetch.wait(seconds: 300)
        XCTAssertNotEqual(result.status, 0, fetch.stderr)
        XCTAssertTrue(fetch.stderr.contains("67108864") || fetch.stderr.contains("64 MiB") || fetch.stderr.contains("larger than"), fetch.stderr)
        let peak = try XCTUnwrap(fetch.stderr.split(separator: "\n").last { $0.hasPrefix("peak_kb=") }.flatMap { Int($0.dropFirst(8)) }, fetch.stderr)
        XCTAssertLessThan(peak, 64 << 10, "peak memory below the segment bound (\(peak) KiB): the segment went to disk, not memory")
        XCTAssertFalse(FileManager.default.fileExists(atPath: out + "/copy.mp4"))
    }
}
