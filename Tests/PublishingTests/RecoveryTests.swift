import Files
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
import Logging
@testable import Publishing
import HLS
import Layout
import MP4
@testable import Spool
import TestSupport

final class RecoveryTests: XCTestCase {
    var root = ""
    override func setUp() { root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-recovery-\(UUID().uuidString)").path }
    override func tearDown() { try? FileManager.default.removeItem(atPath: root) }

    /// A stream interrupted after storing `stored` segments, the last `unlisted` of them
    /// after its final playlist write, plus a half-written segment.
    func interrupted(stored: Int, unlisted: Int, observer: @escaping (StreamEvent) -> Void = { _ in }) throws -> String {
        let files = StreamBuilder.make(seconds: 2 * stored)
        let description = StreamDescription(codecs: ["avc1.64001f", "mp4a.40.2"], width: 1280, height: 720, fps: 30,
                                            configuredBitrate: 1_000_000, targetDuration: 2)
        let writer = try StreamWriter(root: root, id: "s", description: description, initSegment: files.files["init.mp4"]!, observer: observer)
        let playlist = try XCTUnwrap(MediaPlaylist(parsing: files["playlist.m3u8"]!))
        for (index, entry) in playlist.entries.enumerated() {
            var report = SegmentReport(sequence: index + 1, bytes: files.files[entry.uri]!, videoStart: 0, videoDuration: 180_000,
                                       videoTimescale: 90_000, videoSamples: 60, audioSamples: 94, programDateTimeMs: entry.programDateTimeMs)
            // As the segmenter says: the moof, the mdat header and the first (video) sample.
            let first = try XCTUnwrap(ParsedSegment(bytes: report.bytes).fragments.first?.trafs.first?.samples.first)
            report.iFrameLength = Fragment.payloadOffset(report.bytes) + Int(first.size)
            if index < stored - unlisted { try writer.append(report) } else {
                try AtomicFile.write(report.bytes, to: writer.directory + "/" + entry.uri)
            }
        }
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: writer.directory + "/seg/.000009.m4s.tmp"))
        return writer.directory
    }

    func testClosesWithEveryCompleteSegmentAndNothingHalfWritten() throws {
        let directory = try interrupted(stored: 3, unlisted: 1)
        let closed = try XCTUnwrap(try Recovery.close(directory: directory))
        XCTAssertEqual(closed, Recovery.Closed(id: "s", segments: 3, wasInterrupted: true, multivariantRewritten: true))
        let playlist = try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: directory + "/playlist.m3u8", encoding: .utf8)))
        XCTAssertTrue(playlist.isEnded)
        XCTAssertEqual(playlist.entries.map(\.duration), ["2.000", "2.000", "2.000"], "the unlisted one measured from its trun")
        XCTAssertEqual(try XCTUnwrap(playlist.entries[2].programDateTimeMs) - XCTUnwrap(playlist.entries[1].programDateTimeMs), 2000)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/seg/.000009.m4s.tmp"))
        let iFrames = try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: directory + "/iframes.m3u8", encoding: .utf8)))
        XCTAssertTrue(iFrames.isEnded && iFrames.iFramesOnly)
        XCTAssertEqual(iFrames.entries.map(\.uri), playlist.entries.map(\.uri), "the unlisted segment's IDR too")
        XCTAssertEqual(iFrames.entries.map(\.duration), playlist.entries.map(\.duration))
        let written = try XCTUnwrap(ParsedSegment(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/seg/000003.m4s"))))
            .fragments.first?.trafs.first?.samples.first)
        XCTAssertEqual(iFrames.entries[2].byteRange?.length, written.range.upperBound)
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
        XCTAssertEqual(try Recovery.close(directory: directory), Recovery.Closed(id: "s", segments: 3, wasInterrupted: false), "idempotent")
        XCTAssertEqual(Recovery.closeAll(root: root).map(\.id), ["s"])
    }

    /// A ladder the power cut stopped after two segments: every rendition is closed
    /// (sound included), index.m3u8 measured again, and the stream passes the rules with
    /// its renditions aligned; a publisher then sends each rendition whole.
    func testALadderIsClosedRenditionByRendition() throws {
        let writer = try StreamBuilder.ladder(root: root, stopAfter: 2)
        let directory = writer.directory
        for folder in ["v0", "v1", "audio"] {
            XCTAssertFalse(try String(contentsOfFile: "\(directory)/\(folder)/playlist.m3u8", encoding: .utf8).contains("ENDLIST"))
        }
        let closed = try XCTUnwrap(try Recovery.close(directory: directory))
        XCTAssertEqual(closed.segments, 2)
        XCTAssertTrue(closed.wasInterrupted)
        for name in ["v0/playlist.m3u8", "v0/iframes.m3u8", "v1/playlist.m3u8", "v1/iframes.m3u8", "audio/playlist.m3u8"] {
            let playlist = try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8)), name)
            XCTAssertTrue(playlist.isEnded, name)
            XCTAssertEqual(playlist.entries.count, 2, name)
        }
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
        XCTAssertEqual(try Recovery.close(directory: directory)?.wasInterrupted, false, "idempotent")

        let origin = FakeOrigin()
        let publisher = Publisher(root: root, destination: "fake", parallel: 2, retry: RetryPolicy(quickMilliseconds: [5, 10], maximumMilliseconds: 20),
                                  log: .silent(), makeTransport: { origin.transport() })
        defer { publisher.stop() }
        XCTAssertEqual(publisher.resume("ladder", segments: closed.segments), 6, "two segments of each of three renditions")
        XCTAssertTrue(publisher.drain(seconds: 30))
        XCTAssertEqual(origin.violations, [])
        for name in ["index.m3u8", "v0/init.mp4", "v1/iframes.m3u8", "audio/seg/000002.m4s", "audio/playlist.m3u8"] {
            XCTAssertEqual(origin.body("ladder/" + name), FileManager.default.contents(atPath: "\(directory)/\(name)").map { Array($0) }, name)
        }
        XCTAssertEqual(Journal.read(directory, destination: "fake"), Journal(destination: "fake", confirmedSegments: [2, 2, 2], listed: [2, 2, 2], endlist: true))
    }

    /// The writer ends playlist.m3u8, then iframes.m3u8: a cut between the two leaves an
    /// ended stream whose I-frame playlist lacks its last entry and ENDLIST.
    func testAnIFramePlaylistLeftOpenIsClosed() throws {
        let directory = try interrupted(stored: 3, unlisted: 0)
        let path = directory + "/iframes.m3u8"
        let open = try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: path, encoding: .utf8)))
        _ = try Recovery.close(directory: directory)
        let ended = try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: path, encoding: .utf8)))
        try AtomicFile.write(Array(open.prefix(2).render().utf8), to: path)
        XCTAssertEqual(try Recovery.close(directory: directory), Recovery.Closed(id: "s", segments: 3, wasInterrupted: false))
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), ended.render())
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
    }

    /// The power cut came before the writer's final AVERAGE-BANDWIDTH: index.m3u8 still says
    /// what the first segments measured (found by vm-test: 176 kbit/s declared, 197 stored,
    /// over the 10% HLS_RULES C7 allows). Recovery measures the stored stream again, and
    /// the publisher sends index.m3u8 again though its journal had confirmed it.
    func testAStaleAverageBandwidthIsMeasuredAgainAndSentAgain() throws {
        let directory = try interrupted(stored: 3, unlisted: 1)
        let indexPath = directory + "/index.m3u8"
        var stale = try XCTUnwrap(MultivariantPlaylist(parsing: try String(contentsOfFile: indexPath, encoding: .utf8)))
        stale.variants[0].averageBandwidth /= 2
        try AtomicFile.write(Array(stale.render().utf8), to: indexPath)
        XCTAssertNotEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])

        let closed = try XCTUnwrap(try Recovery.close(directory: directory))
        XCTAssertTrue(closed.multivariantRewritten)
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
        let index = try XCTUnwrap(MultivariantPlaylist(parsing: try String(contentsOfFile: indexPath, encoding: .utf8)))
        XCTAssertEqual(index.variants[0].codecs, stale.variants[0].codecs, "only the bit rates change")
        XCTAssertEqual(index.variants[0].frameRateMilli, 30_000)
        XCTAssertGreaterThan(index.variants[0].averageBandwidth, stale.variants[0].averageBandwidth)

        let origin = FakeOrigin()
        for name in ["init.mp4", StreamLayout.segment(1), StreamLayout.segment(2)] {
            origin.seed("s/\(name)", Array(FileManager.default.contents(atPath: directory + "/" + name)!))
        }
        origin.seed("s/index.m3u8", Array(stale.render().utf8))
        try Journal(destination: "fake", confirmedSegments: 2, listed: 2, endlist: false).write(directory)
        let publisher = Publisher(root: root, destination: "fake", parallel: 2, retry: RetryPolicy(quickMilliseconds: [5, 10], maximumMilliseconds: 20),
                                  log: .silent(), makeTransport: { origin.transport() })
        defer { publisher.stop() }
        XCTAssertEqual(publisher.resume("s", segments: 3, multivariantRewritten: closed.multivariantRewritten), 1)
        XCTAssertTrue(publisher.drain(seconds: 30))
        XCTAssertEqual(origin.violations, [])
        XCTAssertEqual(origin.body("s/index.m3u8"), Array(index.render().utf8))
    }

    /// Issue 13: one unlisted segment with a box size no file can have used to trap at every
    /// start (a boot loop). It is set aside, said once, and the stream closes without it.
    func testACorruptUnlistedSegmentIsSetAsideAndTheStartGoesOn() throws {
        let directory = try interrupted(stored: 3, unlisted: 1)
        let path = directory + "/" + StreamLayout.segment(3)
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: path))
        handle.write(Data([0, 0, 0, 1] + Array("moof".utf8) + [0x80, 0, 0, 0, 0, 0, 0, 0]))
        try handle.close()
        var skipped: [Recovery.Skipped] = []
        let closed = Recovery.closeAll(root: root) { skipped.append($0) }
        XCTAssertEqual(closed, [Recovery.Closed(id: "s", segments: 2, wasInterrupted: true, multivariantRewritten: true)])
        XCTAssertEqual(skipped.map(\.path), [path])
        XCTAssertTrue(skipped[0].reason.contains("64-bit size"), skipped[0].reason)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path + ".corrupt"), "kept for a person, not deleted")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
    }

    func testAPlaylistOnairCannotReadIsSetAsideAndOtherStreamsStillClose() throws {
        let good = try interrupted(stored: 2, unlisted: 0)
        let bad = root + "/streams/a-broken"
        try FileManager.default.createDirectory(atPath: bad, withIntermediateDirectories: true)
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:NaN,\nseg/000001.m4s\n".utf8)
            .write(to: URL(fileURLWithPath: bad + "/playlist.m3u8"))
        let utf8 = root + "/streams/b-not-utf8"
        try FileManager.default.createDirectory(atPath: utf8, withIntermediateDirectories: true)
        try Data([0x23, 0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: utf8 + "/playlist.m3u8"))
        var skipped: [String] = []
        let closed = Recovery.closeAll(root: root) { skipped.append($0.path) }
        XCTAssertEqual(closed.map(\.id), ["s"])
        XCTAssertEqual(skipped, [bad + "/playlist.m3u8", utf8 + "/playlist.m3u8"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: bad + "/playlist.m3u8.corrupt"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: good + "/playlist.m3u8"))
    }

    /// Issue 29: special and huge leftovers cost neither time nor memory at start-up, and
    /// never block it: each is set aside, and the stream closes with what it holds.
    func testAFIFOALinkToDevZeroAndASparseGiantAreSetAsideAtOnce() throws {
        let directory = try interrupted(stored: 5, unlisted: 3)
        let fifo = directory + "/" + StreamLayout.segment(3)
        try FileManager.default.removeItem(atPath: fifo)
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        var skipped: [Recovery.Skipped] = []
        XCTAssertEqual(try Recovery.close(directory: directory) { skipped.append($0) }?.segments, 2)
        XCTAssertEqual(skipped.map(\.path), [fifo])
        XCTAssertTrue(skipped[0].reason.contains("a FIFO, not a regular file"), skipped[0].reason)
        XCTAssertTrue(FileManager.default.fileExists(atPath: fifo + ".corrupt"))

        try FileManager.default.removeItem(atPath: root)
        let other = try interrupted(stored: 5, unlisted: 3)
        let link = other + "/" + StreamLayout.segment(3)
        try FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/dev/zero")
        skipped = []
        XCTAssertEqual(try Recovery.close(directory: other) { skipped.append($0) }?.segments, 2)
        XCTAssertTrue(skipped[0].reason.contains("a symbolic link"), skipped[0].reason)

        try FileManager.default.removeItem(atPath: root)
        let third = try interrupted(stored: 5, unlisted: 3)
        let sparse = third + "/" + StreamLayout.segment(3)
        XCTAssertEqual(truncate(sparse, 4 << 30), 0)  // 4 GiB, no block of it written
        skipped = []
        XCTAssertEqual(try Recovery.close(directory: third) { skipped.append($0) }?.segments, 2)
        XCTAssertTrue(skipped[0].reason.contains("larger than 64 MiB"), skipped[0].reason)
    }

    /// A FIFO in place of any file of a stream (the playlist, the init, index.m3u8) is set
    /// aside; the start never waits on it.
    func testAFIFOInPlaceOfAPlaylistInitOrIndexIsSetAside() throws {
        for name in ["playlist.m3u8", "init.mp4", "index.m3u8"] {
            let directory = try interrupted(stored: 3, unlisted: 1)
            try FileManager.default.removeItem(atPath: directory + "/" + name)
            XCTAssertEqual(mkfifo(directory + "/" + name, 0o644), 0)
            var skipped: [String] = []
            _ = Recovery.closeAll(root: root) { skipped.append($0.path) }
            XCTAssertEqual(skipped, [directory + "/" + name], name)
            try FileManager.default.removeItem(atPath: root)
        }
    }

    /// Issue 29: a kill -9 before the first segment left init.mp4 and index.m3u8 only;
    /// the next start removes that directory (said once), and keeps one with anything else.
    func testAStreamWithoutASegmentIsRemovedAndOneWithASetAsideFileIsKept() throws {
        let empty = root + "/streams/early"
        try AtomicFile.makeDirectories(empty)
        try AtomicFile.write([1], to: empty + "/init.mp4")
        try AtomicFile.write(Array("#EXTM3U\n".utf8), to: empty + "/index.m3u8")
        let kept = root + "/streams/kept"
        try AtomicFile.makeDirectories(kept)
        try AtomicFile.write([1], to: kept + "/playlist.m3u8.corrupt")
        let staged = root + "/streams/.late.tmp"
        try AtomicFile.makeDirectories(staged + "/seg")
        var removed: [String] = []
        XCTAssertEqual(Recovery.closeAll(root: root, removed: { removed.append($0) }), [])
        XCTAssertEqual(removed, [staged, empty])
        XCTAssertFalse(FileManager.default.fileExists(atPath: staged))
        XCTAssertFalse(FileManager.default.fileExists(atPath: empty))
        XCTAssertTrue(FileManager.default.fileExists(atPath: kept + "/playlist.m3u8.corrupt"))
    }

    func testJournalRoundTripIsPerDestination() throws {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let journal = Journal(destination: "http://a/", confirmedSegments: 4, listed: 3, endlist: false)
        try journal.write(root)
        XCTAssertEqual(Journal.read(root, destination: "http://a/"), journal)
        XCTAssertNil(Journal.read(root, destination: "http://b/"), "another destination knows nothing")
    }

    func testResumeSendsOnlyWhatTheDestinationLacks() throws {
        let directory = try interrupted(stored: 3, unlisted: 0)
        _ = try Recovery.close(directory: directory)
        let origin = FakeOrigin()
        for name in ["init.mp4", "index.m3u8", StreamLayout.segment(1), StreamLayout.segment(2)] {
            origin.seed("s/\(name)", Array(FileManager.default.contents(atPath: directory + "/" + name)!))
        }
        let local = try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: directory + "/playlist.m3u8", encoding: .utf8)))
        origin.seed("s/playlist.m3u8", Array(local.prefix(2).render().utf8))
        let iFrames = try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: directory + "/iframes.m3u8", encoding: .utf8)))
        XCTAssertEqual(iFrames.entries.count, 3, "recovery ended the I-frame playlist with the media playlist")
        origin.seed("s/iframes.m3u8", Array(iFrames.prefix(2).render().utf8))
        try Journal(destination: "fake", confirmedSegments: 2, listed: 2, endlist: false).write(directory)
        let publisher = Publisher(root: root, destination: "fake", parallel: 2, retry: RetryPolicy(quickMilliseconds: [5, 10], maximumMilliseconds: 20),
                                  log: .silent(), makeTransport: { origin.transport() })
        defer { publisher.stop() }
        XCTAssertEqual(publisher.resume("s", segments: 3), 1)
        XCTAssertTrue(publisher.drain(seconds: 30))
        XCTAssertEqual(origin.violations, [])
        XCTAssertEqual(Set(origin.attempts.keys), ["s/seg/000003.m4s", "s/playlist.m3u8", "s/iframes.m3u8", "streams.json"], "nothing sent twice")
        XCTAssertEqual(origin.body("s/playlist.m3u8"), Array(local.render().utf8))
        XCTAssertEqual(origin.body("s/iframes.m3u8"), Array(iFrames.render().utf8))
        XCTAssertEqual(Journal.read(directory, destination: "fake")?.endlist, true)
        XCTAssertEqual(publisher.resume("s", segments: 3), 0, "complete per its journal")
    }
}
