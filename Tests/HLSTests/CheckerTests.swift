import Basics
import Foundation
import Layout
import XCTest
@testable import HLS
import Media
import MP4
import TestSupport

/// The checker passes a correct stream and catches each kind of bug that real writers
/// have shipped (HLS_RULES.md, "Real fMP4/HLS writer bugs").
final class CheckerTests: XCTestCase {
    func check(_ files: MemoryFiles) -> [Finding] {
        StreamChecker.check { files.load($0) }
    }

    func rules(_ files: MemoryFiles, severity: Finding.Severity = .error) -> Set<String> {
        Set(check(files).filter { $0.severity == severity }.map(\.rule))
    }

    func testACorrectStreamHasNoFindings() {
        XCTAssertEqual(check(StreamBuilder.make()), [])
        XCTAssertEqual(check(StreamBuilder.make(seconds: 5, audio: false)), [])
    }

    func testTargetDurationBelowRoundedEXTINF() {
        let files = StreamBuilder.make()
        files["playlist.m3u8"] = files["playlist.m3u8"]!.replacingOccurrences(of: "TARGETDURATION:2", with: "TARGETDURATION:1")
        XCTAssertTrue(rules(files).contains("P4"))
    }

    func testMissingMap() {
        let files = StreamBuilder.make()
        files["playlist.m3u8"] = files["playlist.m3u8"]!.replacingOccurrences(of: "#EXT-X-MAP:URI=\"init.mp4\"\n", with: "")
        XCTAssertTrue(rules(files).contains("P7"))
    }

    func testCodecsWithoutTheMuxedAudio() {
        let files = StreamBuilder.make()
        files["index.m3u8"] = files["index.m3u8"]!.replacingOccurrences(of: ",mp4a.40.2", with: "")
        XCTAssertEqual(rules(files), ["C3"])
    }

    func testWrongLevelInCodecString() {
        let files = StreamBuilder.make()
        files["index.m3u8"] = files["index.m3u8"]!.replacingOccurrences(of: "avc1.64001f", with: "avc1.640028")
        XCTAssertEqual(rules(files), ["C1"])
    }

    func testBandwidthBelowMeasuredPeak() {
        let files = StreamBuilder.make()
        let text = files["index.m3u8"]!
        let start = text.range(of: "BANDWIDTH=")!.upperBound
        let end = text[start...].firstIndex(of: ",")!
        files["index.m3u8"] = text.replacingCharacters(in: start..<end, with: "1000")
        XCTAssertEqual(rules(files), ["C6"])
    }

    func testByteOrderMarkAndMissingHeader() {
        let files = StreamBuilder.make()
        files.files["playlist.m3u8"] = [0xEF, 0xBB, 0xBF] + files.files["playlist.m3u8"]!
        XCTAssertTrue(rules(files).contains("P1"))
    }

    func testListedSegmentMissing() {
        let files = StreamBuilder.make()
        files.files["seg/000002.m4s"] = nil
        XCTAssertTrue(rules(files).contains("L7"))
        files.files["init.mp4"] = nil
        XCTAssertTrue(rules(files).contains("L7"))
    }

    /// Rewrites segment 2 through a transform of its parsed samples.
    func rewriteSegment2(_ files: MemoryFiles, _ change: (inout [TrackRun]) -> Void) throws {
        let bytes = files.files["seg/000002.m4s"]!
        let parsed = try ParsedSegment(bytes: bytes)
        var runs = parsed.fragments[0].trafs.map { traf in
            TrackRun(trackID: traf.trackID, baseDecodeTime: Int64(bitPattern: traf.baseDecodeTime), samples: traf.samples.map {
                EncodedSample(data: Array(bytes[$0.range]), dts: 0, pts: 0, duration: Int64($0.duration), isSync: $0.isSync)
            })
        }
        change(&runs)
        files.files["seg/000002.m4s"] = Fragment.make(sequenceNumber: 2, runs: runs)
    }

    func testEverySampleFlaggedSync() throws {
        let files = StreamBuilder.make()
        try rewriteSegment2(files) { runs in for i in runs[0].samples.indices { runs[0].samples[i].isSync = true } }
        XCTAssertEqual(rules(files), ["S11"])
    }

