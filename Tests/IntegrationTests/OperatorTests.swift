import Foundation
import XCTest
import HLS
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What tells the operator what the appliance is doing: systemd's notify socket, the
/// console status line, /metrics, and the token-guarded control API.
final class OperatorTests: XCTestCase {
    /// A datagram socket standing in for systemd's NOTIFY_SOCKET.
    final class NotifySocket {
        let path: String
        let fd: Int32
        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("onair-notify-\(UUID().uuidString.prefix(8))").path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        deinit { close(fd); unlink(path) }
        func receive() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
        }
        func waitFor(_ text: String, seconds: Double = 30, seen: inout [String]) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if let message = receive() {
                    seen.append(message)
                    if message.contains(text) { return true }
                }
            }
            return false
        }
    }

    func testNotifyConsoleMetricsAndTheControlAPI() throws {
        let out = try temporaryDirectory("operator")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let notify = try NotifySocket()
        let token = "0123456789abcdef0123"
        let console = out + "/console.txt"
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--listen", "127.0.0.1:0", "--out", out,
                                              "--set", "video.quality=low", "--start", "button", "--set", "server.token=\(token)",
                                              "--set", "console.device=\(console)", "--set", "console.interval_s=1",
                                              "--set", "device.name=op1"],
                              environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"])
        var messages: [String] = []
        XCTAssertTrue(notify.waitFor("READY=1", seen: &messages), "\(messages)\n\(onair.stderr)")
        let port = try onair.listeningPort()
        let status = { try apiStatus(port: port) }
        XCTAssertEqual(try status()["state"] as? String, "armed")
        XCTAssertEqual(try HTTPClient.request(port: port, "/api/record/start", method: "POST").status, 401, "no token, no control")
        let start = try HTTPClient.request(port: port, "/api/record/start", method: "POST", headers: ["Authorization": "Bearer \(token)"])
        XCTAssertEqual(start.status, 200)
        XCTAssertNotNil(onair.waitForLog("event=segment.stored"), onair.stderr)
        XCTAssertEqual(try status()["state"] as? String, "recording")
        let metrics = try HTTPClient.request(port: port, "/metrics")
        XCTAssertEqual(metrics.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        let text = String(decoding: metrics.body, as: UTF8.self)
        XCTAssertTrue(text.contains("# TYPE onair_recording gauge\nonair_recording{device=\"op1\"} 1\n"), text)
        XCTAssertTrue(text.contains("# TYPE onair_segments_stored_total counter\n"), text)
        let page = try HTTPClient.request(port: port, "/status")
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertTrue(String(decoding: page.body, as: UTF8.self).contains("<td>recording</td>"))
        let plots = try HTTPClient.request(port: port, "/status/plots.svg")
        XCTAssertEqual(plots.header("Content-Type"), "image/svg+xml")
        XCTAssertTrue(String(decoding: plots.body, as: UTF8.self).hasPrefix("<svg"))
        XCTAssertTrue(notify.waitFor("WATCHDOG=1", seen: &messages), "the watchdog is fed while the pipeline lives")
        XCTAssertTrue(notify.waitFor("STATUS=onair: recording device=op1 stream=", seen: &messages), "\(messages)")
        let stop = try HTTPClient.request(port: port, "/api/record/stop", method: "POST", headers: ["Authorization": "Bearer \(token)"])
        XCTAssertEqual(stop.status, 200)
        XCTAssertNotNil(onair.waitForLog("event=stream.ended"), onair.stderr)
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(notify.waitFor("STOPPING=1", seconds: 5, seen: &messages) || messages.contains { $0.contains("STOPPING=1") })
        let lines = try String(contentsOfFile: console, encoding: .utf8).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        XCTAssertTrue(lines.allSatisfy { $0.hasPrefix("onair: ") && $0.allSatisfy(\.isASCII) }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("onair: recording device=op1 stream=") && $0.contains(" fps=") && $0.contains(" rate=") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("onair: stream.started id=") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("onair: stream.ended id=") }, "\(lines)")
    }
}

