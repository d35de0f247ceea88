import Foundation
import Logging
import Network
import Threading
import XCTest

/// onair's side of wpa_supplicant's control interface: the socket against Debian's
/// wpa_supplicant itself, and the monitor's thread (the VM test joins a real network).
final class WiFiControlTests: XCTestCase {
    static let supplicant = "/usr/sbin/wpa_supplicant"

    /// One network: the monitor's words are the tracker's (NetworkTests); here, its thread.
    func settings() -> WiFiSettings {
        var settings = WiFiSettings()
        settings.networks[""] = WiFiNetwork(name: "")
        settings.networks[""]?.ssid = "home"
        settings.networks[""]?.password = "correct horse battery"
        return settings
    }

    /// The control socket of a real wpa_supplicant (its global interface, which needs no
    /// radio): a command gets its reply, ATTACH is taken.
    func testTheControlSocketSpeaksToWpaSupplicant() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onair-wpactl-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/global"
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: Self.supplicant)
        daemon.arguments = ["-g", socket]
        daemon.standardOutput = FileHandle.nullDevice
        try daemon.run()
        defer { daemon.terminate(); daemon.waitUntilExit() }
        // Another program's socket: nothing tells when it is made but looking. (-B, whose
        // first process ends once it is, leaves Foundation's Process waiting on the daemon.)
        var control: WPAControl?
        for _ in 0..<100 where control == nil {
            control = try? WPAControl(path: socket)
            if control == nil { usleep(100_000) }
        }
        let client = try XCTUnwrap(control, "wpa_supplicant's socket")
        XCTAssertEqual(try client.request("PING"), "PONG\n")
        XCTAssertNoThrow(try client.attach())
        XCTAssertThrowsError(try WPAControl(path: directory + "/wlan9"), "no such socket") { error in
            XCTAssertTrue("\(error)".hasPrefix("wpa_supplicant's control socket: "), "\(error)")
        }
    }

    /// The monitor on a control socket of the test's own (wpa_supplicant needs a radio
    /// for the rest: the VM test has one): it attaches, asks STATUS, takes events, and
    /// says each change once in the log.
    func testTheMonitorSaysWhatTheSupplicantSays() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onair-wifimon-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try FakeSupplicant(path: directory + "/wlan0")
        defer { server.stop() }
        let lines = Condition<[String]>([])
        let log = Log(format: .logfmt, write: { line in
            lines.withLock { $0.append(line) }
            lines.broadcast()
        })
        let monitor = try WiFiMonitor(settings: settings(), directory: directory, log: log)
        monitor.start()
        defer { monitor.stop() }
        /// Whether the log says `text` within 10 s.
        func wait(_ text: String) -> Bool {
            lines.withLock(until: monotonicNanoseconds() + 10_000_000_000) { $0.contains { $0.contains(text) } ? true : nil } ?? false
        }
        XCTAssertTrue(server.waitForAttach(), "attached")
        server.send("<3>CTRL-EVENT-SSID-TEMP-DISABLED id=0 ssid=\"home\" auth_failures=1 duration=10 reason=WRONG_KEY")
        XCTAssertTrue(wait("event=wifi.failed"), lines.withLock { $0 }.joined(separator: "\n"))
        XCTAssertEqual(monitor.status.problem, "wrong password for 'home' (wifi.password)")
        server.status = "wpa_state=COMPLETED\nid_str=wifi\nip_address=192.168.50.23\n"
        server.send("<3>CTRL-EVENT-CONNECTED - Connection to 02:00:00:00:01:00 completed [id=0 id_str=wifi]")
        XCTAssertTrue(wait("event=wifi.joined"))
        XCTAssertTrue(wait("event=wifi.address"), "the address from the next STATUS")
        XCTAssertEqual(monitor.status.address, "192.168.50.23")
        XCTAssertFalse(lines.withLock { $0 }.joined().contains("correct horse"), "no password in the log")
    }
}

/// A Unix datagram socket that answers as wpa_supplicant's control interface does, on a
/// thread of its own.
final class FakeSupplicant: Sendable {
    private struct State {
        var client: (address: sockaddr_un, length: socklen_t)?
        var running = true
        var status = "wpa_state=SCANNING\n"
    }
    let fd: Int32
    private let state = Condition(State())
    private let thread = Locked<WorkerThread?>(nil)

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        // Its receive wakes every 0.1 s to see whether it is stopped.
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        thread.withLock { $0 = WorkerThread(name: "fake-supplicant") { [self] in serve() } }
    }

    /// What STATUS answers from now on.
    var status: String {
        get { state.withLock { $0.status } }
        set { state.withLock { $0.status = newValue } }
    }

    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while state.withLock({ $0.running }) {
            var from = sockaddr_un()
            var length = socklen_t(MemoryLayout<sockaddr_un>.size)
            let count = withUnsafeMutablePointer(to: &from) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
            }
            guard count > 0 else { continue }
            let reply: String
            switch String(decoding: buffer[..<count], as: UTF8.self) {
            case "ATTACH":
                reply = "OK\n"
                state.withLock { $0.client = (from, length) }
                state.broadcast()
            case "DETACH": reply = "OK\n"
            case "STATUS": reply = status
            default: reply = "UNKNOWN COMMAND\n"
            }
            send(reply, to: from, length: length)
        }
    }

    /// Whether a client attached within 10 s.
    func waitForAttach() -> Bool {
        state.withLock(until: monotonicNanoseconds() + 10_000_000_000) { $0.client != nil ? true : nil } ?? false
    }

    /// An unsolicited event to the attached client.
    func send(_ event: String) {
        guard let client = state.withLock({ $0.client }) else { return }
        send(event, to: client.address, length: client.length)
    }

    private func send(_ text: String, to address: sockaddr_un, length: socklen_t) {
        var to = address
        text.withCString { bytes in
            _ = withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, strlen(bytes), 0, $0, length) } }
        }
    }

    func stop() {
        state.withLock { $0.running = false }
        thread.withLock { $0 }?.join()
        close(fd)
    }
}