    func testTfdtGap() throws {
        let files = StreamBuilder.make()
        try rewriteSegment2(files) { runs in runs[0].baseDecodeTime += 3000 }
        XCTAssertTrue(rules(files).contains("S7"))
    }

    func testNegativeTfdtWrittenUnsigned() throws {
        let files = StreamBuilder.make()
        // The writer refuses negative times, so forge the bytes: audio tfdt = −336 as u64.
        var bytes = files.files["seg/000002.m4s"]!
        let audio = try XCTUnwrap(try BoxTree.parse(bytes)[0].all("traf").last?.child("tfdt"))
        let negative = UInt64(bitPattern: -336)
        for k in 0..<8 { bytes[audio.payload.lowerBound + 4 + k] = UInt8((negative >> UInt64(56 - 8 * k)) & 0xFF) }
        files.files["seg/000002.m4s"] = bytes
        XCTAssertTrue(rules(files).contains("S6"))
    }

    func testSegmentWithoutAudio() throws {
        let files = StreamBuilder.make()
        try rewriteSegment2(files) { runs in runs.removeLast() }
        XCTAssertTrue(rules(files).contains("S14"))
    }

    func testSegmentNotStartingWithIDR() throws {
        let files = StreamBuilder.make()
        try rewriteSegment2(files) { runs in runs[0].samples.removeFirst(); runs[0].samples[0].duration += 3000 }
        XCTAssertTrue(rules(files).contains("S10"))
    }

    func testInitWhoseSizeDisagreesWithTheSPS() {
        let files = StreamBuilder.make()
        files.files["init.mp4"] = InitSegment.make(video: VideoTrack(width: 640, height: 360, sps: Golden.sps, pps: Golden.pps), audio:
            AudioTrack(sampleRate: 48_000, channels: 1, config: Golden.audioConfig, averageBitrate: 64_000))
        XCTAssertTrue(rules(files).contains("I10"))
    }

    func testAudioConfigDisagreesWithSampleEntry() {
        let files = StreamBuilder.make()
        files.files["init.mp4"] = InitSegment.make(video: VideoTrack(width: 1280, height: 720, sps: Golden.sps, pps: Golden.pps), audio:
            AudioTrack(sampleRate: 44_100, channels: 1, config: Golden.audioConfig, averageBitrate: 64_000))
        XCTAssertTrue(rules(files).contains("I11"))
    }

    func testProgramDateTimeThatDoesNotAdvanceWithEXTINF() {
        let files = StreamBuilder.make()
        let text = files["playlist.m3u8"]!
        let second = text.ranges(of: "#EXT-X-PROGRAM-DATE-TIME:")[1]
        let line = text[second.upperBound...].prefix(24)
        files["playlist.m3u8"] = text.replacingOccurrences(of: String(line), with: "2030-01-01T00:00:00.000Z")
        XCTAssertTrue(rules(files).contains("P13"))
    }

    /// The playlist with its PROGRAM-DATE-TIME lines changed by `change(index, line)`
    /// (nil removes one), live (no ENDLIST) when `live`.
    func redated(_ files: MemoryFiles, live: Bool, _ change: (Int, String) -> String?) {
        var index = 0
        let lines = files["playlist.m3u8"]!.split(separator: "\n", omittingEmptySubsequences: false).compactMap { line -> String? in
            if live && line == "#EXT-X-ENDLIST" { return nil }
            guard line.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") else { return String(line) }
            defer { index += 1 }
            return change(index, String(line)).map { "#EXT-X-PROGRAM-DATE-TIME:" + $0 }
        }
        files["playlist.m3u8"] = lines.joined(separator: "\n")
    }

