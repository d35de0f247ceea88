import Foundation
import XCTest
import Logging
import TestSupport
@testable import Spool

final class StorageTests: XCTestCase {
    var root = ""
    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-storage-\(UUID().uuidString)").path
        for (id, ended) in [("20261201T000000Z-aaaa", true), ("20261201T010000Z-bbbb", true), ("20261201T020000Z-cccc", true),
                            ("20261202T000000Z-live", false)] {
            try FileManager.default.createDirectory(atPath: "\(root)/streams/\(id)", withIntermediateDirectories: true)
            try ("#EXTM3U\n" + (ended ? "#EXT-X-ENDLIST\n" : "")).write(toFile: "\(root)/streams/\(id)/playlist.m3u8", atomically: true, encoding: .utf8)
        }
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: root) }

    /// A disk of 10 000 bytes with 500 free, where every deleted stream frees 300.
    func keeper(minimum: MinimumFree, events: EventNames) -> StorageKeeper {
        let root = self.root
        return StorageKeeper(root: root, minimum: minimum, isPublished: { $0.hasSuffix("bbbb") || $0.hasSuffix("cccc") },
                             space: { _ in
                                 let left = (try? FileManager.default.contentsOfDirectory(atPath: root + "/streams").count) ?? 0
                                 return .init(total: 10_000, available: 500 + Int64(4 - left) * 300)
                             }, log: events.log)
    }

    func testPublishedStreamsGoFirstOldestFirst() {
        let events = EventNames()
        XCTAssertEqual(keeper(minimum: .bytes(700), events: events).prune(recording: "20261202T000000Z-live"), ["20261201T010000Z-bbbb"])
        XCTAssertEqual(events.names, ["storage.deleted"])
    }

    func testUnpublishedOnlyAsALastResortAndNeverTheLiveStream() {
        let events = EventNames()
        let deleted = keeper(minimum: .percent(20), events: events).prune(recording: "20261202T000000Z-live")
        XCTAssertEqual(deleted, ["20261201T010000Z-bbbb", "20261201T020000Z-cccc", "20261201T000000Z-aaaa"])
        XCTAssertEqual(events.names, ["storage.deleted", "storage.deleted", "storage.deleted_unpublished", "storage.low"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: root + "/streams/20261202T000000Z-live"))
    }

    func testNothingHappensWithEnoughRoom() {
        let events = EventNames()
        XCTAssertEqual(keeper(minimum: .bytes(400), events: events).prune(recording: nil), [])
        XCTAssertEqual(events.names, [])
    }

    func testThresholds() {
        XCTAssertEqual(MinimumFree.automatic.bytes(ofTotal: 8 << 30), (8 << 30) / 10, "a small card keeps 10 %")
        XCTAssertEqual(MinimumFree.automatic.bytes(ofTotal: 256 << 30), 1 << 30, "a big disk keeps 1 GiB")
        XCTAssertEqual(MinimumFree.percent(5).bytes(ofTotal: 1000), 50)
        XCTAssertNotNil(StorageKeeper.statvfsSpace("/"))
    }

    /// A write that found the disk full: some headroom (5 % of the disk) beyond the minimum
    /// is freed at once, oldest published first, and the caller is told to write again.
    func testMakeRoomFreesHeadroomBeyondTheMinimum() {
        let events = EventNames()
        let keeper = keeper(minimum: .bytes(400), events: events)
        XCTAssertTrue(keeper.makeRoom(recording: "20261202T000000Z-live"), "500 free < 400 + 500 (5 % of 10 000): both published streams go")
        XCTAssertEqual(events.names, ["storage.deleted", "storage.deleted"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: root + "/streams/20261201T010000Z-bbbb"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: root + "/streams/20261202T000000Z-live"))
    }
}
