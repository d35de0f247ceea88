import Foundation
import XCTest
import HLS
import Layout
import Server
import TestSupport
import Threading

/// Low-latency HLS against the running server, with a client of its own (HLS_RULES LL8,
/// LL11, LL12): a live stream made by the segmenter from fake samples, 10 frames a part
/// and 60 a segment, made when the test says so: a request the server holds is answered
/// once the test has made what it waits for, with no clock between them.
final class LowLatencyServerTests: XCTestCase {
    var root = ""
    var edge: LiveEdge!
    var server: WebServer!
    var producer: Producer!

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "onair-ll-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/streams/live", withIntermediateDirectories: true)
        edge = LiveEdge()
        server = try WebServer(listen: "127.0.0.1:0", root: root, liveEdge: edge,
                               limits: .init(connections: 1024, perAddress: 1024, idleSeconds: 30))
        producer = Producer(edge: edge, id: "live")
    }

    override func tearDown() {
        producer?.stop()
        server?.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Makes the stream as the live output does, on the test's thread, a frame at a time:
    /// segments and parts go to the live edge, which answers what the server holds.
    final class Producer {
        let edge: LiveEdge
        let id: String
        static let timing = PartTiming(ticks: 30_000, targetDuration: 2)
        private var segmenter: Segmenter
        private var stopped = false
        private(set) var parts: [String: [UInt8]] = [:]
        private(set) var frameCount = 0
        /// The sequence number of the last segment listed, 0 before the first.
        private(set) var lastSegment = 0

        init(edge: LiveEdge, id: String) {
            self.edge = edge
            self.id = id
            edge.begin(id, targetDuration: 2, timing: Self.timing)
            segmenter = Segmenter(grid: SegmentGrid(start: 900_000, segmentTicks: 180_000), tracks: .init(audio: nil),
                                  timeline: Timeline(firstVideoCaptureTime: 0, wallClockMs: 1_000_000),
                                  nominalFrameDuration: 3000, partTicks: Self.timing.ticks)
        }

        /// One more frame (nothing once stopped): its parts, and a segment when it closes one.
        func frame() {
            guard !stopped else { return }
            let i = frameCount
            let segments = segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i % 60 == 0, size: 100 + i % 13))
            let made = segmenter.takeParts()
            for part in made { parts[StreamLayout.part(sequence: part.sequence, index: part.index)] = part.bytes }
            frameCount += 1
            edge.add(id, parts: made)
            for segment in segments {
                let entry = MediaPlaylist.Entry(uri: StreamLayout.segment(segment.sequence), duration: segment.durationSeconds,
                                                programDateTimeMs: segment.programDateTimeMs)
                edge.add(id, segment: segment, entry: entry)
                lastSegment = segment.sequence
            }
        }

        /// Frames until the part at `uri` is made (at most two segments' worth).
        func make(part uri: String) {
            for _ in 0..<120 where parts[uri] == nil { frame() }
        }

        /// Frames until segment `sequence` is listed.
        func make(segment sequence: Int) {
            for _ in 0..<(60 * (sequence + 1)) where lastSegment < sequence { frame() }
        }

        /// Makes no more frames.
        func stop() { stopped = true }
        func part(_ uri: String) -> [UInt8]? { parts[uri] }
    }

    func get(_ path: String) throws -> HTTPResponse { try HTTPClient.request(port: server.port, path) }

    /// The hint of the playlist at `path`: the segment and part it names.
    /// The part the playlist hints, and its segment and index.
    func hint(_ text: String) -> (uri: String, msn: Int, part: Int)? {
        guard let uri = LowLatencyChecker.parse(text).hint, let (msn, part) = StreamLayout.partNumbers(uri) else { return nil }
        return (uri, msn, part)
    }

    struct NoHint: Error {}

    /// Sends `path` on a connection of its own and waits until the server holds it.
    func held(_ path: String, heldBefore: Int = 0) throws -> RawSocket {
        let socket = try XCTUnwrap(RawSocket(port: server.port))
        XCTAssertTrue(socket.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n"))
        XCTAssertTrue(server.waitForHeldRequests(heldBefore + 1), path)
        return socket
    }

    /// The live playlist once it lists a segment and hints a part: the first segment made,
    /// then the blocking reload for it, which the server answers at once.
    func waitForHint() throws -> String {
        producer.make(segment: 1)
        let reply = try get("/streams/live/playlist.m3u8?_HLS_msn=1")
        guard reply.status == 200, hint(reply.text) != nil, reply.text.contains("#EXTINF") else { throw NoHint() }
        return reply.text
    }

    func testBlockingReloadsAndHintedPartsFollowTheLiveEdge() throws {
        var text = try waitForHint()
        XCTAssertTrue(text.contains("#EXT-X-PART-INF:PART-TARGET=0.33334\n"), text)
        XCTAssertTrue(text.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.0,PART-HOLD-BACK=1.00002\n"))
        for _ in 0..<12 {
            guard let next = hint(text) else { return XCTFail("no hint in\n\(text)") }
            // The hinted part, asked for before it exists: held, then its bytes.
            let asking = try held("/streams/live/\(next.uri)")
            producer.make(part: next.uri)
            let part = try HTTPClient.parse(asking.response(), method: "GET")
            XCTAssertEqual(part.status, 200, next.uri)
            XCTAssertEqual(part.header("Content-Type"), "video/mp4")
            XCTAssertEqual(part.body, producer.part(next.uri), next.uri)
            // The blocking reload for it answers with a playlist that lists it.
            let reload = try get("/streams/live/playlist.m3u8?_HLS_msn=\(next.msn)&_HLS_part=\(next.part)")
            XCTAssertEqual(reload.status, 200)
            XCTAssertTrue(reload.text.contains("URI=\"\(next.uri)\""), reload.text)
            XCTAssertEqual(reload.header("Cache-Control"), "public, max-age=12")
            let parts = reload.text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-PART:") }
            XCTAssertTrue(parts.allSatisfy { line in
                let duration = line.split(separator: ",")[0].dropFirst("#EXT-X-PART:DURATION=".count)
                return Double(duration)! <= 0.33334
            })
            XCTAssertEqual(parts.filter { $0.contains("INDEPENDENT=YES") }.count, parts.filter { $0.contains(".0.m4s") }.count)
            text = reload.text
        }
        // A segment request (MSN only) is held until the segment is listed.
        guard let last = hint(text) else { return XCTFail() }
        let asking = try held("/streams/live/playlist.m3u8?_HLS_msn=\(last.msn + 1)")
        producer.make(segment: last.msn + 1)
        let reload = try HTTPClient.parse(asking.response(), method: "GET")
        XCTAssertTrue(reload.text.contains(StreamLayout.segment(last.msn + 1) + "\n"))
    }

    func testAPlayerKeepsItsConnection() throws {
        _ = try waitForHint()
        guard let socket = RawSocket(port: server.port) else { return XCTFail("connect") }
        for _ in 0..<3 {
            socket.send("GET /streams/live/playlist.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n")
            let reply = String(decoding: socket.response(), as: UTF8.self)
            XCTAssertTrue(reply.hasPrefix("HTTP/1.1 200"), reply)
            guard let next = hint(reply) else { return XCTFail() }
            socket.send("GET /streams/live/\(next.uri) HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertTrue(server.waitForHeldRequests(1))
            producer.make(part: next.uri)
            XCTAssertTrue(String(decoding: socket.response(), as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        }
        XCTAssertFalse(socket.isClosedByPeer)
    }

    func testBadDirectivesAndPartsAreRefused() throws {
        let text = try waitForHint()
        guard let next = hint(text) else { return XCTFail() }
        for query in ["_HLS_part=1", "_HLS_msn=abc", "_HLS_msn=-2", "_HLS_msn=1&_HLS_part=1.5", "_HLS_skip=maybe",
                      "_HLS_msn=\(next.msn + 3)", "_HLS_msn=\(next.msn + 1)&_HLS_part=\(next.part + 10)"] {
            let reply = try get("/streams/live/playlist.m3u8?\(query)")
            XCTAssertEqual(reply.status, 400, "\(query): \(reply.text)")
            XCTAssertFalse(reply.text.isEmpty)
        }
        XCTAssertEqual(try get("/streams/live/part/000001.99.m4s").status, 404, "past the segment's parts")
        XCTAssertEqual(try get("/streams/live/part/\(next.msn + 5).0.m4s").status, 404, "not hinted")
        XCTAssertEqual(try get("/streams/live/part/nonsense.m4s").status, 404)
        XCTAssertEqual(try get("/streams/other/part/000001.0.m4s").status, 404)
        let delta = try get("/streams/live/playlist.m3u8?_HLS_skip=YES")
        XCTAssertEqual(delta.status, 200)
        XCTAssertTrue(delta.text.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS="), delta.text)
    }

    /// Nothing is held forever: a part that never comes gets a 503 after three target
    /// durations (§6.2.5.2); the end of the stream answers what was held for it.
    func testHeldRequestsEndIn503OrWithTheStream() throws {
        let idle = PartTiming(ticks: 30_000, targetDuration: 1)
        edge.begin("idle", targetDuration: 1, timing: idle)
        // Held (counted as such), then answered 503 — not answered at once.
        let socket = try XCTUnwrap(RawSocket(port: server.port))
        socket.send("GET /streams/idle/playlist.m3u8?_HLS_msn=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(server.waitForHeldRequests(1))
        XCTAssertTrue(String(decoding: socket.response(), as: UTF8.self).hasPrefix("HTTP/1.1 503"))
        XCTAssertEqual(try get("/streams/idle/part/000001.0.m4s").status, 503)
        XCTAssertEqual(server.heldRequests, 0)

        _ = try waitForHint()
        producer.stop()
        // The hint of a stream that has stopped being made: it will never come.
        guard let never = hint(try get("/streams/live/playlist.m3u8").text) else { return XCTFail() }
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-ENDLIST\n".utf8).write(to: URL(fileURLWithPath: root + "/streams/live/playlist.m3u8"))
        // Held for the hinted part, then the stream ends: the request is answered.
        let asking = try XCTUnwrap(RawSocket(port: server.port))
        asking.send("GET /streams/live/playlist.m3u8?_HLS_msn=\(never.msn)&_HLS_part=\(never.part) HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(server.waitForHeldRequests(1))
        edge.end("live")
        let held = try HTTPClient.parse(asking.response(), method: "GET")
        XCTAssertEqual(held.status, 200, "the ended stream's file answers, its directives ignored")
        XCTAssertTrue(held.text.contains("#EXT-X-ENDLIST"), held.text)
        XCTAssertEqual(try get("/streams/live/\(never.uri)").status, 404, "a hint for a stream that ended")
        XCTAssertEqual(server.heldRequests, 0)
    }

    /// 500 players waiting at once take no thread each and hold nothing up: the stream
    /// goes on being made while they wait, and every one of them is answered with the
    /// part it asked for.
    func testFiveHundredHeldRequests() throws {
        let text = try waitForHint()
        guard let next = hint(text) else { return XCTFail() }
        let target = (msn: next.msn + 1, part: 2)  // about a second ahead
        var sockets: [RawSocket] = []
        for n in 0..<500 {
            guard let socket = RawSocket(port: server.port, timeoutMilliseconds: 20_000) else { return XCTFail("connection \(n)") }
            let path = n % 2 == 0 ? "playlist.m3u8?_HLS_msn=\(target.msn)&_HLS_part=\(target.part)" : next.uri
            XCTAssertTrue(socket.send("GET /streams/live/\(path) HTTP/1.1\r\nHost: x\r\n\r\n"))
            sockets.append(socket)
        }
        XCTAssertTrue(server.waitForHeldRequests(500))
        producer.make(part: StreamLayout.part(sequence: target.msn, index: target.part))
        for (n, socket) in sockets.enumerated() {
            let reply = socket.response()
            let head = String(decoding: reply.prefix(12), as: UTF8.self)
            XCTAssertEqual(head, "HTTP/1.1 200", "request \(n)")
            if n % 2 == 0 {
                XCTAssertTrue(String(decoding: reply, as: UTF8.self)
                    .contains(StreamLayout.part(sequence: target.msn, index: target.part)), "request \(n)")
            }
        }
        XCTAssertEqual(server.heldRequests, 0)
        XCTAssertEqual(edge.waiting, 0)
    }

    /// A live stream's directory appears with its first segment; before that its init.mp4
    /// (which the first parts' EXT-X-MAP names) is answered from its staging directory.
    func testALiveStreamsInitIsServedBeforeItsDirectoryExists() throws {
        _ = try waitForHint()
        try FileManager.default.removeItem(atPath: root + "/streams/live")
        try FileManager.default.createDirectory(atPath: root + "/streams/.live.tmp", withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: root + "/streams/.live.tmp/init.mp4"))
        let staged = try HTTPClient.request(port: server.port, "/streams/live/init.mp4")
        XCTAssertEqual(staged.status, 200)
        XCTAssertEqual(staged.body, [1, 2, 3])
        try FileManager.default.createDirectory(atPath: root + "/streams/.gone.tmp", withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: root + "/streams/.gone.tmp/init.mp4"))
        XCTAssertEqual(try HTTPClient.request(port: server.port, "/streams/gone/init.mp4").status, 404, "only a live stream's")
        XCTAssertEqual(try HTTPClient.request(port: server.port, "/streams/.live.tmp/init.mp4").status, 404, "never by its hidden name")
    }

    /// Issue 29: held requests have a budget of their own, half the connections, so they
    /// alone never fill the server; past it, a 503 at once.
    func testHeldRequestsHaveABudgetBelowTheConnectionLimit() throws {
        server.stop()
        server = try WebServer(listen: "127.0.0.1:0", root: root, liveEdge: edge, limits: .init(connections: 8, perAddress: 8, idleSeconds: 30))
        let text = try waitForHint()
        guard let next = hint(text) else { return XCTFail() }
        let ahead = "/streams/live/playlist.m3u8?_HLS_msn=\(next.msn + 1)&_HLS_part=2"
        // Four are held; the fifth and sixth, while those wait, are refused at once.
        let held = try (0..<4).map { try self.held(ahead, heldBefore: $0) }
        for _ in 0..<2 {
            let refused = try XCTUnwrap(RawSocket(port: server.port))
            XCTAssertTrue(refused.send("GET \(ahead) HTTP/1.1\r\nHost: x\r\n\r\n"))
            XCTAssertEqual(String(decoding: refused.response().prefix(12), as: UTF8.self), "HTTP/1.1 503")
        }
        XCTAssertEqual(server.heldRequests, 4)
        producer.make(part: StreamLayout.part(sequence: next.msn + 1, index: 2))
        for socket in held { XCTAssertEqual(String(decoding: socket.response().prefix(12), as: UTF8.self), "HTTP/1.1 200") }
    }

    /// Issue 29: 2,000 held requests from 100 addresses left a viewer 1 answer in 8. The
    /// budget holds half the connections and refuses the rest at once; those stay open
    /// idle, and give way to a viewer.
    func testHeldRequestsFromManyAddressesLeaveRoomForAViewer() throws {
        let text = try waitForHint()
        guard let next = hint(text) else { return XCTFail() }
        let ahead = "playlist.m3u8?_HLS_msn=\(next.msn + 3)&_HLS_part=0"  // a few seconds ahead
        var sockets: [RawSocket] = []
        for n in 0..<2000 {
            guard let socket = RawSocket(port: server.port, from: "127.0.3.\(n % 100 + 1)") else { continue }
            socket.send("GET /streams/live/\(ahead) HTTP/1.1\r\nHost: x\r\n\r\n")
            sockets.append(socket)
        }
        XCTAssertGreaterThan(sockets.count, 1024)
        // Each viewer gets in, as a player does: a connection that libmicrohttpd refused
        // while the ones given way were still closing is tried again (a few times at most).
        for viewer in 0..<3 {
            var answers: [String] = []
            for _ in 0..<5 where answers.last != "HTTP/1.1 200" {
                guard let socket = RawSocket(port: server.port, from: "127.0.4.\(viewer + 1)", timeoutMilliseconds: 2000) else { continue }
                socket.send("GET /streams/live/playlist.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n")
                answers.append(String(decoding: socket.response().prefix(12), as: UTF8.self))
            }
            XCTAssertEqual(answers.last, "HTTP/1.1 200", "viewer \(viewer): \(answers)")
        }
        XCTAssertLessThanOrEqual(server.heldRequests, 512)
    }

    /// Stopping the server answers what it holds (libmicrohttpd must not stop with a
    /// connection suspended).
    func testStoppingAnswersHeldRequests() throws {
        let text = try waitForHint()
        guard let next = hint(text) else { return XCTFail() }
        producer.stop()
        var sockets: [RawSocket] = []
        for _ in 0..<20 {
            guard let socket = RawSocket(port: server.port) else { return XCTFail() }
            socket.send("GET /streams/live/playlist.m3u8?_HLS_msn=\(next.msn + 1) HTTP/1.1\r\nHost: x\r\n\r\n")
            sockets.append(socket)
        }
        XCTAssertTrue(server.waitForHeldRequests(20))
        server.stop()
        for socket in sockets {
            let reply = String(decoding: socket.response(), as: UTF8.self)
            XCTAssertTrue(reply.isEmpty || reply.hasPrefix("HTTP/1.1 503"), reply)
        }
    }
}
