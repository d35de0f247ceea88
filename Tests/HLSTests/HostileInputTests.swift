import Foundation
import XCTest
@testable import HLS
import MP4
import TestSupport

/// What issue 13 found the checker passing or crashing on: each case is a stream a hostile
/// or broken writer could leave, and each must be an error with a rule id, never a trap.
final class HostileInputTests: XCTestCase {
    func errors(_ files: MemoryFiles) -> [Finding] {
        StreamChecker.check { files.load($0) }.filter { $0.severity == .error }
    }

    func edited(_ name: String, _ edit: (String) -> String) -> MemoryFiles {
        let files = StreamBuilder.make()
        files[name] = edit(files[name]!)
        return files
    }

    func firstEXTINF(_ value: String) -> MemoryFiles {
        edited("playlist.m3u8") { text in
            let range = text.range(of: "#EXTINF:2.000,")!
            return text.replacingCharacters(in: range, with: "#EXTINF:\(value),")
        }
    }

    func testEXTINFThatIsNoDecimalDurationIsP5() {
        for value in ["1e308", "NaN", "nan", "inf", "-inf", "99999999999999999999", "-2.000", "", "2.0.0", "0x2", " 2.000"] {
            let found = errors(firstEXTINF(value))
            XCTAssertTrue(found.contains { $0.rule == "P5" && $0.location == "playlist.m3u8:10" }, "EXTINF:\(value) → \(found)")
        }
        XCTAssertTrue(errors(firstEXTINF("2")).isEmpty, "a decimal-integer duration is allowed (§4.4.4.1)")
    }

    func testMediaSequenceMustBeADecimalInteger() {
        for value in ["abc", "", "-1", "1e10", "18446744073709551616", "+1"] {
            let files = edited("playlist.m3u8") { $0.replacingOccurrences(of: "#EXT-X-MEDIA-SEQUENCE:1", with: "#EXT-X-MEDIA-SEQUENCE:\(value)") }
            XCTAssertTrue(errors(files).contains { $0.rule == "P6" }, "MEDIA-SEQUENCE:\(value)")
        }
        let largest = edited("playlist.m3u8") { $0.replacingOccurrences(of: "#EXT-X-MEDIA-SEQUENCE:1", with: "#EXT-X-MEDIA-SEQUENCE:18446744073709551615") }
        XCTAssertEqual(errors(largest), [], "2^64−1 is a decimal-integer")
    }

    func testFrameRateAndBandwidthMustBeNumbers() {
        for (name, bad) in [("FRAME-RATE=30.000", "FRAME-RATE=NaN"), ("FRAME-RATE=30.000", "FRAME-RATE=inf"),
                            ("AVERAGE-BANDWIDTH=", "AVERAGE-BANDWIDTH=-")] {
            let files = edited("index.m3u8") { $0.replacingOccurrences(of: name, with: bad) }
            XCTAssertTrue(errors(files).contains { $0.rule == "V2" }, bad)
        }
        let negative = edited("index.m3u8") { $0.replacingOccurrences(of: "#EXT-X-STREAM-INF:BANDWIDTH=", with: "#EXT-X-STREAM-INF:BANDWIDTH=-") }
        XCTAssertTrue(errors(negative).contains { $0.rule == "V1" })
    }

    func testStrayURIInTheMultivariantPlaylist() {
        let files = edited("index.m3u8") { $0 + "stray.m3u8\n" }
        XCTAssertTrue(errors(files).contains { $0.rule == "V1" && $0.location == "index.m3u8:7" }, "\(errors(files))")
    }

    func testDefineNeedsVersion8() {
        let media = edited("playlist.m3u8") { $0.replacingOccurrences(of: "#EXT-X-VERSION:7\n", with: "#EXT-X-VERSION:7\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"b\"\n") }
        XCTAssertTrue(errors(media).contains { $0.rule == "P3" })
        let top = edited("index.m3u8") { $0.replacingOccurrences(of: "#EXT-X-VERSION:7\n", with: "#EXT-X-VERSION:7\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"b\"\n") }
        XCTAssertTrue(errors(top).contains { $0.rule == "P3" })
        let version = edited("playlist.m3u8") { $0.replacingOccurrences(of: "#EXT-X-VERSION:7", with: "#EXT-X-VERSION:seven") }
        XCTAssertTrue(errors(version).contains { $0.rule == "P3" })
    }

    /// The playlist with `old` replaced by `new`, the files as StreamBuilder makes them.
    func replacing(_ old: String, with new: String) -> MemoryFiles {
        edited("playlist.m3u8") { $0.replacingOccurrences(of: old, with: new) }
    }

    func testByteRangesAreCheckedAgainstTheFile() {
        let size = StreamBuilder.make().files["seg/000001.m4s"]!.count
        func ranged(_ range: String) -> MemoryFiles {
            replacing("#EXTINF:2.000,\nseg/000001.m4s", with: "#EXTINF:2.000,\n#EXT-X-BYTERANGE:\(range)\nseg/000001.m4s")
        }
        XCTAssertEqual(errors(ranged("\(size)@0")), [], "the whole file as a range")
        XCTAssertTrue(errors(ranged("\(size)@1")).contains { $0.rule == "P8" }, "one byte past the end")
        XCTAssertTrue(errors(ranged("18446744073709551615@18446744073709551615")).contains { $0.rule == "P8" })
        XCTAssertTrue(errors(ranged("-5@0")).contains { $0.rule == "P8" })
        XCTAssertTrue(errors(ranged("\(size)")).contains { $0.rule == "P8" }, "no offset and no range before it")
    }

