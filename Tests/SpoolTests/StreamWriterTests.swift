import Files
import Foundation
import XCTest
@testable import Spool
import HLS
import MP4
import TestSupport

final class StreamWriterTests: XCTestCase {
    var root = ""
    override func setUp() { root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-writer-\(UUID().uuidString)").path }
    override func tearDown() { try? FileManager.default.removeItem(atPath: root) }

    func reports() -> [SegmentReport] {
        let timeline = Timeline(firstVideoCaptureTime: 0, wallClockMs: 1_796_229_753_000)
        let grid = SegmentGrid(start: 900_000, segmentTicks: 180_000)
        var segmenter = Segmenter(grid: grid, tracks: .init(audio: nil), timeline: timeline, nominalFrameDuration: 3000)
        var out: [SegmentReport] = []
        for i in 0..<180 {
            // Segment 3 is ten times bigger, as a scene change would make it.
            out += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i % 60 == 0, size: i >= 120 ? 20_000 : 2000))
        }
        return out + segmenter.finish()
    }

    func text(_ name: String, _ writer: StreamWriter) -> String? {
        try? String(contentsOfFile: "\(writer.directory)/\(name)", encoding: .utf8)
    }

    func testOrderAndBandwidthNeverBelowTheMeasuredPeak() throws {
        let description = StreamDescription(codecs: ["avc1.64001f"], width: 1280, height: 720, fps: 30,
                                            configuredBitrate: 1_000_000, targetDuration: 2)
        let writer = try StreamWriter(root: root, id: "20261202T164233Z-0001", description: description, initSegment: [1, 2, 3])
        XCTAssertEqual(writer.directory, root + "/streams/20261202T164233Z-0001")
        // Staged, hidden, until its first segment is stored (issue 29: no debris).
        XCTAssertFalse(FileManager.default.fileExists(atPath: writer.directory), "no stream directory before a segment exists")
        XCTAssertNotNil(try? String(contentsOfFile: writer.staging + "/index.m3u8", encoding: .utf8), "the multivariant playlist comes first")
        XCTAssertTrue(FileManager.default.fileExists(atPath: writer.staging + "/init.mp4"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: writer.staging + "/playlist.m3u8"), "no playlist before a segment exists")
        for report in reports() {
            try writer.append(report)
            let playlist = ParsedPlaylist(text: text("playlist.m3u8", writer)!)
            for segment in playlist.segments {
                XCTAssertTrue(FileManager.default.fileExists(atPath: "\(writer.directory)/\(segment.uri)"), "listed means stored")
            }
            XCTAssertFalse(playlist.isEnded)
            let bandwidth = Int(ParsedPlaylist(text: text("index.m3u8", writer)!).variants[0].attributes["BANDWIDTH"]!)!
            var meter = BitrateMeter(timescale: 90_000, targetDuration: 2)
            for s in playlist.segments { meter.add(bytes: try Data(contentsOf: URL(fileURLWithPath: "\(writer.directory)/\(s.uri)")).count, ticks: 180_000) }
            XCTAssertGreaterThanOrEqual(bandwidth, meter.peak, "BANDWIDTH is raised before the playlist lists a bigger segment")
            // The I-frame playlist: the same segments, and its own BANDWIDTH from its ranges
            // (segment 3's IDR is ten times bigger too).
            let iFrames = try XCTUnwrap(MediaPlaylist(parsing: text("iframes.m3u8", writer)!))
            XCTAssertEqual(iFrames.entries.map(\.uri), playlist.segments.map(\.uri))
            let stream = try XCTUnwrap(MultivariantPlaylist(parsing: text("index.m3u8", writer)!)?.iFrameStreams.first)
            XCTAssertGreaterThanOrEqual(stream.bandwidth, iFrames.measuredBitrates { _ in nil }.peak)
            let last = try XCTUnwrap(iFrames.entries.last)
            let idr = try XCTUnwrap(ParsedSegment(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: "\(writer.directory)/\(last.uri)"))))
                .fragments.first?.trafs.first?.samples.first)
            // moof 8 + mfhd 16 + traf 8 + tfhd 16 + tfdt 20 + trun 20 + 60 × 12, mdat 8.
            XCTAssertEqual(last.byteRange?.length, 816 + Int(idr.size), "the moof, the mdat header and the IDR")
            XCTAssertGreaterThan(idr.size, iFrames.entries.count == 3 ? 20_000 : 2000)
        }
        try writer.finish()
        let final = ParsedPlaylist(text: text("playlist.m3u8", writer)!)
        XCTAssertTrue(final.isEnded)
        XCTAssertTrue(ParsedPlaylist(text: text("iframes.m3u8", writer)!).isEnded)
        XCTAssertEqual(final.segments.map(\.uri), ["seg/000001.m4s", "seg/000002.m4s", "seg/000003.m4s"])
        XCTAssertEqual(writer.totalTicks, 540_000)
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: writer.directory).filter { $0.contains(".tmp") }
        XCTAssertEqual(leftovers, [])
    }
}
