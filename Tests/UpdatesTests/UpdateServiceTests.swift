import Foundation
import XCTest
@testable import Updates
import Logging
import Server
import TestSupport
import Threading

/// `POST /api/update` on a real web server: the operator's token, the bundle written as it
/// comes and handed to the installer whole, one install at a time, an upload cut short
/// leaving nothing, and what the console is told; the reboot when asked and at idle. The
/// installer is a script standing in for `rauc install` (RAUC itself runs in the VM test).
final class UpdateServiceTests: XCTestCase {
    private var directory = ""
    private let captured = Captured()
    private let restarts = Locked(0)

    override func setUp() {
        directory = NSTemporaryDirectory() + "onair-update-service-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    /// A stand-in for `rauc install BUNDLE`: keeps what it was given, says RAUC's progress,
    /// fails with RAUC's LastError when `fail` exists, and waits while `hold` exists.
    private func service(reboot: UpdateReboot = .never, slots: Bool = true, backend: String? = nil) throws -> UpdateService {
        let script = directory + "/rauc"
        try """
        #!/bin/sh
        [ "$1" = info ] && exit 1   # (the size check is tested on its own)
        cp "$2" "\(directory)/installed.raucb"
        echo "  0% Installing"
        echo " 40% Checking bundle"
        echo " 80% Copying image to rootfs.1"
        if [ -e "\(directory)/fail" ]; then echo "LastError: Failed verifying signature"; exit 1; fi
        while [ -e "\(directory)/hold" ]; do sleep 0.05; done
        echo "100% Installing done."
        """.write(toFile: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        if slots { FileManager.default.createFile(atPath: directory + "/system.conf", contents: Data()) } else { try? FileManager.default.removeItem(atPath: directory + "/system.conf") }
        let restarts = self.restarts
        return UpdateService(.init(directory: directory + "/data/update", statePath: directory + "/run/update.state", reboot: reboot,
                                   systemConfiguration: directory + "/system.conf", rauc: script,
                                   slotBackend: backend ?? directory + "/no-backend",
                                   restart: { restarts.withLock { $0 += 1 }; return true }),
                             log: Log(format: .logfmt, write: { [captured] in captured.add($0) }))
    }

    private func server(_ service: UpdateService, token: String? = "sesame") throws -> WebServer {
        try WebServer(listen: "127.0.0.1:0", root: directory + "/data", token: token, bodyRoutes: [service.route])
    }

    private let bundle = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }

    private func post(_ server: WebServer, _ path: String = "/api/update", token: String = "sesame", body: [UInt8]? = nil,
                      headers: [String: String] = [:]) throws -> HTTPResponse {
        try HTTPClient.request(port: server.port, path, method: "POST", headers: headers.merging(["Authorization": "Bearer \(token)"]) { a, _ in a },
                               body: body ?? bundle)
    }

    func testABundleIsTakenInstalledAndSaid() throws {
        let updates = try service()
        let server = try server(updates)
        defer { server.stop() }
        let answer = try post(server)
        XCTAssertEqual(answer.status, 202, answer.text)
        XCTAssertEqual(answer.header("Location"), "/api/status")
        updates.stop()  // the install is done
        XCTAssertEqual(FileManager.default.contents(atPath: directory + "/installed.raucb"), Data(bundle), "the installer got the bundle whole")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/data/update"), [], "nothing kept once installed")
        let state = try XCTUnwrap(updates.install)
        XCTAssertEqual(state.phase, .installed)
        XCTAssertEqual(state.bytes, bundle.count)
        XCTAssertTrue(state.source.hasPrefix("an upload from 127.0.0.1"), state.source)
        updates.check(idle: true)
        let lines = captured.lines
        XCTAssertTrue(lines.contains { $0.contains("event=update.installed") && $0.contains("at the next reboot") }, "\(lines)")
        XCTAssertEqual(restarts.withLock { $0 }, 0, "update.reboot = never: not without being told")
    }

    /// The console hears each phase and each step once, as the state file tells them.
    func testTheConsoleHearsTheInstallAsItGoes() throws {
        let updates = try service()
        let server = try server(updates)
        defer { server.stop() }
        FileManager.default.createFile(atPath: directory + "/hold", contents: Data())
        XCTAssertEqual(try post(server).status, 202)
        let busy = try post(server, body: [1, 2, 3])  // refused at the head: a small body
        XCTAssertEqual(busy.status, 409, "one install at a time")
        XCTAssertTrue(waitFor { updates.install?.step == "Copying image to rootfs.1" })
        updates.check(idle: true)
        updates.check(idle: true)
        try FileManager.default.removeItem(atPath: directory + "/hold")
        updates.stop()
        updates.check(idle: true)
        let lines = captured.lines.filter { $0.contains("event=update.") }
        XCTAssertEqual(lines.filter { $0.contains("event=update.installing") }.count, 1, "\(lines)")
        XCTAssertEqual(lines.filter { $0.contains("event=update.progress") && $0.contains("percent=80") }.count, 1, "\(lines)")
        XCTAssertTrue(lines.last?.contains("event=update.installed") == true, "\(lines)")
    }

    func testWhatIsRefused() throws {
        let updates = try service()
        let server = try server(updates)
        defer { server.stop() }
        // Refused at the head, so a small body (a client sending a large one waits for
        // `100 Continue`, as curl does, and hears the refusal instead).
        let small: [UInt8] = [1, 2, 3]
        XCTAssertEqual(try post(server, token: "wrong", body: small).status, 401)
        XCTAssertEqual(try post(server, "/api/update?reboot=maybe", body: small).status, 400)
        XCTAssertEqual(try post(server, "/api/update/x", body: small).status, 404)
        // Refused from its Content-Length, before a byte of it is read.
        let large = try post(server, body: [], headers: ["Content-Length": "\(Update.largestBundle + 1)"])
        XCTAssertEqual(large.status, 413)
        XCTAssertEqual(try HTTPClient.request(port: server.port, "/api/update", method: "GET").status, 405)
        let closed = try self.server(updates, token: nil)
        defer { closed.stop() }
        XCTAssertEqual(try post(closed, body: small).status, 403, "no server.token: no updates over the network")
        XCTAssertNil(updates.install, "nothing begun")

        FileManager.default.createFile(atPath: directory + "/fail", contents: Data())
        XCTAssertEqual(try post(server).status, 202)
        updates.stop()
        XCTAssertEqual(updates.install?.phase, .failed)
        XCTAssertEqual(updates.install?.error, "Failed verifying signature")
        updates.check(idle: true)
        XCTAssertTrue(captured.lines.contains { $0.contains("event=update.install_failed") && $0.contains("Failed verifying signature") })

        let plain = try service(slots: false)
        let off = try self.server(plain)
        defer { off.stop() }
        XCTAssertEqual(try post(off, body: small).status, 501, "a board without slots says so")

        // A board that cannot try a new slot (a Raspberry Pi 4: no kexec) says why at the head.
        let backend = directory + "/onair-slot"
        try "#!/bin/sh\n[ \"$1\" = can-try ] && { echo 'this board cannot try a new slot: no kexec'; exit 1; }\nexit 2\n"
            .write(toFile: backend, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: backend)
        let stuck = try self.server(try service(backend: backend))
        defer { stuck.stop() }
        let refused = try post(stuck, body: small)
        XCTAssertEqual(refused.status, 501)
        XCTAssertTrue(refused.text.contains("cannot try a new slot: no kexec"), refused.text)
    }

    /// A client that goes away half-way leaves no bundle, and the install is said failed.
    func testAnUploadCutShortLeavesNothing() throws {
        let updates = try service()
        let server = try server(updates)
        defer { server.stop() }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        XCTAssertEqual(withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }, 0)
        let head = Array("POST /api/update HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sesame\r\nContent-Length: 3000000\r\n\r\n".utf8)
        let sent = head + Array(bundle.prefix(200_000))
        XCTAssertEqual(send(fd, sent, sent.count, Int32(MSG_NOSIGNAL)), sent.count)
        XCTAssertTrue(waitFor { updates.install?.phase == .receiving })
        close(fd)
        XCTAssertTrue(waitFor { updates.install?.phase == .failed })
        XCTAssertEqual(updates.install?.error?.contains("before the whole bundle came"), true)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/data/update"), [], "no half bundle")
        XCTAssertEqual(try post(server).status, 202, "the next upload is taken")
        updates.stop()
        XCTAssertEqual(updates.install?.phase, .installed)
    }

