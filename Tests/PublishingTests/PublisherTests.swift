import Foundation
import XCTest
import Logging
@testable import Publishing
import HLS
import Layout
import Spool
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
        for name in ["init.mp4", "index.m3u8", "playlist.m3u8"] + (1...6).map { StreamLayout.segment($0) } {
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

    /// A board's folder (device.name): every file of it goes under `cam1/`, and a stream
    /// journaled for the destination's root (before the folder, or for another board's
    /// name) is published into the folder whole, never split between the two.
    func testABoardPublishesIntoItsOwnFolder() throws {
        let origin = FakeOrigin { _, _ in false }
        let clock = ManualClock()
        func publisher(folder: String) -> Publisher {
            Publisher(root: root, destination: "fake", folder: folder, parallel: 2, retry: RetryPolicy(quickMilliseconds: [5], maximumMilliseconds: 40),
                      log: EventNames().log, siteFiles: ["\(folder)/index.html": Array("<html>".utf8)], clock: clock, threads: false,
                      makeTransport: { origin.transport() })
        }
        let unfiled = publisher(folder: "")
        _ = try record(unfiled, id: "s1", segments: 2)
        XCTAssertTrue(pump(unfiled, clock))
        XCTAssertTrue(unfiled.isPublished("s1"))
        let board = publisher(folder: "cam1")
        XCTAssertFalse(board.isPublished("s1"), "published at the root, not in cam1/")
        XCTAssertEqual(board.resume("s1", segments: 2), 2, "so every segment goes again, into cam1/")
        XCTAssertTrue(pump(board, clock))
        XCTAssertTrue(board.isPublished("s1"))
        XCTAssertEqual(origin.violations, [])
        for name in ["init.mp4", "index.m3u8", "playlist.m3u8", "seg/000001.m4s", "seg/000002.m4s"] {
            XCTAssertEqual(origin.body("cam1/s1/\(name)"), origin.body("s1/\(name)"), name)
        }
        XCTAssertEqual(origin.body("cam1/index.html"), Array("<html>".utf8))
        let streams = try XCTUnwrap(StreamInfo.list(json: try XCTUnwrap(origin.body("cam1/streams.json"))))
        XCTAssertEqual(streams.map(\.playlist), ["s1/index.m3u8"], "relative to the board's folder")
    }

    /// streams.json lists every stream the board ever published there: one storage.min_free
    /// deleted from the board stays listed (the destination still has it); one its owner
    /// deleted there goes, by the API (`forgetPublished`) or by `onair forget` in another
    /// process, which the running publisher notices.
    /// Board cam1's publisher to `origin`, without threads, on `clock`.
    func boardPublisher(_ origin: FakeOrigin, _ clock: ManualClock) -> Publisher {
        Publisher(root: root, destination: "fake", folder: "cam1", parallel: 2,
                  retry: RetryPolicy(quickMilliseconds: [5], maximumMilliseconds: 40), log: EventNames().log,
                  clock: clock, threads: false, makeTransport: { origin.transport() })
    }

    /// The board's newest picture goes to `<folder>/poster.jpg` as a JPEG that caches
    /// revalidate; a newer one replaces one not yet sent (only the newest goes).
    func testThePosterGoesToTheBoardsFolderNewestFirst() throws {
        let origin = FakeOrigin { _, _ in false }
        let clock = ManualClock()
        let publisher = boardPublisher(origin, clock)
        publisher.publishPoster([0xFF, 0xD8, 0xFF, 1])
        publisher.publishPoster([0xFF, 0xD8, 0xFF, 2])
        XCTAssertTrue(pump(publisher, clock))
        XCTAssertEqual(origin.body("cam1/poster.jpg"), [0xFF, 0xD8, 0xFF, 2])
        XCTAssertEqual(origin.attempts["cam1/poster.jpg"], 1, "the older one was never sent")
        XCTAssertEqual(origin.objects["cam1/poster.jpg"]?.contentType, "image/jpeg")
        XCTAssertEqual(origin.objects["cam1/poster.jpg"]?.cacheControl, "no-cache")
        publisher.publishPoster([0xFF, 0xD8, 0xFF, 3])
        XCTAssertTrue(pump(publisher, clock))
        XCTAssertEqual(origin.body("cam1/poster.jpg"), [0xFF, 0xD8, 0xFF, 3])
    }

    func testTheListKeepsStreamsTheBoardDeletedUntilTheirOwnerForgetsThem() throws {
        let origin = FakeOrigin { _, _ in false }
        let clock = ManualClock()
        let publisher = boardPublisher(origin, clock)
        func listed() throws -> [String] { try XCTUnwrap(StreamInfo.list(json: try XCTUnwrap(origin.body("cam1/streams.json")))).map(\.id) }
        _ = try record(publisher, id: "s1", segments: 2)
        _ = try record(publisher, id: "s2", segments: 2)
        XCTAssertTrue(pump(publisher, clock))
        XCTAssertEqual(try listed(), ["s2", "s1"])
        // storage.min_free deletes s1 from the board.
        publisher.forget("s1")
        try FileManager.default.removeItem(atPath: root + "/streams/s1")
        _ = try record(publisher, id: "s3", segments: 1)
        XCTAssertTrue(pump(publisher, clock))
        XCTAssertEqual(try listed(), ["s3", "s2", "s1"], "s1 is still at the destination, so still listed")
        let kept = try XCTUnwrap(StreamInfo.list(json: try XCTUnwrap(origin.body("cam1/streams.json")))).last
        XCTAssertEqual(kept?.state, "ended")
        XCTAssertEqual(kept?.segments, 2, "as the destination shows it")

        // The owner deletes s1 at the destination, and says so.
        try publisher.forgetPublished("s1")
        XCTAssertTrue(pump(publisher, clock))
        XCTAssertEqual(try listed(), ["s3", "s2"])
        XCTAssertThrowsError(try publisher.forgetPublished("s9"), "never published")
        // onair forget, another process: the publisher sees the index change within a second.
        let key = Publisher.journalKey(destination: "fake", folder: "cam1")
        XCTAssertTrue(try PublishedIndex.forget("s2", root: root, key: key))
        clock.advance(by: 1_100_000_000)
        XCTAssertEqual(publisher.runReady(), 1, "the list, again")
        XCTAssertTrue(pump(publisher, clock))
        XCTAssertEqual(try listed(), ["s3"])
        // s2 is still on the board: forgotten, it is never listed or published again.
        _ = try record(publisher, id: "s4", segments: 1)
        XCTAssertTrue(pump(publisher, clock))
        XCTAssertEqual(try listed(), ["s4", "s3"])
    }

    /// Issue 29: a stream forgotten (or deleted) while its writer still stores segments
    /// trapped the live thread at the next one; what comes of it now is ignored.
    func testAStreamForgottenMidStreamIsNotTakenUpAgain() throws {
        let origin = FakeOrigin { _, _ in false }
        let clock = ManualClock()
        let publisher = boardPublisher(origin, clock)
        let description = StreamDescription(codecs: ["avc1.64001f"], width: 1280, height: 720, fps: 30, configuredBitrate: 100_000, targetDuration: 1)
        let writer = try StreamWriter(root: root, id: "live", description: description, initSegment: [0, 0, 0, 8, 0x66, 0x72, 0x65, 0x65],
                                      observer: publisher.observe)
        var segmenter = Segmenter(grid: SegmentGrid(start: 900_000, segmentTicks: 90_000), tracks: .init(audio: nil),
                                  timeline: Timeline(firstVideoCaptureTime: 0, wallClockMs: 1_796_229_753_000), nominalFrameDuration: 3000)
        var reports: [SegmentReport] = []
        for i in 0..<90 { reports += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i % 30 == 0, size: 500)) }
        reports += segmenter.finish()
        try writer.append(reports[0])
        XCTAssertTrue(pump(publisher, clock))
        try publisher.forgetPublished("live")
        for report in reports.dropFirst() { try writer.append(report) }
        try writer.finish()
        XCTAssertTrue(pump(publisher, clock))
        XCTAssertEqual(publisher.status.streamsPublishing, 0)
        XCTAssertNil(origin.body("cam1/streams/live/seg/000002.m4s"), "nothing of it is published again")
    }

    /// A damaged index is set aside (kept for a person) and rebuilt from what the board holds.
    func testADamagedIndexIsSetAsideAndRebuilt() throws {
        let key = Publisher.journalKey(destination: "fake", folder: "cam1")
        let path = PublishedIndex.path(root: root, key: key)
        try FileManager.default.createDirectory(atPath: root + "/published", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: path, contents: Data("{\"key\": 1".utf8))
        var problems: [String] = []
        let count = try PublishedIndex.update(root: root, key: key, problem: { problems.append($0) }) { index -> Int in
            _ = index.merge([StreamInfo(id: "s1", playlist: "#EXTM3U\n#EXTINF:1.0,\nseg/000001.m4s\n#EXT-X-ENDLIST\n", playlistURL: "s1/index.m3u8")])
            return index.listed.count
        }
        XCTAssertEqual(count, 1)
        XCTAssertEqual(problems.count, 1)
        XCTAssertTrue(problems.first?.hasSuffix("renamed to .corrupt") ?? false, "\(problems)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: path + ".corrupt"))
        XCTAssertEqual(PublishedIndex.read(root: root, key: key).listed.map(\.id), ["s1"])
        XCTAssertEqual(PublishedIndex.read(root: root, key: "another destination").listed, [], "an index per destination and folder")
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
            func put(_ path: String, body: [UInt8], contentType: String, cacheControl: String, condition: WriteCondition?) throws {
                if path.hasSuffix("seg/000002.m4s") { times.append(clock.now() / 1_000_000) }
                try inner.put(path, body: body, contentType: contentType, cacheControl: cacheControl, condition: condition)
            }
            func get(_ path: String) throws -> StoredObject? { try inner.get(path) }
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
            total + (try FileManager.default.attributesOfItem(atPath: "\(root)/streams/s2/\(StreamLayout.segment(n))")[.size] as! Int) })
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

