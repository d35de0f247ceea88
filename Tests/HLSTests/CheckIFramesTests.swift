import Foundation
import XCTest
@testable import HLS
import MP4
import TestSupport

/// The I-frame playlist rules (HLS_RULES V8–V10): a correct one passes, and each way a
/// writer gets one wrong is caught.
final class CheckIFramesTests: XCTestCase {
    func rules(_ files: MemoryFiles) -> Set<String> {
        Set(StreamChecker.check { files.load($0) }.filter { $0.severity == .error }.map(\.rule))
    }

    /// iframes.m3u8 with `edit` applied to its text.
    func edited(_ edit: (String) -> String) -> MemoryFiles {
        let files = StreamBuilder.make()
        files["iframes.m3u8"] = edit(files["iframes.m3u8"]!)
        return files
    }

    func testTheBuiltStreamListsItsIFramesCorrectly() throws {
        let files = StreamBuilder.make()
        XCTAssertEqual(StreamChecker.check { files.load($0) }, [])
        let index = try XCTUnwrap(MultivariantPlaylist(parsing: files["index.m3u8"]!))
        XCTAssertEqual(index.iFrameStreams.map(\.uri), ["iframes.m3u8"])
        XCTAssertEqual(index.iFrameStreams[0].codecs, ["avc1.64001f"], "no audio codec: the I-frames carry no sound")
        XCTAssertEqual(MultivariantPlaylist(parsing: index.render()), index, "reads back what it renders")
        let iFrames = try XCTUnwrap(MediaPlaylist(parsing: files["iframes.m3u8"]!))
        XCTAssertTrue(iFrames.iFramesOnly)
        XCTAssertEqual(iFrames.render(), files["iframes.m3u8"], "reads back what it renders")
        XCTAssertTrue(files["iframes.m3u8"]!.contains("#EXT-X-I-FRAMES-ONLY\n"))
        for entry in iFrames.entries {
            let segment = try XCTUnwrap(files.files[entry.uri])
            let range = try XCTUnwrap(entry.byteRange)
            XCTAssertEqual(range.offset, 0)
            let idr = try XCTUnwrap(ParsedSegment(bytes: segment).fragments.first?.trafs.first?.samples.first)
            XCTAssertTrue(idr.isSync)
            XCTAssertEqual(range.length, idr.range.upperBound, "the moof, the mdat header and the IDR; not the rest")
            XCTAssertLessThan(range.length, segment.count)
        }
    }

    func testARangeThatStopsInsideTheIDR() {
        let files = edited { text in
            let start = text.range(of: "#EXT-X-BYTERANGE:")!.upperBound
            let end = text[start...].firstIndex(of: "@")!
            return text.replacingCharacters(in: start..<end, with: String(Int(text[start..<end])! - 1))
        }
        XCTAssertEqual(rules(files), ["V9"])
    }

    func testARangeThatDoesNotStartAtAMoof() {
        XCTAssertTrue(rules(edited { $0.replacingOccurrences(of: "@0\nseg/000002.m4s", with: "@8\nseg/000002.m4s") }).contains("V9"))
    }

    func testAnIFrameWithoutARange() {
        let files = edited { text in
            var lines = text.split(separator: "\n").map(String.init)
            lines.remove(at: lines.firstIndex { $0.hasPrefix("#EXT-X-BYTERANGE") }!)
            return lines.joined(separator: "\n") + "\n"
        }
        XCTAssertEqual(rules(files), ["V9"])
    }

    func testAnEXTINFThatIsNotTheTimeToTheNextIFrame() {
        let files = edited { text in
            let first = text.range(of: "#EXTINF:2.000,")!
            return text.replacingCharacters(in: first, with: "#EXTINF:1.500,")
        }
        let findings = StreamChecker.check { files.load($0) }.filter { $0.rule == "V9" }.map(\.message)
        XCTAssertTrue(findings.contains { $0.hasPrefix("EXTINF 1.5 but the next I-frame comes after 2.0 s") }, "\(findings)")
        XCTAssertTrue(findings.contains { $0.hasPrefix("the I-frames last 5.5 s, the variant 6.0 s") }, "\(findings)")
    }

    func testAPlaylistWithoutIFramesOnly() {
        XCTAssertEqual(rules(edited { $0.replacingOccurrences(of: "#EXT-X-I-FRAMES-ONLY\n", with: "") }), ["V8"])
    }

    func testAFirstSampleThatIsNotASyncSample() throws {
        let files = StreamBuilder.make()
        var segment = try XCTUnwrap(files.files["seg/000002.m4s"])
        // The video trun comes first: header, version+flags, sample count, data offset,
        // then the first sample's duration, size and flags (`Fragment`).
        let trun = try XCTUnwrap((0..<(segment.count - 4)).first { Array(segment[$0..<$0 + 4]) == Array("trun".utf8) }) - 4
        let at = trun + 8 + 12 + 8
        XCTAssertEqual(Array(segment[at..<at + 4]), [0x02, 0x00, 0x00, 0x00])
        segment.replaceSubrange(at..<at + 4, with: [0x01, 0x01, 0x00, 0x00])
        files.files["seg/000002.m4s"] = segment
        XCTAssertTrue(rules(files).contains("V9"))
    }

    func testFrameRateAndAudioDoNotBelongOnAnIFrameStream() {
        let files = StreamBuilder.make()
        files["index.m3u8"] = files["index.m3u8"]!.replacingOccurrences(of: ",URI=\"iframes.m3u8\"", with: ",FRAME-RATE=30.000,URI=\"iframes.m3u8\"")
        XCTAssertEqual(rules(files), ["V8"])
    }

    func testAnIFrameBandwidthBelowItsMeasuredPeak() {
        let files = StreamBuilder.make()
        let text = files["index.m3u8"]!
        let start = text.range(of: "I-FRAME-STREAM-INF:BANDWIDTH=")!.upperBound
        let end = text[start...].firstIndex(of: ",")!
        files["index.m3u8"] = text.replacingCharacters(in: start..<end, with: "1000")
        XCTAssertEqual(rules(files), ["V10"])
    }

    func testATargetDurationOtherThanTheVariants() {
        XCTAssertTrue(rules(edited { $0.replacingOccurrences(of: "TARGETDURATION:2", with: "TARGETDURATION:3") }).contains("V10"))
    }
}
