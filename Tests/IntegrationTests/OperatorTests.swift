import Foundation
import XCTest
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
                                              "--set", "console.device=\(console)", "--set", "console.interval_s=1"],
                              environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"])
        var messages: [String] = []
        XCTAssertTrue(notify.waitFor("READY=1", seen: &messages), "\(messages)\n\(onair.stderr)")
        let line = try XCTUnwrap(onair.waitForLog("event=server.listening"), onair.stderr)
        let port = try XCTUnwrap(UInt16(try XCTUnwrap(logValue(line, "url")).split(separator: ":").last!.filter(\.isNumber)))
        func status() throws -> [String: Any] {
            try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: port, "/api/status").body)) as? [String: Any])
        }
        XCTAssertEqual(try status()["state"] as? String, "armed")
        XCTAssertEqual(try HTTPClient.request(port: port, "/api/record/start", method: "POST").status, 401, "no token, no control")
        let start = try HTTPClient.request(port: port, "/api/record/start", method: "POST", headers: ["Authorization": "Bearer \(token)"])
        XCTAssertEqual(start.status, 200)
        XCTAssertNotNil(onair.waitForLog("event=segment.stored"), onair.stderr)
        XCTAssertEqual(try status()["state"] as? String, "recording")
        let metrics = try HTTPClient.request(port: port, "/metrics")
        XCTAssertEqual(metrics.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        let text = String(decoding: metrics.body, as: UTF8.self)
        XCTAssertTrue(text.contains("# TYPE onair_recording gauge\nonair_recording 1\n"), text)
        XCTAssertTrue(text.contains("# TYPE onair_segments_stored_total counter\n"), text)
        XCTAssertTrue(notify.waitFor("WATCHDOG=1", seen: &messages), "the watchdog is fed while the pipeline lives")
        XCTAssertTrue(notify.waitFor("STATUS=onair: recording stream=", seen: &messages), "\(messages)")
        let stop = try HTTPClient.request(port: port, "/api/record/stop", method: "POST", headers: ["Authorization": "Bearer \(token)"])
        XCTAssertEqual(stop.status, 200)
        XCTAssertNotNil(onair.waitForLog("event=stream.ended"), onair.stderr)
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(notify.waitFor("STOPPING=1", seconds: 5, seen: &messages) || messages.contains { $0.contains("STOPPING=1") })
        let lines = try String(contentsOfFile: console, encoding: .utf8).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        XCTAssertTrue(lines.allSatisfy { $0.hasPrefix("onair: ") && $0.allSatisfy(\.isASCII) }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("onair: recording stream=") && $0.contains(" fps=") && $0.contains(" rate=") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("onair: stream.started id=") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("onair: stream.ended id=") }, "\(lines)")
    }
}
