import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TestSupport

/// Headless Firefox (Debian's firefox-esr) driven over Marionette, its own remote protocol,
/// which it speaks with no driver in between: on a TCP port it writes to the profile
/// (`marionette.port` 0: any free port, in `MarionetteActivePort`), messages are
/// `<length>:<json>`, a command `[0, id, name, params]` and its reply `[1, id, error, result]`.
/// In real time, like `Chromium`, so the media clock advances.
final class Firefox: Browser {
    struct Failure: Error, CustomStringConvertible { var description: String }

    static let path = "/usr/bin/firefox-esr"
    private var pid: pid_t = 0
    private var socket: RawSocket?
    private var buffer: [UInt8] = []
    private var nextID = 1
    let profile: String

    init() throws {
        profile = try temporaryDirectory("firefox")
        // Autoplay allowed (the page is never clicked), and none of the first-run pages,
        // update checks or reports a fresh profile would otherwise start with.
        let preferences = [("marionette.port", "0"), ("media.autoplay.default", "0"), ("media.autoplay.blocking_policy", "0"),
                           ("browser.shell.checkDefaultBrowser", "false"), ("browser.startup.homepage_override.mstone", "\"ignore\""),
                           ("datareporting.policy.dataSubmissionEnabled", "false"), ("toolkit.telemetry.reportingpolicy.firstRun", "false"),
                           ("app.update.disabledForTesting", "true"), ("network.captive-portal-service.enabled", "false"),
                           // WebRTC to a server on this machine: loopback candidates, addresses as they are.
                           ("media.peerconnection.ice.loopback", "true"), ("media.peerconnection.ice.obfuscate_host_addresses", "false"),
                           ("media.webrtc.hw.h264.enabled", "true"), ("media.navigator.mediadatadecoder_h264_enabled", "true"),
                           ("media.webrtc.encoder_creation_strategy", "1")]
        try preferences.map { "user_pref(\"\($0.0)\", \($0.1));\n" }.joined().write(toFile: profile + "/user.js", atomically: true, encoding: .utf8)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, profile + "/stdout.log", O_WRONLY | O_CREAT, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, profile + "/stderr.log", O_WRONLY | O_CREAT, 0o644)
        let arguments = [Self.path, "--headless", "--marionette", "--no-remote", "--profile", profile, "--window-size=1280,800", "about:blank"]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // As for Chromium: the test runner's variables must not reach the browser.
        let variables = ["PATH=/usr/bin:/bin", "HOME=\(profile)", "LANG=C.UTF-8", "MOZ_CRASHREPORTER_DISABLE=1"]
        var environment: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
        defer { environment.forEach { free($0) } }
        let status = posix_spawn(&pid, Self.path, &actions, nil, &argv, &environment)
        guard status == 0 else { throw Failure(description: "cannot start \(Self.path): \(status)") }
        let deadline = Date().addingTimeInterval(60)
        while socket == nil {
            if let text = try? String(contentsOfFile: profile + "/MarionetteActivePort", encoding: .utf8),
               let port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                socket = RawSocket(port: port, timeoutMilliseconds: 500)
            }
            guard Date() < deadline else { throw Failure(description: "Marionette did not start within 60 s: \(log)") }
            if socket == nil { usleep(100_000) }
        }
        guard let hello = try message(timeout: 30) as? [String: Any], hello["marionetteProtocol"] as? Int == 3 else {
            throw Failure(description: "not a Marionette protocol 3 server")
        }
        _ = try call("WebDriver:NewSession", ["capabilities": ["alwaysMatch": ["pageLoadStrategy": "eager"]]])
    }

    deinit {
        socket = nil
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        if ProcessInfo.processInfo.environment["ONAIR_KEEP_BROWSER_LOG"] == nil { try? FileManager.default.removeItem(atPath: profile) }
    }

    /// What the browser printed, for a failure message.
    var playerLog: String { log }
    var log: String { (try? String(contentsOfFile: profile + "/stderr.log", encoding: .utf8))?.suffix(2000).description ?? "" }

    /// The next whole message, decoded.
    private func message(timeout: Double) throws -> Any {
        guard let socket else { throw Failure(description: "not connected") }
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            if let colon = buffer.firstIndex(of: UInt8(ascii: ":")),
               let length = Int(String(decoding: buffer[..<colon], as: UTF8.self)), buffer.count > colon + length {
                let body = Data(buffer[(colon + 1)...(colon + length)])
                buffer.removeFirst(colon + 1 + length)
                return try JSONSerialization.jsonObject(with: body)
            }
            let n = chunk.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { throw Failure(description: "Firefox closed the connection: \(log)") }
            if n > 0 { buffer += chunk[..<n] }
        }
        throw Failure(description: "no message from Firefox within \(timeout) s")
    }

    /// Sends one command and waits for its reply.
    func call(_ name: String, _ params: [String: Any] = [:], timeout: Double = 30) throws -> Any? {
        let id = nextID
        nextID += 1
        let body = try JSONSerialization.data(withJSONObject: [0, id, name, params] as [Any])
        guard let socket, socket.send(Array("\(body.count):".utf8) + Array(body)) else { throw Failure(description: "\(name): send failed") }
        while true {
            guard let reply = try message(timeout: timeout) as? [Any], reply.count == 4, reply[0] as? Int == 1, reply[1] as? Int == id else { continue }
            if !(reply[2] is NSNull) { throw Failure(description: "\(name): \(reply[2])") }
            return reply[3]
        }
    }

    func open(_ url: String) throws {
        _ = try call("WebDriver:Navigate", ["url": url])
    }

    /// Evaluates a JavaScript expression in the page and returns its JSON value.
    func evaluate(_ expression: String) throws -> Any? {
        (try call("WebDriver:ExecuteScript", ["script": "return (\(expression));", "args": [] as [Any]]) as? [String: Any])?["value"]
    }
}
