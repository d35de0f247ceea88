import Foundation
import Layout
import System
import TestSupport
import Threading

extension FuzzTargets {
    /// Every HTTP endpoint of a running `onair run` (the release binary, synthetic camera,
    /// recording on, publishing to an origin): the export's parameters, forget and the
    /// other control calls, the LL-HLS directives, status and streams (issue 29). An input
    /// is requests, one a line, `METHOD /path?name=value&…`, where `{live}`, `{done}` and
    /// `{recording}` stand for the stream being recorded, a finished stream and a finished
    /// recording. After each case onair must still be running and still answer; after a
    /// control call that was accepted, still so once the live stream has stored another
    /// segment (forgetting the live stream trapped it on the next one).
    /// The live stream's media playlist, as a request line names it.
    static let livePlaylist = StreamLayout.streamsURL + "{live}/" + StreamLayout.playlist

    public static let api = FuzzTarget(name: "api", seeds: [
        "GET /api/export?stream={done}&start=1&end=3",
        "GET /api/export?stream={done}&last=2",
        "GET /api/export?recording={recording}&start=0.5&end=2.5",
        "GET /api/export?stream={done}&from=2026-12-04T10:00:00Z&to=2026-12-04T10:00:02Z",
        "GET /api/export?stream={live}&max_bitrate=900000&max_size=640x360",
        "POST /api/forget?stream={done}",
        "POST /api/forget?stream={live}",
        "GET \(livePlaylist)?_HLS_msn=2&_HLS_part=1\nGET \(livePlaylist)?_HLS_msn=1&_HLS_skip=YES",
        "GET /api/status\nGET /api/streams\nGET /api/recordings\nGET /metrics\nGET /status",
        "POST /api/record/stop\nPOST /api/record/start"
    ].map { Array($0.utf8) }, textual: true, prepare: { _ = ApplianceFixture.shared }) { bytes in
        let appliance = ApplianceFixture.shared
        var accepted = false
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n").prefix(8) {
            let words = line.split(separator: " ", maxSplits: 1)
            guard words.count == 2 else { continue }
            let status = appliance.request(String(words[0]), appliance.expand(String(words[1])))
            if words[0] == "POST" && status == 200 { accepted = true }
        }
        if accepted { appliance.recordAndWaitForASegment() }
        appliance.checkAlive()
    }
}

/// One onair for every case of `api`, in a temporary data directory, publishing to a
/// `RecordingServer` that takes every PUT.
final class ApplianceFixture: Sendable {
    static let shared = ApplianceFixture()
    static let token = "FUZZTOKENFUZZTOKEN42"
    let process = Process()
    let origin: RecordingServer
    let root: String
    /// The server's port, and the ids a case's `{live}`, `{done}` and `{recording}` name.
    private let state = Locked((port: UInt16(0), ids: [String: String]()))
    var port: UInt16 { state.withLock { $0.port } }
    private var ids: [String: String] { state.withLock { $0.ids } }

