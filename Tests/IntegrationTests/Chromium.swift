import Basics
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: commands on fd 3, replies on fd 4, each message JSON
/// followed by a NUL byte). In real time, so the media clock advances — `--dump-dom`
/// with virtual time loads metadata but never plays (ARCHITECTURE.md).
/// A browser a test can point at a page and ask about it.
protocol Browser: AnyObject {
    func open(_ url: String) throws
    /// A JavaScript expression's JSON value in the page.
    func evaluate(_ expression: String) throws -> Any?
    /// What the browser says of its player, for a failure message.
    var playerLog: String { get }
}

extension Browser {
    /// A value the page sets when its promise settles (at most `seconds`); one that says
    /// "error …" is thrown.
    func settled(_ expression: String, seconds: Double = 10) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let value = try evaluate(expression) as? String {
                if value.hasPrefix("error ") { throw Chromium.Failure(description: value) }
                return value
            }
            usleep(20_000)
        }
        throw Chromium.Failure(description: "\(expression) was never set")
    }
}

final class Chromium: Browser {
    struct Failure: Error, CustomStringConvertible { var description: String }

    private var pid: pid_t = 0
    private let commands: Int32   // our end of the browser's fd 3
    private let replies: Int32    // our end of the browser's fd 4
    private var buffer: [UInt8] = []
    private var nextID = 1
    private var session: String?
    /// The player's own account (DevTools Media domain): messages, errors, events.
    private(set) var mediaLog: [String] = []
    let profile: String
    /// Headers sent with every request of the pages opened after they are set (a
    /// viewer's Authorization, as the browser sends it once the owner has logged in).
    var extraHeaders: [String: String] = [:]

    init() throws {
        profile = try temporaryDirectory("chromium")
        var toBrowser: [Int32] = [0, 0], fromBrowser: [Int32] = [0, 0]
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else { throw Failure(description: "pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toBrowser[0], 3)
        posix_spawn_file_actions_adddup2(&actions, fromBrowser[1], 4)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, profile + "/stderr.log", O_WRONLY | O_CREAT, 0o644)
        let arguments = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                         "--remote-debugging-pipe", "--user-data-dir=\(profile)",
                         "--autoplay-policy=no-user-gesture-required",
                         // A page Chromium thinks is hidden gets its player suspended and
                         // paused, which sends a live HLS rendition down its pause/resume path.
                         "--disable-background-media-suspend", "--disable-renderer-backgrounding",
                         "--window-size=1280,800", "about:blank"]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // A minimal environment: the test runner's own variables (library paths among
        // them) must not reach the browser.
        let variables = ["PATH=/usr/bin:/bin", "HOME=\(profile)", "LANG=C.UTF-8"]
        var environment: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
        defer { environment.forEach { free($0) } }
        let status = posix_spawn(&pid, "/usr/bin/chromium", &actions, nil, &argv, &environment)
        guard status == 0 else { throw Failure(description: "cannot start /usr/bin/chromium: \(status)") }
        close(toBrowser[0]); close(fromBrowser[1])
        commands = toBrowser[1]
        replies = fromBrowser[0]
    }

    deinit {
        close(commands); close(replies)
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        if ProcessInfo.processInfo.environment["ONAIR_KEEP_BROWSER_LOG"] == nil { try? FileManager.default.removeItem(atPath: profile) }
    }

    var playerLog: String { mediaLog.joined(separator: "\n") }

