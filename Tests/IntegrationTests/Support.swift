import Foundation
import TestSupport
import Threading
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The onair binary under test: $ONAIR_BINARY (set by `make test` to the release build),
/// else the debug build of this package.
func onairBinary() -> String {
    if let path = ProcessInfo.processInfo.environment["ONAIR_BINARY"], !path.isEmpty { return path }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/onair").path
}

func temporaryDirectory(_ name: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("onair-\(name)-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A child process with stdout captured to memory and stderr to a file that the test can
/// read while it runs (onair's log lines).
final class Child: @unchecked Sendable {
    let process = Process()
    let stderrPath: String
    private let stdoutPipe = Pipe()
    private let stdoutData = Locked(Data())
    /// Reads stdout to its end, so a chatty child never blocks on a full pipe.
    private var stdoutReader: WorkerThread?
    let stdinPipe: Pipe?

    init(_ executable: String, _ arguments: [String], stdin: Bool = false, environment: [String: String] = [:]) throws {
        stderrPath = FileManager.default.temporaryDirectory.appendingPathComponent("onair-stderr-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardOutput = stdoutPipe
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        stdinPipe = stdin ? Pipe() : nil
        process.standardInput = stdinPipe ?? FileHandle.nullDevice
        try process.run()
        let handle = stdoutPipe.fileHandleForReading
        stdoutReader = WorkerThread(name: "test-stdout") { [stdoutData] in
            let data = handle.readDataToEndOfFile()
            stdoutData.withLock { $0 = data }
        }
    }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The port `onair run --listen 127.0.0.1:0` got, from its `server.listening` line.
    func listeningPort() throws -> UInt16 {
        let line = try XCTUnwrap(waitForLog("event=server.listening"), stderr)
        return try XCTUnwrap(UInt16(try XCTUnwrap(logValue(line, "url")).split(separator: ":").last!.filter(\.isNumber)))
    }

    /// Waits for exit (bounded so a hung child fails the test instead of CI).
    @discardableResult
    func wait(seconds: Double = 120) -> (status: Int32, stdout: String) {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        if process.isRunning {
            // SIGTERM first; a process whose signals are blocked (hung before its signal
            // thread exists) gets SIGKILL, so one hang cannot stall the whole suite.
            process.terminate()
            XCTFail("\(process.executableURL!.lastPathComponent) did not exit within \(seconds) s")
            let grace = Date().addingTimeInterval(10)
            while process.isRunning && Date() < grace { usleep(50_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        stdoutReader?.join()
        return (process.terminationStatus, String(decoding: stdoutData.withLock { $0 }, as: UTF8.self))
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    func send(_ line: String) { stdinPipe?.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// Polls the log until a line contains `text`.
    func waitForLog(_ text: String, seconds: Double = 60) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let line = stderr.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            if !process.isRunning { return nil }
            usleep(100_000)
        }
        return nil
    }
}

/// Runs a tool to completion, returning its exit status, stdout and stderr.
func runTool(_ executable: String, _ arguments: [String], seconds: Double = 300) throws -> (status: Int32, stdout: Data, stderr: String) {
    let child = try Child(executable, arguments)
    let stdoutPipeResult = child.wait(seconds: seconds)
    return (stdoutPipeResult.status, Data(stdoutPipeResult.stdout.utf8), child.stderr)
}

/// Runs a tool and returns its raw stdout bytes (for decoded media).
func runBinaryTool(_ executable: String, _ arguments: [String], output: String) throws -> (status: Int32, stderr: String) {
    let child = try Child("/bin/sh", ["-c", ([executable] + arguments).map { "'\($0)'" }.joined(separator: " ") + " > '\(output)'"])
    let result = child.wait(seconds: 300)
    return (result.status, child.stderr)
}

func logValue(_ line: String, _ key: String) -> String? {
    for field in line.split(separator: " ") where field.hasPrefix(key + "=") {
        return String(field.dropFirst(key.count + 1))
    }
    return nil
}

/// The lines of an onair log holding `text` (an event and its first fields: `event=destination.live name=yt `), in order.
func logLines(_ log: String, _ text: String) -> [String] {
    log.split(separator: "\n").filter { $0.contains(text) }.map(String.init)
}

/// Waits until something listens on UDP `port` of this machine (an SRT listener: no
/// connection tells), as /proc/net/udp and udp6 say; false after `seconds`.
func waitForUDPPort(_ port: UInt16, seconds: Double = 20) -> Bool {
    let hex = ":" + String(format: "%04X", port) + " "
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        for table in ["/proc/net/udp", "/proc/net/udp6"] {
            let lines = ((try? String(contentsOfFile: table, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst()
            // local_address is the second column: ADDRESS:PORT in hex.
            if lines.contains(where: { $0.split(separator: " ").dropFirst().first.map { ($0 + " ").hasSuffix(hex) } ?? false }) { return true }
        }
        usleep(50_000)
    }
    return false
}

/// `GET /api/status` of the onair on `port`, as JSON.
func apiStatus(port: UInt16) throws -> [String: Any] {
    try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: port, "/api/status").body)) as? [String: Any])
}

extension XCTestCase {
    /// `onair run` on the synthetic camera (low quality) with its web server on a free
    /// port, its data in a temporary directory removed after the test.
    /// /api/streams polled until `ready` says so (or a minute passes).
    func waitForStreams(_ port: UInt16, _ ready: ([[String: Any]]) -> Bool, seconds: Double = 60) throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let response = try HTTPClient.request(port: port, "/api/streams")
            if let list = try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]], ready(list) { return list }
            usleep(250_000)
        }
        XCTFail("streams never became ready")
        return []
    }

    func serveSynthetic(_ name: String, _ settings: [String] = [], arguments: [String] = [], stdin: Bool = false) throws -> (onair: Child, port: UInt16, out: String) {
        let out = try temporaryDirectory(name)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--out", out, "--listen", "127.0.0.1:0",
                                              "--set", "video.quality=low", "--set", "webrtc.port=0", "--set", "rtsp.port=0"] + settings.flatMap { ["--set", $0] } + arguments,
                              stdin: stdin)
        return (onair, try onair.listeningPort(), out)
    }
}