    /// `$ONAIR_BINARY` (make test and make fuzz set it), else this package's release build.
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["ONAIR_BINARY"], !path.isEmpty { return path }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return package.appendingPathComponent(".build/release/onair").path
    }

    private init() {
        origin = try! RecordingServer(status: { $0.method == "PUT" ? 201 : 404 })
        // Earlier runs' data directories (about 30 MB each), whose fuzzers have ended.
        let temporary = NSTemporaryDirectory()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] where name.hasPrefix("onair-fuzz-api-") {
            if let pid = Int32(name.dropFirst("onair-fuzz-api-".count)), !ThisProcess.send(nil, to: pid) { try? FileManager.default.removeItem(atPath: temporary + name) }
        }
        root = temporary + "onair-fuzz-api-\(ThisProcess.id)"
        try? FileManager.default.removeItem(atPath: root)
        try! FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let log = root + "/onair.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        // Killed with this process, however it ends (a find ends it with a signal).
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--pdeathsig", "SIGKILL", "--", Self.binary, "run", "--source", "synthetic", "--out", root + "/var", "--listen", "127.0.0.1:0",
                             "--set", "video.width=320", "--set", "video.height=180", "--set", "video.fps=15",
                             "--set", "hls.segment_seconds=1", "--set", "record.width=320", "--set", "record.height=180",
                             "--set", "server.token=\(Self.token)",
                             "--set", "publish.url=http://127.0.0.1:\(origin.port)/fuzz/"]
        process.standardError = FileHandle(forWritingAtPath: log)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { broken("cannot start \(Self.binary): \(error)") }
        // The server's port, then a finished stream and recording beside the live one.
        let port: UInt16 = waitFor("the server") {
            guard let text = try? String(contentsOfFile: log, encoding: .utf8),
                  let line = text.split(separator: "\n").first(where: { $0.contains("event=server.listening") }),
                  let url = line.split(separator: " ").first(where: { $0.hasPrefix("url=") }) else { return nil }
            return UInt16(url.split(separator: ":").last!.filter(\.isNumber))
        }
        state.withLock { $0.port = port }
        let first = waitFor("a stream with two segments") { self.newestStream(segments: 2) }
        _ = request("POST", "/api/record/stop")
        let recording = waitFor("the first recording") { () -> String? in
            guard let body = try? HTTPClient.request(port: self.port, "/api/recordings").text,
                  let answer = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
                  let list = answer["recordings"] as? [[String: Any]] else { return nil }
            return list.first?["id"] as? String
        }
        _ = request("POST", "/api/record/start")
        let live = waitFor("a second stream") { self.newestStream(segments: 2).flatMap { $0 == first ? nil : $0 } }
        state.withLock { $0.ids = ["{live}": live, "{done}": first, "{recording}": recording] }
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }

    /// `body`'s answer, asked every 100 ms for up to 60 s.
    private func waitFor<T>(_ what: String, _ body: () -> T?) -> T {
        for _ in 0..<600 {
            if let found = body() { return found }
            guard process.isRunning else { broken("onair exited (\(process.terminationStatus)) waiting for \(what)") }
            usleep(100_000)
        }
        broken("onair did not show \(what) within 60 s")
    }

    /// The newest stream's id once its playlist lists `segments`.
    private func newestStream(segments: Int) -> String? {
        guard let body = try? HTTPClient.request(port: port, "/api/streams").text,
              let list = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [[String: Any]],
              let newest = list.first, let id = newest["id"] as? String, (newest["segments"] as? Int ?? 0) >= segments else { return nil }
        return id
    }

    func expand(_ target: String) -> String {
        ids.reduce(target) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
    }

    /// The status of one request (0 without an answer).
    @discardableResult
    func request(_ method: String, _ target: String) -> Int {
        let headers = method == "POST" ? ["Authorization": "Bearer \(Self.token)", "Content-Length": "0"] : [:]
        return (try? HTTPClient.request(port: port, target, method: method, headers: headers).status) ?? 0
    }

    /// Recording again (a case may have stopped it), the newest stream taken as `{live}`,
    /// and until its playlist lists one segment more than now (at most 5 s: 1 s segments).
    func recordAndWaitForASegment() {
        request("POST", "/api/record/start")
        var live = ids["{live}"]!
        func count() -> Int { (try? HTTPClient.request(port: port, StreamLayout.streamsURL + live + "/" + StreamLayout.playlist).text)?.components(separatedBy: "#EXTINF").count ?? 0 }
        var before = count()
        for _ in 0..<50 where process.isRunning {
            if let newest = newestStream(segments: 0), newest != live, newest != ids["{done}"] {
                live = newest
                state.withLock { $0.ids["{live}"] = newest }
                before = count()
            }
            if count() > before { return }
            usleep(100_000)
        }
    }

    func checkAlive() {
        guard process.isRunning else { broken("onair ended (status \(process.terminationStatus), \(process.terminationReason == .uncaughtSignal ? "a signal" : "an exit"))") }
        guard request("GET", "/api/streams") == 200 else { broken("onair stopped answering") }
    }
}