    /// Issue 29: an EXT-X-MAP BYTERANGE past the end of init.mp4 passed validate.
    func testTheMapsByteRangeIsCheckedAgainstTheInit() {
        let size = StreamBuilder.make().files["init.mp4"]!.count
        func mapped(_ range: String) -> MemoryFiles {
            replacing("#EXT-X-MAP:URI=\"init.mp4\"", with: "#EXT-X-MAP:URI=\"init.mp4\",BYTERANGE=\"\(range)\"")
        }
        XCTAssertEqual(errors(mapped("\(size)@0")).map(\.rule), [], "the whole init as a range")
        XCTAssertEqual(errors(mapped("\(size)@1")).map(\.rule), ["P8"], "one byte past the end")
        XCTAssertEqual(errors(mapped("18446744073709551615@18446744073709551615")).map(\.rule), ["P8"])
        XCTAssertEqual(errors(mapped("\(size)")).map(\.rule), ["P7"], "a MAP's range needs its offset")
    }

    func testCRLFPlaylistsAreRead() {
        let files = StreamBuilder.make()
        for name in ["index.m3u8", "playlist.m3u8"] { files[name] = files[name]!.replacingOccurrences(of: "\n", with: "\r\n") }
        XCTAssertEqual(errors(files), [], "lines may end in CRLF (§4.1)")
    }

    func testBoxSizesThatCannotBeAreErrorsNotTraps() {
        let files = StreamBuilder.make()
        let original = files.files["seg/000001.m4s"]!
        for large: UInt64 in [0, 1, 15, 1 << 31, 1 << 63, UInt64.max] {
            var bytes = original
            bytes.replaceSubrange(0..<8, with: [0, 0, 0, 1] + Array("moof".utf8))
            bytes.insert(contentsOf: withUnsafeBytes(of: large.bigEndian, Array.init), at: 8)
            files.files["seg/000001.m4s"] = bytes
            XCTAssertTrue(errors(files).contains { $0.rule == "S1" && $0.location == "seg/000001.m4s" }, "largesize \(large)")
        }
    }

    func testDeepNestingAndZeroSizeChildren() {
        let files = StreamBuilder.make()
        let depth = 200_000
        var nested = [UInt8]()
        nested.reserveCapacity(depth * 8)
        for level in 0..<depth { nested += withUnsafeBytes(of: UInt32(8 * (depth - level)).bigEndian, Array.init) + Array("moof".utf8) }
        files.files["seg/000001.m4s"] = nested
        XCTAssertTrue(errors(files).contains { $0.rule == "S1" && $0.message.contains("nested deeper") })
        // A zero size means "to the end of the file", which only a top-level box may say.
        files.files["seg/000001.m4s"] = [0, 0, 0, 16] + Array("moof".utf8) + [0, 0, 0, 0] + Array("mfhd".utf8)
        XCTAssertTrue(errors(files).contains { $0.rule == "S1" && $0.message.contains("size 0") })
    }

    func testSampleCountsNoSegmentCanHoldAreRefusedAtOnce() throws {
        // trun with 2^32−1 samples and no per-sample fields: nothing to read, so the count
        // alone would have run the loop four billion times.
        var trun = [UInt8](), traf = [UInt8](), moof = [UInt8]()
        trun += [0, 0, 0, 20] + Array("trun".utf8) + [0, 0, 0, 0] + [0xFF, 0xFF, 0xFF, 0xFF]
        let tfhd: [UInt8] = [0, 0, 0, 16] + Array("tfhd".utf8) + [0, 2, 0, 0] + [0, 0, 0, 1]
        traf = withUnsafeBytes(of: UInt32(8 + tfhd.count + trun.count).bigEndian, Array.init) + Array("traf".utf8) + tfhd + trun
        moof = withUnsafeBytes(of: UInt32(8 + traf.count).bigEndian, Array.init) + Array("moof".utf8) + traf
        XCTAssertThrowsError(try ParsedSegment(bytes: moof))
    }

    func testAHugePlaylistIsCheckedInLinearWork() {
        // 100,000 entries whose files are absent: each is one L7 and nothing quadratic.
        var text = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI=\"init.mp4\"\n"
        for i in 0..<100_000 { text += "#EXTINF:0,\nseg/\(i).m4s\n" }
        text += "#EXT-X-ENDLIST\n"
        let files = StreamBuilder.make()
        files["playlist.m3u8"] = text
        XCTAssertEqual(errors(files).filter { $0.rule == "L7" }.count, 100_000)
        var meter = BitrateMeter(timescale: 1000, targetDuration: 2)
        for _ in 0..<100_000 { meter.add(bytes: 1, ticks: 0) }
        XCTAssertEqual(meter.peak, 0, "zero-length runs: capped, not n² windows")
    }
}