/// devices.json, written by every board: read, merge, conditional write, read back.
final class FleetTests: XCTestCase {
    /// A transport that lets another board act between this one's read and its write.
    final class Interleaved: Transport {
        let inner: Transport
        var betweenReadAndWrite: (() throws -> Void)?
        init(_ inner: Transport) { self.inner = inner }
        func get(_ path: String) throws -> StoredObject? {
            let read = try inner.get(path)
            if let other = betweenReadAndWrite { betweenReadAndWrite = nil; try other() }
            return read
        }
        func put(_ path: String, body: [UInt8], contentType: String, cacheControl: String, condition: WriteCondition?) throws {
            try inner.put(path, body: body, contentType: contentType, cacheControl: cacheControl, condition: condition)
        }
    }

    func names(_ origin: FakeOrigin) -> [String] { Fleet.parse(origin.body("devices.json") ?? [])?.map(\.name) ?? [] }

    func testAWriteRacingAnotherBoardsIsRetriedWhereTheServerChecksConditions() throws {
        let origin = FakeOrigin(honoursConditions: true)
        let cam1 = Fleet.Device(name: "cam1", lastSeen: "2026-12-04T05:00:00.000Z", live: true)
        let cam2 = Fleet.Device(name: "cam2", lastSeen: nil, live: false)
        XCTAssertEqual(try Fleet.register(cam1, with: origin.transport()), .listed, "the first: If-None-Match: *")
        let racing = Interleaved(origin.transport())
        racing.betweenReadAndWrite = { XCTAssertEqual(try Fleet.register(cam2, with: origin.transport()), .listed) }
        let cam3 = Fleet.Device(name: "cam3", lastSeen: nil, live: true)
        XCTAssertEqual(try Fleet.register(cam3, with: racing), .conflict("changed since it was read (412)"))
        XCTAssertEqual(names(origin), ["cam1", "cam2"], "nothing lost")
        XCTAssertEqual(try Fleet.register(cam3, with: racing), .listed)
        XCTAssertEqual(names(origin), ["cam1", "cam2", "cam3"])
        XCTAssertEqual(Fleet.parse(origin.body("devices.json")!)?.first, cam1, "entries as written")
        // A board's new state replaces its own entry only.
        XCTAssertEqual(try Fleet.register(Fleet.Device(name: "cam1", lastSeen: nil, live: false), with: origin.transport()), .listed)
        XCTAssertEqual(Fleet.parse(origin.body("devices.json")!)?.map(\.live), [false, false, true])
    }

