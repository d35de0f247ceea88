import Foundation
import XCTest
import Logging
@testable import Publishing
import HLS
import Media
import TestSupport

/// The publisher against an in-memory origin that fails on a schedule, publishing a real
/// stream that a StreamWriter writes into a temporary spool.
final class PublisherTests: XCTestCase {
    var root = ""
    override func setUp() { root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-publish-\(UUID().uuidString)").path }
    override func tearDown() { try? FileManager.default.removeItem(atPath: root) }

    /// Writes `segments` 1 s segments; the writer tells the publisher, as on the live path.
    func record(_ publisher: Publisher, id: String, segments: Int, size: (Int) -> Int = { _ in 500 }) throws -> StreamWriter {
        let description = StreamDescription(codecs: ["avc1.64001f"], width: 1280, height: 720, fps: 30, configuredBitrate: 100_000, targetDuration: 1)
        let writer = try StreamWriter(root: root, id: id, description: description, initSegment: [0, 0, 0, 8, 0x66, 0x72, 0x65, 0x65],
                                      observer: publisher.observe)
        let timeline = Timeline(firstVideoCaptureTime: 0, wallClockMs: 1_796_229_753_000)
        var segmenter = Segmenter(grid: SegmentGrid(start: 900_000, segmentTicks: 90_000), tracks: .init(audio: nil),
                                  timeline: timeline, nominalFrameDuration: 3000)
        var reports: [SegmentReport] = []
        for i in 0..<(30 * segments) {
            reports += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i % 30 == 0, size: size(i / 30)))
        }
        reports += segmenter.finish()
        for report in reports { try writer.append(report) }
        try writer.finish()
        return writer
    }

    func testEverythingArrivesInASafeOrderDespiteFailures() throws {
        // Segment 2 fails four times (quick retries, then backoff), every third playlist
        // PUT fails once, init fails once.
        let origin = FakeOrigin { path, attempt in
            (path.hasSuffix("seg/000002.m4s") && attempt <= 4) || (path.hasSuffix("init.mp4") && attempt == 1)
                || (path.hasSuffix("playlist.m3u8") && attempt % 3 == 0)
        }
        let events = EventNames()
        let clock = ManualClock()
        let publisher = Publisher(root: root, destination: "fake", parallel: 2, retry: RetryPolicy(quickMilliseconds: [5, 10], maximumMilliseconds: 40),
                                  log: events.log, siteFiles: ["index.html": Array("<html>".utf8)], clock: clock, threads: false,
                                  makeTransport: { origin.transport() })
        let writer = try record(publisher, id: "s1", segments: 6, size: { $0 == 3 ? 20_000 : 500 })
        XCTAssertTrue(pump(publisher, clock), "published, on virtual time")
        XCTAssertEqual(origin.violations, [])
        for name in ["init.mp4", "index.m3u8", "playlist.m3u8"] + (1...6).map(MediaPlaylist.segmentURI) {
            XCTAssertEqual(origin.body("s1/\(name)"), FileManager.default.contents(atPath: writer.directory + "/" + name).map { Array($0) }, name)
        }
        XCTAssertEqual(origin.objects["s1/seg/000001.m4s"]?.cacheControl, "public, max-age=31536000, immutable")
        XCTAssertEqual(origin.objects["s1/playlist.m3u8"]?.contentType, "application/vnd.apple.mpegurl")
        XCTAssertEqual(origin.objects["s1/playlist.m3u8"]?.cacheControl, "no-cache")
        XCTAssertEqual(origin.attempts["s1/seg/000002.m4s"], 5)
        XCTAssertEqual(publisher.counters.failures, origin.failures)
        XCTAssertEqual(events.names.filter { $0 == "upload.retry" }.count, publisher.counters.failures)
        XCTAssertEqual(events.names.last { $0.hasPrefix("stream.") }, "stream.published")
        XCTAssertEqual(publisher.pendingSegments, 0)
        // The destination's root is a site: the viewer page and the list of streams.
        XCTAssertEqual(origin.body("index.html"), Array("<html>".utf8))
        XCTAssertEqual(origin.objects["index.html"]?.contentType, "text/html; charset=utf-8")
        let streams = try XCTUnwrap(StreamInfo.list(json: try XCTUnwrap(origin.body("streams.json"))))
        XCTAssertEqual(streams.map(\.id), ["s1"])
        XCTAssertEqual(streams.first?.state, "ended")
        XCTAssertEqual(streams.first?.segments, 6)
        XCTAssertEqual(streams.first?.playlist, "s1/index.m3u8", "relative to the site's root")
    }

    /// Without worker threads: the clock moves a millisecond at a time and the publisher
    /// does what is due, until everything is published (true) or 10 virtual seconds pass.
    func pump(_ publisher: Publisher, _ clock: ManualClock) -> Bool {
        var steps = 0
        while !publisher.drain(seconds: 0) && steps < 10_000 {
            publisher.runReady()
            clock.advance(by: 1_000_000)
            steps += 1
        }
        return publisher.drain(seconds: 0)
    }

    /// The retry schedule on virtual time: no worker threads, no real sleep. The clock
    /// moves a millisecond at a time and the publisher does what is due; segment 2's
    /// attempts fall exactly where the policy puts them (5, 10 ms quick, then backoff
    /// doubling from 20 ms to the 40 ms ceiling, at its low end with jitter 0).
    func testRetriesFallWhereThePolicyPutsThemOnVirtualTime() throws {
        final class Stamped: Transport, @unchecked Sendable {  // used on the test's thread only (no worker threads)
            let inner: Transport, clock: ManualClock, times = Times()
            init(_ inner: Transport, _ clock: ManualClock) { self.inner = inner; self.clock = clock }
            func put(_ path: String, body: [UInt8], contentType: String, cacheControl: String) throws {
                if path.hasSuffix("seg/000002.m4s") { times.append(clock.now() / 1_000_000) }
                try inner.put(path, body: body, contentType: contentType, cacheControl: cacheControl)
            }
        }
        final class Times: @unchecked Sendable {  // one thread: runReady runs on the test's
            var list: [Int64] = []
            func append(_ value: Int64) { list.append(value) }
        }
        let origin = FakeOrigin { path, attempt in
            (path.hasSuffix("seg/000002.m4s") && attempt <= 4) || (path.hasSuffix("playlist.m3u8") && attempt % 3 == 0)
        }
        let clock = ManualClock(now: 5_000_000_000)
        let transport = Stamped(origin.transport(), clock)
        let publisher = Publisher(root: root, destination: "fake", parallel: 2, retry: RetryPolicy(quickMilliseconds: [5, 10], maximumMilliseconds: 40),
                                  log: .silent(), clock: clock, jitter: { 0 }, threads: false, makeTransport: { transport })
        _ = try record(publisher, id: "s1", segments: 4)
        XCTAssertTrue(pump(publisher, clock))
        XCTAssertEqual(origin.violations, [])
        let attempts = transport.times.list
        XCTAssertEqual(attempts.count, 5)
        XCTAssertEqual(zip(attempts, attempts.dropFirst()).map { $1 - $0 }, [5, 10, 10, 20])
        XCTAssertEqual(origin.attempts["s1/seg/000002.m4s"], 5)
    }

    func testAnOutageHoldsEverythingBackThenItAllGoesUp() throws {
        final class Switch: @unchecked Sendable { var down = true }
        let outage = Switch()
        let origin = FakeOrigin { _, _ in outage.down }
        let publisher = Publisher(root: root, destination: "fake", parallel: 2, retry: RetryPolicy(quickMilliseconds: [5, 10], maximumMilliseconds: 20),
                                  log: .silent(), makeTransport: { origin.transport() })
        defer { publisher.stop() }
        _ = try record(publisher, id: "s2", segments: 3)
        XCTAssertFalse(publisher.drain(seconds: 0.3), "nothing can be published during the outage")
        XCTAssertEqual(origin.objects.count, 0)
        XCTAssertEqual(publisher.pendingSegments, 3)
        let during = publisher.status
        XCTAssertEqual(during.pendingSegments, 3)
        XCTAssertEqual(during.pendingBytes, try (1...3).reduce(0) { total, n in
            total + (try FileManager.default.attributesOfItem(atPath: "\(root)/streams/s2/\(MediaPlaylist.segmentURI(n))")[.size] as! Int) })
        XCTAssertGreaterThanOrEqual(during.oldestPendingSeconds ?? -1, 0)
        XCTAssertGreaterThan(during.failures, 0)
        XCTAssertEqual(during.lastError?.contains("scheduled failure"), true)
        XCTAssertEqual(during.streamsPublishing, 1)
        outage.down = false
        XCTAssertTrue(publisher.drain(seconds: 30))
        let after = publisher.status
        XCTAssertEqual(after.pendingSegments, 0)
        XCTAssertNil(after.oldestPendingSeconds)
        XCTAssertEqual(after.streamsPublishing, 0)
        XCTAssertEqual(origin.violations, [])
        XCTAssertTrue(ParsedPlaylist(text: String(decoding: origin.body("s2/playlist.m3u8") ?? [], as: UTF8.self)).isEnded)
    }
}
