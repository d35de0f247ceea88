import Basics
import Foundation
import XCTest
import HLS
import Publishing
import TestSupport

/// Several boards publishing at once to one destination (issue 19): each into its own
/// folder, each listing its streams, all of them in devices.json, through failures and a
/// short outage; the site at the destination's root shows every board and plays each.
final class FleetTests: XCTestCase {
    let boards = ["gym", "hall", "lab"]

    /// Starts one onair per board, at once, publishing to `url`; they stop after `seconds`.
    func startBoards(url: String, seconds: Int, extra: [String] = []) throws -> [(name: String, onair: Child, out: String)] {
        try boards.map { name in
            let out = try temporaryDirectory("fleet-" + name)
            let onair = try Child(onairBinary(), ["run", "--listen", "off", "--out", out, "--duration", "\(seconds)",
                                                  "--set", "device.name=\(name)", "--set", "video.quality=low",
                                                  "--set", "hls.segment_seconds=1", "--set", "publish.url=\(url)",
                                                  "--set", "publish.max_backoff=1", "--set", "publish.timeout=2",
                                                  "--set", "publish.drain_seconds=60"] + extra)
            return (name, onair, out)
        }
    }

    /// Everything each board made is at the destination, complete, and listed.
    func assertPublished(_ started: [(name: String, onair: Child, out: String)], read: @escaping (String) -> [UInt8]?,
                         file: StaticString = #filePath, line: UInt = #line) throws {
        let said = started.map { board in board.name + ":\n" + board.onair.stderr.split(separator: "\n").suffix(12).joined(separator: "\n") }
        let devices = try XCTUnwrap(Fleet.parse(try XCTUnwrap(read("devices.json"), said.joined(separator: "\n"), file: file, line: line)), file: file, line: line)
        XCTAssertEqual(devices.map(\.name), boards, file: file, line: line)
        let fleetLog = started.map { board in board.name + ":\n" + board.onair.stderr.split(separator: "\n").filter { $0.contains("devices.json") || $0.contains("drain") }.joined(separator: "\n") }
        XCTAssertEqual(devices.map(\.live), [false, false, false], "every board went off air at its end\n" + fleetLog.joined(separator: "\n"), file: file, line: line)
        for board in started {
            let ids = try FileManager.default.contentsOfDirectory(atPath: board.out + "/streams").filter { !$0.hasPrefix(".") }
            XCTAssertEqual(ids.count, 1, file: file, line: line)
            XCTAssertTrue(ids.allSatisfy { $0.hasSuffix("-" + board.name) }, "\(ids)", file: file, line: line)
            let list = try XCTUnwrap(StreamInfo.list(json: try XCTUnwrap(read(board.name + "/streams.json"), file: file, line: line)),
                                     file: file, line: line)
            XCTAssertEqual(list.map(\.id), ids, file: file, line: line)
            XCTAssertEqual(list.map(\.state), ["ended"], file: file, line: line)
            // The newest picture while it was live: the published viewer's poster.
            XCTAssertEqual(read(board.name + "/poster.jpg")?.prefix(3).map { $0 }, [0xFF, 0xD8, 0xFF], "\(board.name)/poster.jpg is a JPEG",
                           file: file, line: line)
            for id in ids {
                XCTAssertEqual(StreamChecker.check { read("\(board.name)/\(id)/" + $0) }, [], "\(board.name)/\(id)", file: file, line: line)
                XCTAssertEqual(read("\(board.name)/\(id)/seg/000001.m4s"), FileManager.default.contents(atPath: "\(board.out)/streams/\(id)/seg/000001.m4s").map { Array($0) },
                               file: file, line: line)
            }
        }
    }