    /// nginx's WebDAV ignores If-Match: the later write wins, and the board it overwrote
    /// puts its entry back when it writes again (its confirmation, or its heartbeat).
    func testWhereConditionsAreIgnoredTheOverwrittenBoardWritesAgain() throws {
        let origin = FakeOrigin(honoursConditions: false)
        let cam1 = Fleet.Device(name: "cam1", lastSeen: nil, live: true), cam2 = Fleet.Device(name: "cam2", lastSeen: nil, live: true)
        let racing = Interleaved(origin.transport())
        racing.betweenReadAndWrite = { XCTAssertEqual(try Fleet.register(cam2, with: origin.transport()), .listed) }
        XCTAssertEqual(try Fleet.register(cam1, with: racing), .listed)
        XCTAssertEqual(names(origin), ["cam1"], "cam2's entry was lost to the race")
        XCTAssertEqual(try Fleet.register(cam2, with: origin.transport()), .listed)
        XCTAssertEqual(names(origin), ["cam1", "cam2"])
    }

    /// Three publishers (threads: false, one clock) on one origin: each writes its entry,
    /// live while its stream is, and off air once it has ended; none removes another's.
    func testBoardsOnOneDestinationAllAppearAndGoOffAir() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-fleet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let origin = FakeOrigin(honoursConditions: false)
        let clock = ManualClock()
        var publishers: [Publisher] = []
        for name in ["cam1", "cam2", "cam3"] {
            publishers.append(Publisher(root: root + "/" + name, destination: "fake", folder: name, parallel: 1,
                                        retry: RetryPolicy(quickMilliseconds: [5], maximumMilliseconds: 40), log: EventNames().log,
                                        lastSeen: { "2026-12-04T05:00:00.000Z" }, clock: clock, threads: false,
                                        makeTransport: { origin.transport() }))
        }
        for publisher in publishers { publisher.observe(.started(id: "s")) }
        for _ in 0..<5000 {
            for publisher in publishers { publisher.runReady() }
            clock.advance(by: 1_000_000)
        }
        let live = Fleet.parse(try XCTUnwrap(origin.body("devices.json")))
        XCTAssertEqual(live?.map(\.name), ["cam1", "cam2", "cam3"])
        XCTAssertEqual(live?.map(\.live), [true, true, true])
        XCTAssertEqual(live?.first?.catalog, "cam1/streams.json")
        for publisher in publishers { publisher.observe(.ended(id: "s")) }
        for _ in 0..<5000 {
            for publisher in publishers { publisher.runReady() }
            clock.advance(by: 1_000_000)
        }
        XCTAssertEqual(Fleet.parse(try XCTUnwrap(origin.body("devices.json")))?.map(\.live), [false, false, false])
    }
}

extension FleetTests {
    /// A board going live, off air and live again writes the same entries twice; the file
    /// never repeats its bytes, so an ETag read before (S3's is the MD5 of the bytes) can
    /// never match a later version and let a stale write through.
    func testNoTwoWritesAreTheSameBytes() throws {
        let devices = [Fleet.Device(name: "cam1", lastSeen: nil, live: true)]
        XCTAssertNotEqual(Fleet.json(devices), Fleet.json(devices))
        XCTAssertEqual(Fleet.parse(Fleet.json(devices)), devices)
    }
}