/// The record button through the real evdev read path: a FIFO stands in for the device
/// node, fed with input_event records as the kernel writes them.
final class ButtonTests: XCTestCase {
    func key(_ code: UInt16, _ value: Int32) -> Data {
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes += withUnsafeBytes(of: UInt16(1).littleEndian) { Array($0) }
        bytes += withUnsafeBytes(of: code.littleEndian) { Array($0) }
        bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) }
        return Data(bytes)
    }

    func testHoldToRecordAndALongPressThatShutsDown() throws {
        let out = try temporaryDirectory("button")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let fifo = out + "/event0"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        // Hold mode: down starts, up stops (after the 500 ms minimum).
        let hold = try Child(onairBinary(), ["run", "--source", "synthetic", "--listen", "off", "--out", out, "--set", "video.quality=low",
                                             "--start", "button", "--set", "button.input=\(fifo)", "--set", "button.keys=KEY_SPACE",
                                             "--set", "button.mode=hold", "--set", "button.min_hold_ms=500"])
        XCTAssertNotNil(hold.waitForLog("event=deferred_start.done"), hold.stderr)
        let writer = try XCTUnwrap(FileHandle(forWritingAtPath: fifo))
        writer.write(key(57, 1))
        XCTAssertNotNil(hold.waitForLog("event=stream.started"), hold.stderr)
        Thread.sleep(forTimeInterval: 1.5)
        writer.write(key(57, 0))
        XCTAssertNotNil(hold.waitForLog("event=stream.ended"), hold.stderr)
        hold.signal(SIGTERM)
        XCTAssertEqual(hold.wait().status, 0, hold.stderr)
        writer.closeFile()
        XCTAssertTrue(hold.stderr.contains("event=button.pressed source=evdev"), hold.stderr)

        // Toggle mode with a long press that shuts down: the stream is finished first, then
        // the shutdown command runs.
        let marker = out + "/powered-off"
        let toggle = try Child(onairBinary(), ["run", "--source", "synthetic", "--listen", "off", "--out", out, "--set", "video.quality=low",
                                               "--start", "button", "--set", "button.input=\(fifo)", "--set", "button.keys=KEY_SPACE",
                                               "--set", "button.long_press=shutdown", "--set", "button.long_press_s=1",
                                               "--set", "button.shutdown_command=touch \(marker)"])
        XCTAssertNotNil(toggle.waitForLog("event=deferred_start.done"), toggle.stderr)
        let again = try XCTUnwrap(FileHandle(forWritingAtPath: fifo))
        again.write(key(57, 1))  // down: starts at once; held: after 1 s, the long press
        XCTAssertEqual(toggle.wait(seconds: 60).status, 0, toggle.stderr)
        again.closeFile()
        for event in ["stream.started", "button.long_press", "stream.ended", "onair.shutdown"] {
            XCTAssertTrue(toggle.stderr.contains("event=\(event)"), "\(event): \(toggle.stderr)")
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "the shutdown command ran")
    }
}

/// Lowering the frame rate instead of overheating, with a sensor file the test heats up.
final class ThermalTests: XCTestCase {
    func testAHotSensorLowersTheFrameRateAtASegmentBoundary() throws {
        let out = try temporaryDirectory("thermal")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let sensor = out + "/temp"
        try "45000\n".write(toFile: sensor, atomically: true, encoding: .utf8)
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--listen", "off", "--out", out, "--duration", "10",
                                              "--set", "video.quality=low", "--set", "thermal.sensor=\(sensor)",
                                              "--set", "thermal.dwell_s=1", "--set", "thermal.fps_steps=30,24",
                                              "--set", "console.device=\(out)/console", "--set", "console.interval_s=1"])
        XCTAssertNotNil(onair.waitForLog("event=segment.stored"), onair.stderr)
        try "91000\n".write(toFile: sensor, atomically: true, encoding: .utf8)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(onair.stderr.contains("event=thermal.step from=30 to=24 temp_c=91.0 reason=hot"), onair.stderr)
        // The console says so, and its status lines show the rate in use from then on.
        let console = try String(contentsOfFile: out + "/console", encoding: .utf8).components(separatedBy: "\r\n")
        let step = try XCTUnwrap(console.firstIndex { $0.hasPrefix("onair: thermal.step from=30 to=24") }, console.joined(separator: "\n"))
        let statusLines = { (lines: ArraySlice<String>) in lines.filter { $0.contains(" up=") } }
        XCTAssertTrue(statusLines(console[..<step]).allSatisfy { $0.contains(" fps=") && $0.contains("/30 ") }, console.joined(separator: "\n"))
        let after = statusLines(console[(step + 1)...])
        XCTAssertFalse(after.isEmpty)
        XCTAssertTrue(after.allSatisfy { $0.contains("/24 ") }, console.joined(separator: "\n"))
        // Still hot at the lowest step: said once.
        XCTAssertEqual(console.filter { $0.hasPrefix("onair: thermal.limit fps=24 temp_c=91.0 reason=hot") }.count, 1,
                       console.joined(separator: "\n"))
        let rate = try XCTUnwrap(onair.stderr.split(separator: "\n").first { $0.contains("event=stream.rate") }.map(String.init))
        let frame = try XCTUnwrap(logValue(rate, "frame").flatMap(Int.init))
        XCTAssertEqual(frame % 60, 0, "the new rate starts at a segment boundary (2 s = 60 frames at 30 fps)")
        let stream = out + "/streams/" + (try FileManager.default.contentsOfDirectory(atPath: out + "/streams")[0])
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: stream + "/" + $0).map { Array($0) } }, [],
                       "one frame rate per discontinuity domain")
        let playlist = try String(contentsOfFile: stream + "/playlist.m3u8", encoding: .utf8)
        XCTAssertEqual(playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count, 2)
        // The live stream's and the recording's frame durations: 1/30 s, then 1/24 s.
        for input in [stream + "/index.m3u8", out + "/recordings/" + URL(fileURLWithPath: stream).lastPathComponent + ".mp4"] {
            let probe = try runTool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts",
                                                         "-of", "csv=p=0", input])
            let pts = String(decoding: probe.stdout, as: UTF8.self).split(separator: "\n").compactMap { Int($0) }
            let durations = zip(pts, pts.dropFirst()).map { $1 - $0 }  // from the timestamps, as a player sees them
            XCTAssertEqual(Array(durations.prefix(frame)), Array(repeating: 3000, count: frame), input)
            XCTAssertTrue(durations.dropFirst(frame).allSatisfy { $0 == 3750 }, "\(input): \(durations.dropFirst(frame))")
            XCTAssertGreaterThan(durations.count, frame + 10)
            let decode = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", input, "-f", "null", "-"])
            XCTAssertEqual(decode.stderr, "", "ffmpeg reports nothing")
        }
    }
}