    /// Asked to reboot with the upload: once installed, at once. `update.reboot = idle`:
    /// only once nothing is live or recording.
    func testTheRebootIntoTheNewSlot() throws {
        let asked = try service()
        let server = try server(asked)
        XCTAssertEqual(try post(server, "/api/update?reboot=1").status, 202)
        asked.stop()
        server.stop()
        asked.check(idle: false)
        XCTAssertEqual(restarts.withLock { $0 }, 1, "asked for: not waiting for idle")
        asked.check(idle: false)
        XCTAssertEqual(restarts.withLock { $0 }, 1, "once")

        try FileManager.default.removeItem(atPath: directory + "/run/update.state")
        let idle = try service(reboot: .idle)
        let other = try self.server(idle)
        defer { other.stop() }
        XCTAssertEqual(try post(other).status, 202)
        idle.stop()
        idle.check(idle: false)
        XCTAssertEqual(restarts.withLock { $0 }, 1, "recording: the reboot waits")
        idle.check(idle: true)
        XCTAssertEqual(restarts.withLock { $0 }, 2)
        XCTAssertTrue(captured.lines.contains { $0.contains("event=update.rebooting") && $0.contains("nothing is live or recording") })
    }

    /// Polls `condition` for up to ten seconds (a state another thread brings about).
    private func waitFor(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        let tick = Completion()
        while Date() < deadline {
            if condition() { return true }
            _ = tick.wait(seconds: 0.02)
        }
        return condition()
    }
}