    /// Sends one command and waits for its reply (events in between are skipped).
    func call(_ method: String, _ params: [String: Any] = [:], timeout: Double = 30) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        var data = try JSONSerialization.data(withJSONObject: message)
        data.append(0)
        _ = data.withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let end = buffer.firstIndex(of: 0) {
                let reply = Array(buffer[..<end])
                buffer.removeFirst(end + 1)
                guard let object = try JSONSerialization.jsonObject(with: Data(reply)) as? [String: Any] else { continue }
                if let event = object["method"] as? String, event.hasPrefix("Media.player"), event != "Media.playerPropertiesChanged" {
                    mediaLog.append(String(decoding: reply, as: UTF8.self))
                }
                guard object["id"] as? Int == id else { continue }
                if let error = object["error"] { throw Failure(description: "\(method): \(error)") }
                return object["result"] as? [String: Any] ?? [:]
            }
            var poller = pollfd(fd: replies, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 500) >= 0 else { continue }
            if poller.revents != 0 {
                var chunk = [UInt8](repeating: 0, count: 65536)
                let n = read(replies, &chunk, chunk.count)
                if n <= 0 { throw Failure(description: "the browser closed the pipe") }
                buffer += chunk[0..<n]
            }
        }
        throw Failure(description: "\(method): no reply within \(timeout) s")
    }

    /// Navigates the browser's first (foreground) tab to `url` and talks to it from now on.
    func open(_ url: String) throws {
        let targets = try call("Target.getTargets")["targetInfos"] as? [[String: Any]] ?? []
        guard let page = targets.first(where: { $0["type"] as? String == "page" })?["targetId"] as? String else {
            throw Failure(description: "no page target")
        }
        let attached = try call("Target.attachToTarget", ["targetId": page, "flatten": true])
        session = attached["sessionId"] as? String
        if !extraHeaders.isEmpty {
            _ = try call("Network.enable")
            _ = try call("Network.setExtraHTTPHeaders", ["headers": extraHeaders])
        }
        _ = try call("Page.navigate", ["url": url])
        _ = try call("Media.enable")
    }

    /// Evaluates a JavaScript expression in the page and returns its JSON value.
    func evaluate(_ expression: String) throws -> Any? {
        let result = try call("Runtime.evaluate", ["expression": expression, "returnByValue": true])
        return (result["result"] as? [String: Any])?["value"]
    }
}

extension XCTestCase {
    /// Opens the viewer at `url` and watches it for up to 60 s, until its media clock has
    /// passed 2 s and advanced by 1 s: the player is `player`, it reports no error, and
    /// only the low-latency player fetches parts. Returns the last look at the page.
    func watchViewer(_ browser: Browser, _ url: String, player: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        try browser.open(url)
        let probe = "JSON.stringify({t: video.currentTime, w: video.videoWidth, e: video.error && video.error.code, "
            + "hls: video.canPlayType('application/vnd.apple.mpegurl'), src: video.currentSrc, "
            + "player: video.dataset.player || null, info: info.textContent, "
            + "parts: performance.getEntriesByType('resource').filter(r => r.name.includes('/part/')).length, "
            + "behind: video.buffered.length ? video.buffered.end(video.buffered.length - 1) - video.currentTime : null})"
        var samples: [[String: Any]] = []
        var playerErrors: [String] = []
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let text = try? browser.evaluate(probe) as? String,
               let state = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] {
                samples.append(state)
                if !(state["e"] is NSNull) || (state["info"] as? String ?? "").hasPrefix("MSE") { playerErrors.append("\(state)") }
                let times = samples.compactMap { $0["t"] as? Double }
                if let last = times.last, last > 2, let earlier = times.first(where: { $0 > 0 }), last > earlier + 1 { break }
            }
            usleep(500_000)
        }
        XCTAssertEqual(playerErrors, [], "\(player): the player's log:\n" + browser.playerLog, file: file, line: line)
        let last = try XCTUnwrap(samples.last, file: file, line: line)
        XCTAssertEqual(last["player"] as? String, player, file: file, line: line)
        // Low latency reads parts; the others never ask for one.
        XCTAssertEqual((last["parts"] as? Int ?? 0) > 0, player == "mse-ll", "\(player): parts fetched: \(last["parts"] ?? "-")",
                       file: file, line: line)
        print("viewer \(player): \(last["behind"] ?? "-") s behind the newest media it holds")
        let times = samples.compactMap { $0["t"] as? Double }
        XCTAssertGreaterThan(times.last ?? 0, 2, "\(player): currentTime advanced: \(times)", file: file, line: line)
        XCTAssertGreaterThan((times.last ?? 0) - (times.first { $0 > 0 } ?? 0), 1, "\(player): and kept advancing: \(times)",
                             file: file, line: line)
        return last
    }
}