    func testThreeBoardsOnOneWebDAVOriginThroughFailuresAndAnOutage() throws {
        let origin = try NginxOrigin()
        defer { origin.stop() }
        let proxy = try FaultProxy(upstream: origin.port) { number, elapsed in
            if elapsed > 6 && elapsed < 9 { return .reset }   // a short outage
            if number % 13 == 0 { return .reset }
            if number % 7 == 0 { return .status(503) }
            return .pass
        }
        defer { proxy.stop() }
        let started = try startBoards(url: "http://127.0.0.1:\(proxy.port)/site/", seconds: 30)
        defer { for board in started { try? FileManager.default.removeItem(atPath: board.out) } }

        // While they are live: the site's page, from the origin itself, shows the three
        // boards, each playing its live stream.
        var devices: [Fleet.Device] = []
        for _ in 0..<120 where devices.filter(\.live).count < 3 {
            usleep(250_000)
            devices = (try? HTTPClient.request(port: origin.port, "/site/devices.json")).flatMap { Fleet.parse($0.body) } ?? []
        }
        XCTAssertEqual(devices.filter(\.live).map(\.name), boards, "every board live in devices.json")
        let browser = try Chromium()
        try browser.open("http://127.0.0.1:\(origin.port)/site/index.html")
        let probe = """
            JSON.stringify(Array.from(document.querySelectorAll("section")).map(s => {
              const frame = s.querySelector("iframe"), page = frame && frame.contentDocument;
              const video = page && page.getElementById("video");
              return { name: s.dataset.device, state: s.querySelector(".state").textContent, t: video ? video.currentTime : -1,
                       player: video ? video.dataset.player || null : null, poster: video ? video.poster : null };
            }))
            """
        var first: [String: Double] = [:], last: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let text = try browser.evaluate(probe) as? String,
               let sections = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] {
                last = sections
                for section in sections {
                    if let name = section["name"] as? String, let t = section["t"] as? Double, t > 0, first[name] == nil { first[name] = t }
                }
                let advanced = sections.filter { section in
                    guard let name = section["name"] as? String, let t = section["t"] as? Double, let start = first[name] else { return false }
                    return t > start + 1
                }
                if advanced.count == 3 { break }
            }
            usleep(500_000)
        }
        let pageSays = (try? browser.evaluate("document.getElementById('info').textContent") as? String) ?? "-"
        XCTAssertEqual(last.compactMap { $0["name"] as? String }.sorted(), boards, "three boards on the page: \(last), it says \(pageSays ?? "-")")
        XCTAssertEqual(last.compactMap { $0["state"] as? String }, ["live", "live", "live"], "\(last)")
        for section in last {
            let name = section["name"] as? String ?? "?"
            XCTAssertGreaterThan((section["t"] as? Double ?? 0) - (first[name] ?? .infinity), 1, "\(name) plays its live stream: \(last)")
            XCTAssertTrue((section["poster"] as? String ?? "").contains("/site/\(name)/poster.jpg?at="), "\(name) has the board's picture as its poster: \(last)")
        }

        for board in started { XCTAssertEqual(board.onair.wait(seconds: 120).status, 0, board.onair.stderr) }
        XCTAssertGreaterThan(proxy.faults, 10)
        try assertPublished(started) { FileManager.default.contents(atPath: origin.root + "/site/" + $0).map { Array($0) } }
    }

    /// The same on S3 (moto, through failures and a short outage), which checks If-Match:
    /// the boards' writes of devices.json that cross are refused (412) and made again, and
    /// none is lost.
    func testThreeBoardsOnOneS3Bucket() throws {
        let s3 = try MotoS3()
        defer { s3.stop() }
        let proxy = try FaultProxy(upstream: s3.port) { number, elapsed in
            if elapsed > 1.5 && elapsed < 3 { return .reset }   // a short outage
            return number % 11 == 0 ? .status(503) : .pass
        }
        defer { proxy.stop() }
        setenv("AWS_ACCESS_KEY_ID", s3.accessKey, 1)
        setenv("AWS_SECRET_ACCESS_KEY", s3.secretKey, 1)
        defer { unsetenv("AWS_ACCESS_KEY_ID"); unsetenv("AWS_SECRET_ACCESS_KEY") }
        let started = try startBoards(url: "s3://\(s3.bucket)/site/", seconds: 6, extra: ["--pace", "fast", "--set", "publish.s3.endpoint=http://127.0.0.1:\(proxy.port)"])
        defer { for board in started { try? FileManager.default.removeItem(atPath: board.out) } }
        for board in started { XCTAssertEqual(board.onair.wait(seconds: 120).status, 0, board.onair.stderr) }
        XCTAssertGreaterThan(proxy.faults, 0)
        let objects = try s3.objects(prefix: "site/")
        try assertPublished(started) { objects["site/" + $0]?.body }
        XCTAssertEqual(objects["site/devices.json"]?.contentType, "application/json")
        XCTAssertEqual(objects["site/index.html"]?.contentType, "text/html; charset=utf-8")
    }
}
