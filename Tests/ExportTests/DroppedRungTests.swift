import Foundation
import XCTest
@testable import Export
@testable import Fetch
import HLS
import Publishing
import Spool
import TestSupport

/// A ladder whose top rung the heat dropped for a while (frames 70–190 asked, so segments
/// 3 and 4, from one keyframe boundary to another): the dropped rung carries the next
/// rung's segments under that rung's init, every rendition stays whole and aligned, and
/// what reads the stream back (the checker, export, fetch, recovery) knows it.
final class DroppedRungTests: XCTestCase {
    func stream() throws -> (root: String, id: String, directory: String) {
        let (root, id) = try storedStream(ladder: true, dropped: 70..<190)
        return (root, id, "\(root)/streams/\(id)")
    }

    func testTheDroppedRungCarriesTheRungBelowAndTheStreamStaysCorrect() throws {
        let (_, _, directory) = try stream()
        func playlist(_ name: String) throws -> MediaPlaylist {
            try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8)), name)
        }
        let top = try playlist("v0/playlist.m3u8")
        XCTAssertEqual(top.entries.map(\.map), [nil, nil, "../v1/init.mp4", "../v1/init.mp4", nil, nil],
                       "segments 3 and 4 are the rung below's, under its init")
        for name in ["v0/playlist.m3u8", "v0/iframes.m3u8", "v1/playlist.m3u8", "v1/iframes.m3u8", "audio/playlist.m3u8"] {
            let entries = try playlist(name).entries
            XCTAssertEqual(entries.indices.filter { entries[$0].discontinuity }, [2, 4], "\(name): discontinuities where the rung goes and comes back")
        }
        for k in 3...4 {
            let carried = try FileManager.default.attributesOfItem(atPath: "\(directory)/v0/seg/00000\(k).m4s")
            let original = try FileManager.default.attributesOfItem(atPath: "\(directory)/v1/seg/00000\(k).m4s")
            XCTAssertEqual(carried[.systemFileNumber] as? Int, original[.systemFileNumber] as? Int, "segment \(k): one file, two names")
        }
        let rendered = try String(contentsOfFile: "\(directory)/v0/playlist.m3u8", encoding: .utf8)
        XCTAssertTrue(rendered.contains("#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"../v1/init.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:2026-12-02T16:42:37.000Z\n"), rendered)
        XCTAssertTrue(rendered.contains("#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:2026-12-02T16:42:41.000Z\n"), rendered)
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [],
                       "HLS_RULES: P7/P9 (a new init after a discontinuity), V6 (the same discontinuities everywhere)")
        // Each carried segment decodes under the init its playlist names.
        for k in 1...6 {
            let entry = top.entries[k - 1]
            let initPath = "\(directory)/v0/" + (entry.map ?? "init.mp4")
            let movie = try Data(contentsOf: URL(fileURLWithPath: initPath)) + Data(contentsOf: URL(fileURLWithPath: "\(directory)/v0/\(entry.uri)"))
            let file = directory + "/../segment\(k).mp4"
            try movie.write(to: URL(fileURLWithPath: file))
            let probe = try toolOutput("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=width,nb_read_frames", "-of", "csv=p=0", file])
            XCTAssertEqual(String(decoding: probe.stdout, as: UTF8.self), k == 3 || k == 4 ? "160,60\n" : "320,60\n", "segment \(k)")
        }
    }

    /// Export and fetch make one movie of one init: the rung that was encoded throughout
    /// the range, and the top rung where the range misses the drop.
    func testExportAndFetchTakeARungEncodedThroughout() throws {
        let (root, id, _) = try stream()
        let whole = try StreamExport.make(root: root, ExportRequest(stream: id))
        XCTAssertEqual(whole.name, "\(id)_160x96.mp4", "the top rung was dropped for a while: the next one")
        let before = try StreamExport.make(root: root, ExportRequest(stream: id, start: 0, end: 3.9))
        XCTAssertTrue(before.name.hasPrefix("\(id)_320x192_"), before.name)
        let file = root + "/before.mp4"
        try Data(try before.file.readAll()).write(to: URL(fileURLWithPath: file))
        XCTAssertEqual(try Probe(file).indices, (0..<120).map { UInt32($0) })

        var options = FetchOptions(url: "http://device/streams/\(id)/index.m3u8")
        options.out = root + "/fetched.mp4"
        var lines: [String] = []
        _ = try Fetcher(options, http: FetchTests.DirectoryGetter(root: root), clock: ManualClock(), say: { lines.append($0) }).run()
        XCTAssertTrue(lines.contains { $0.contains("changes its init mid-stream") && $0.contains("taking 160x96 at ") }, "\(lines)")
        XCTAssertEqual(try Array(Data(contentsOf: URL(fileURLWithPath: options.out!))), try whole.file.readAll(), "the same movie as the export")
    }

    /// A power cut while the top rung carried the next one's pictures: recovery lists the
    /// rest of each rendition with the init each segment needs and the discontinuities
    /// aligned, as the writer would have.
    func testRecoveryKnowsACarriedSegmentFromItsOwn() throws {
        let (_, _, directory) = try stream()
        var written: [String: String] = [:]
        for name in ["v0/playlist.m3u8", "v0/iframes.m3u8", "v1/playlist.m3u8", "v1/iframes.m3u8", "audio/playlist.m3u8"] {
            let path = "\(directory)/\(name)"
            written[name] = try String(contentsOfFile: path, encoding: .utf8)
            var cut = try XCTUnwrap(MediaPlaylist(parsing: written[name]!))
            cut.entries = Array(cut.entries.prefix(name.hasPrefix("audio") ? 3 : 2))
            cut.isEnded = false
            try cut.render().write(toFile: path, atomically: true, encoding: .utf8)
        }
        let closed = try XCTUnwrap(try Recovery.close(directory: directory))
        XCTAssertTrue(closed.wasInterrupted)
        for name in ["v0/playlist.m3u8", "v1/playlist.m3u8", "audio/playlist.m3u8", "v0/iframes.m3u8"] {
            let recovered = try String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8)
            let a = try XCTUnwrap(MediaPlaylist(parsing: recovered)), b = try XCTUnwrap(MediaPlaylist(parsing: written[name]!))
            XCTAssertEqual(a.entries.map(\.map), b.entries.map(\.map), name)
            XCTAssertEqual(a.entries.map(\.discontinuity), b.entries.map(\.discontinuity), name)
        }
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
    }

    /// The publisher sends the carried segments under the dropped rung's name; no playlist
    /// on the origin names a file it lacks.
    func testACarryingLadderPublishesWhole() throws {
        let (root, id, directory) = try stream()
        let origin = FakeOrigin()
        let publisher = Publisher(root: root, destination: "fake", parallel: 2, retry: RetryPolicy(quickMilliseconds: [5, 10], maximumMilliseconds: 20),
                                  log: .silent(), makeTransport: { origin.transport() })
        defer { publisher.stop() }
        XCTAssertEqual(publisher.resume(id, segments: 6), 18, "six segments of each of three renditions")
        XCTAssertTrue(publisher.drain(seconds: 30))
        XCTAssertEqual(origin.violations, [])
        for name in ["v0/playlist.m3u8", "v0/seg/000003.m4s", "v1/init.mp4", "v0/iframes.m3u8"] {
            XCTAssertEqual(origin.body("\(id)/" + name), FileManager.default.contents(atPath: "\(directory)/\(name)").map { Array($0) }, name)
        }
    }
}