    func date(_ line: String, plus ms: Int64) -> String {
        UTCDate.iso8601(milliseconds: UTCDate.parse(String(line.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count)))! + ms)
    }

    func testProgramDateTimeMayStartMidStreamOnALivePlaylist() {
        let files = StreamBuilder.make(seconds: 10)
        redated(files, live: true) { index, line in index < 2 ? nil : self.date(line, plus: 0) }
        XCTAssertEqual(rules(files), [], "undated segments before the clock was synchronised")
        let undated = StreamBuilder.make(seconds: 10)
        redated(undated, live: true) { _, _ in nil }
        XCTAssertEqual(rules(undated), [])
        XCTAssertEqual(rules(undated, severity: .warning), ["P13"], "a live playlist without any date is said")
    }

    func testProgramDateTimeThatStopsJumpsBackOrDrifts() {
        let stops = StreamBuilder.make(seconds: 10)
        redated(stops, live: true) { index, line in index == 3 ? nil : self.date(line, plus: 0) }
        XCTAssertEqual(rules(stops), ["P13"])
        let back = StreamBuilder.make(seconds: 10)
        redated(back, live: true) { index, line in self.date(line, plus: index >= 3 ? -3_600_000 : 0) }
        XCTAssertEqual(rules(back), ["P13"])
        let backAcrossBreak = StreamBuilder.make(seconds: 10)
        redated(backAcrossBreak, live: false) { index, line in self.date(line, plus: index >= 3 ? -3_600_000 : 0) }
        backAcrossBreak["playlist.m3u8"] = backAcrossBreak["playlist.m3u8"]!
            .replacingOccurrences(of: "#EXT-X-PROGRAM-DATE-TIME:", with: "#EXT-X-DISCONTINUITY\n#EXT-X-PROGRAM-DATE-TIME:")
        XCTAssertTrue(check(backAcrossBreak).contains { $0.rule == "P13" && $0.message.contains("went back") })
        // 40 ms a segment passes each step, but not 1.2 s over thirty of them.
        let drifts = StreamBuilder.make(seconds: 60)
        redated(drifts, live: true) { index, line in self.date(line, plus: Int64(index) * 40) }
        XCTAssertTrue(check(drifts).contains { $0.rule == "P13" && $0.message.contains("drifted") }, "\(check(drifts))")
    }
}

extension String {
    func ranges(of needle: String) -> [Range<String.Index>] {
        var result: [Range<String.Index>] = []
        var from = startIndex
        while let r = range(of: needle, range: from..<endIndex) { result.append(r); from = r.upperBound }
        return result
    }
}

final class ReloadCheckerTests: XCTestCase {
    func playlist(_ segments: Int, targetDuration: Int = 2, sequence: Int = 1, ended: Bool = false, extinf: String = "2.000") -> String {
        var p = MediaPlaylist(targetDuration: targetDuration)
        p.mediaSequence = sequence
        p.entries = (0..<segments).map { .init(uri: StreamLayout.segment(sequence + $0), duration: extinf, programDateTimeMs: Int64(sequence + $0) * 2000) }
        p.isEnded = ended
        return p.render()
    }

    func rules(_ a: String, _ b: String) -> [String] { ReloadChecker.check(previous: a, next: b).map(\.rule) }

    func testAppendingAndEndingAreAllowed() {
        XCTAssertEqual(rules(playlist(2), playlist(3)), [])
        XCTAssertEqual(rules(playlist(3), playlist(3)), [])
        XCTAssertEqual(rules(playlist(3), playlist(3, ended: true)), [])
        XCTAssertEqual(rules(playlist(3, ended: true), playlist(3, ended: true)), [])
    }

    func testChangesThatBreakPlayers() {
        XCTAssertEqual(rules(playlist(3), playlist(4, targetDuration: 3)), ["L4"], "TARGETDURATION changed (gpac #2466)")
        XCTAssertEqual(rules(playlist(3, sequence: 5), playlist(3, sequence: 1)), ["L2", "L1"], "sequence reset (hls.js #3913)")
        XCTAssertEqual(rules(playlist(3), playlist(2)), ["L1"], "a listed segment disappeared")
        XCTAssertEqual(rules(playlist(3), playlist(3, extinf: "2.001")), ["L1"], "EXTINF rewritten")
        XCTAssertEqual(rules(playlist(3, ended: true), playlist(4, ended: true)), ["L8"])
        XCTAssertEqual(rules(playlist(3), playlist(2, sequence: 2)), ["L2"], "an EVENT playlist never removes")
        let ranged = playlist(2).replacingOccurrences(of: "seg/000002.m4s", with: "#EXT-X-BYTERANGE:900@0\nseg/000002.m4s")
        XCTAssertEqual(rules(ranged, ranged.replacingOccurrences(of: "900@0", with: "901@0")), ["L1"], "an I-frame's range rewritten")
    }
}
