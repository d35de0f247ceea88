import Logging
import Media
import Threading
import XCTest
@testable import Live

/// A complete reader of the live feed (the HLS packager's kind): nothing lost, the
/// publisher held while its ring is full, the stream's end waiting for it, its failure
/// thrown to the publisher once, and a stream given up letting a held publisher go.
final class CompleteReaderTests: XCTestCase {
    struct Failed: Error, Equatable {}

    func feed() -> LiveFeed {
        let feed = LiveFeed(log: .silent())
        addTeardownBlock { feed.stop() }
        return feed
    }

    static func sample(_ index: Int, rung: Int = 0) -> EncodedItem {
        .video(EncodedSample(data: [UInt8(index)], dts: Int64(index) * 3000, pts: Int64(index) * 3000, duration: 3000, isSync: index == 0, rung: rung))
    }

    static func indices(_ items: [LiveItem]) -> [Int] {
        items.compactMap { if case .encoded(.video(let sample)) = $0 { Int(sample.data[0]) } else { nil } }
    }

    /// A publisher on its own thread that counts what it has published.
    final class Publisher {
        let published = Condition(0)
        let thread: WorkerThread

        init(_ feed: LiveFeed, items: [EncodedItem]) {
            let published = self.published
            thread = WorkerThread(name: "publisher") {
                for item in items {
                    try? feed.publish(encoded: item)
                    published.withLock { $0 += 1 }
                    published.broadcast()
                }
            }
        }

        func wait(untilPublished count: Int) {
            published.withLock(waitingFor: { $0 >= count ? .done(()) : .wait })
        }

        var count: Int { published.withLock { $0 } }
    }

    /// Capacity 2: the third publish waits until the reader takes; every item reaches it,
    /// in order, on every rung; real-time readers' kinds are not given to it.
    func testNothingIsLostAndAFullRingHoldsThePublisher() {
        let feed = feed()
        feed.begin(RealTimeStream(id: "boot-1"))
        let reader = feed.join("hls", wants: .complete, capacity: 2, wake: {})
        feed.publish(RealTimePicture(accessUnit: [0, 0, 0, 1, 0x65], captureTime: 0, isSync: true, sps: [0x67], pps: [0x68]))
        let publisher = Publisher(feed, items: (0..<7).map { Self.sample($0, rung: $0 % 2) })
        publisher.wait(untilPublished: 2)
        XCTAssertEqual(publisher.count, 2, "the third waits for room")
        var taken: [Int] = []
        while taken.count < 7, let items = reader.next() { taken += Self.indices(items) }
        publisher.thread.join()
        XCTAssertEqual(taken, Array(0..<7))
        XCTAssertEqual(reader.discarded, 0)
        XCTAssertEqual(feed.readers.map(\.name), ["hls"])
    }

    /// The stream's end goes to the reader, and `finish` returns once it says it is done;
    /// the reader then leaves the feed and its `next` says there is no more.
    func testTheEndWaitsForTheReader() throws {
        let feed = feed()
        feed.begin(RealTimeStream(id: "boot-1"))
        let reader = feed.join("hls", wants: .complete, capacity: 4, wake: {})
        let seen = Locked<[String]>([])
        let thread = WorkerThread(name: "reader") {
            while let items = reader.next() {
                for case .encoded(let item) in items {
                    switch item {
                    case .video(let sample): seen.withLock { $0.append("video \(sample.data[0])") }
                    case .audio: seen.withLock { $0.append("audio") }
                    case .change(let change): seen.withLock { $0.append("change \(change.fps)") }
                    case .end(let totals):
                        seen.withLock { $0.append("end \(totals.framesEncoded)") }
                        feed.finished(reader, failure: nil)
                    }
                }
            }
        }
        try feed.publish(encoded: Self.sample(0))
        try feed.publish(encoded: .change(StreamChange(fps: 15, topRung: 0, format: true, frame: 1)))
        try feed.publish(encoded: Self.sample(1))
        try feed.finish(StreamTotals(framesEncoded: 2, framesSkipped: 0, framesRepeated: 0, audioSilenceFilled: 0))
        XCTAssertEqual(seen.withLock { $0 }, ["video 0", "change 15", "video 1", "end 2"], "all of it before finish returned")
        thread.join()
        XCTAssertTrue(feed.readers.isEmpty)
        XCTAssertNil(reader.next())
    }

    /// A reader that fails: the publisher's next call throws it, once; the reader is gone,
    /// so the rest is not held; the next stream starts clean.
    func testAReadersFailureIsThrownToThePublisherOnce() throws {
        let feed = feed()
        feed.begin(RealTimeStream(id: "boot-1"))
        let reader = feed.join("hls", wants: .complete, capacity: 1, wake: {})
        try feed.publish(encoded: Self.sample(0))
        XCTAssertEqual(Self.indices(reader.next() ?? []), [0])
        feed.finished(reader, failure: Failed())
        XCTAssertThrowsError(try feed.publish(encoded: Self.sample(1))) { XCTAssertEqual($0 as? Failed, Failed()) }
        for index in 2..<5 { XCTAssertNoThrow(try feed.publish(encoded: Self.sample(index)), "told once, and nothing waits for room") }
        XCTAssertNoThrow(try feed.finish(StreamTotals(framesEncoded: 5, framesSkipped: 0, framesRepeated: 0, audioSilenceFilled: 0)))
        // A failure that comes while the stream finishes is what finish throws.
        feed.begin(RealTimeStream(id: "boot-2"))
        let next = feed.join("hls", wants: .complete, capacity: 4, wake: {})
        let thread = WorkerThread(name: "reader") {
            while let items = next.next() {
                if items.contains(where: { if case .encoded(.end) = $0 { true } else { false } }) { feed.finished(next, failure: Failed()) }
            }
        }
        XCTAssertThrowsError(try feed.finish(StreamTotals(framesEncoded: 0, framesSkipped: 0, framesRepeated: 0, audioSilenceFilled: 0)))
        thread.join()
    }

    /// A reader that leaves (its stream given up) while the publisher waits for its room:
    /// the publisher goes on, and the reader gets what was queued, then nothing.
    func testAReaderThatLeavesLetsAHeldPublisherGo() {
        let feed = feed()
        feed.begin(RealTimeStream(id: "boot-1"))
        let reader = feed.join("hls", wants: .complete, capacity: 1, wake: {})
        let publisher = Publisher(feed, items: (0..<3).map { Self.sample($0) })
        publisher.wait(untilPublished: 1)
        XCTAssertEqual(publisher.count, 1)
        feed.leave(reader)
        publisher.thread.join()
        XCTAssertEqual(publisher.count, 3)
        XCTAssertEqual(Self.indices(reader.next() ?? []), [0])
        XCTAssertNil(reader.next())
    }
}
