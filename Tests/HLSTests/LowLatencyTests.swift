import Layout
import XCTest
@testable import HLS
import MP4
import TestSupport
import Threading

/// Parts as the segmenter cuts them (HLS_RULES LL4, LL6, LL7): 30 fps, 2 s segments from
/// 10 s (900000), audio 1024-sample AAC frames at 48 kHz.
final class PartSegmenterTests: XCTestCase {
    let timeline = Timeline(firstVideoCaptureTime: 0, wallClockMs: 1_000_000)
    let grid = SegmentGrid(start: 900_000, segmentTicks: 180_000)

    func makeSegmenter(partTicks: Int64 = 30_000) -> Segmenter {
        Segmenter(grid: grid, tracks: .init(audio: 2), timeline: timeline, nominalFrameDuration: 3000, partTicks: partTicks)
    }

    /// Two and a half segments of frames with their audio, audio a little ahead of video
    /// as a microphone is; returns every segment and part in the order they came.
    func run(_ segmenter: inout Segmenter, frames: Int = 150) -> (segments: [SegmentReport], parts: [PartReport]) {
        var segments: [SegmentReport] = [], parts: [PartReport] = []
        var audioTicks: Int64 = 480_000 - 1024
        for i in 0..<frames {
            let ticks = 900_000 + Int64(i) * 3000
            while audioTicks * 90_000 < (ticks + 3000) * 48_000 {
                segments += segmenter.appendAudio(FakeSamples.audio(dts: audioTicks, size: 10 + Int(audioTicks % 7)))
                audioTicks += 1024
            }
            segments += segmenter.appendVideo(FakeSamples.video(dts: ticks, idr: i % 60 == 0, size: 30 + i % 11))
            parts += segmenter.takeParts()
        }
        segments += segmenter.finish()
        parts += segmenter.takeParts()
        return (segments, parts)
    }

    func testPartsAreWholeFramesNoLongerThanTheTargetAndEndTheirSegment() {
        var segmenter = makeSegmenter()
        let (segments, parts) = run(&segmenter)
        XCTAssertEqual(segments.map(\.sequence), [1, 2, 3])
        XCTAssertEqual(parts.count, 6 + 6 + 3)
        XCTAssertTrue(parts.allSatisfy { $0.videoDuration <= 30_000 }, "\(parts.map(\.videoDuration))")
        XCTAssertEqual(parts.filter { $0.sequence == 1 }.map(\.index), [0, 1, 2, 3, 4, 5])
        XCTAssertEqual(parts.filter { $0.sequence == 1 }.map(\.endsSegment), [false, false, false, false, false, true])
        XCTAssertEqual(parts.map(\.independent), parts.map { $0.index == 0 }, "INDEPENDENT exactly where an IDR starts the part")
        XCTAssertEqual(parts[0].durationSeconds, "0.33333")
        XCTAssertEqual(parts[0].parentProgramDateTimeMs, 1_000_000)
        XCTAssertEqual(parts[0].lastFrameCaptureTime, 300_000_000, "frame 9 is captured 0.3 s after frame 0")
        XCTAssertEqual(parts.last?.sequence, 3)
        XCTAssertEqual(parts.last?.endsSegment, true)
    }

    /// The parts of a segment are its samples, byte for byte, with the same timing: what
    /// a player reads from parts is what one reading the segment gets (HLS_RULES LL6).
    func testPartsTogetherAreTheirSegment() throws {
        var segmenter = makeSegmenter()
        let (segments, parts) = run(&segmenter)
        for segment in segments {
            let mine = parts.filter { $0.sequence == segment.sequence }
            XCTAssertTrue(try mine.allSatisfy { try ParsedSegment(bytes: $0.bytes).fragments[0].sequenceNumber == UInt32(segment.sequence) })
            XCTAssertNil(partsDiffer(parts: mine.map(\.bytes), segment: segment.bytes), "segment \(segment.sequence)")
            // And the check can tell: a part short of one sample is not its segment.
            XCTAssertNotNil(partsDiffer(parts: mine.dropLast().map(\.bytes), segment: segment.bytes))
        }
    }

    func testWithoutPartsTheSegmentsAreTheSame() {
        var plain = Segmenter(grid: grid, tracks: .init(audio: 2), timeline: timeline, nominalFrameDuration: 3000)
        var parted = makeSegmenter()
        let a = run(&plain), b = run(&parted)
        XCTAssertTrue(a.parts.isEmpty)
        XCTAssertEqual(a.segments.map(\.bytes), b.segments.map(\.bytes))
    }

    /// A part inside a segment does not wait for its sound (the audio encoder is a frame
    /// or two behind): it takes what has come, the next part the rest. The segment's last
    /// part waits, so the segment holds the sound that starts before its end.
    func testOnlyTheLastPartOfASegmentWaitsForItsAudio() throws {
        var segmenter = makeSegmenter()
        var segments: [SegmentReport] = []
        var audioTicks: Int64 = 480_000
        while audioTicks + 1024 < 490_000 { segments += segmenter.appendAudio(FakeSamples.audio(dts: audioTicks)); audioTicks += 1024 }
        for i in 0...10 { segments += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i == 0)) }
        let first = segmenter.takeParts()
        XCTAssertEqual(first.map(\.index), [0], "served as soon as its frames are in")
        XCTAssertEqual(try ParsedSegment(bytes: first[0].bytes).traf(2)[0].samples.count, 9, "with the sound that has come")
        for i in 11...60 {
            while audioTicks * 90_000 < (900_000 + Int64(i) * 3000 - 6000) * 48_000 {  // two frames behind
                segments += segmenter.appendAudio(FakeSamples.audio(dts: audioTicks)); audioTicks += 1024
            }
            segments += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i % 60 == 0))
        }
        let middle = segmenter.takeParts()
        XCTAssertEqual(middle.map(\.index), [1, 2, 3, 4])
        XCTAssertTrue(segments.isEmpty, "the last part waits for the sound up to 12 s")
        while audioTicks * 90_000 < 1_080_000 * 48_000 { segments += segmenter.appendAudio(FakeSamples.audio(dts: audioTicks)); audioTicks += 1024 }
        let last = segmenter.takeParts()
        XCTAssertEqual(last.map(\.index), [5])
        XCTAssertEqual(segments.count, 1)
        XCTAssertEqual(segments[0].audioSamples, 94, "every frame that starts before 12 s: (576000 − 480000) / 1024, rounded up")
        XCTAssertNil(partsDiffer(parts: (first + middle + last).map(\.bytes), segment: segments[0].bytes))
    }

    func testATrailingShortPartAfterADiscontinuityCarriesItsParent() {
        var segmenter = Segmenter(grid: grid, tracks: .init(audio: nil), timeline: timeline, nominalFrameDuration: 3000, partTicks: 30_000)
        var segments: [SegmentReport] = []
        for i in 0..<15 { segments += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i == 0)) }
        segments += segmenter.discontinuity()
        XCTAssertEqual(segmenter.takeParts().map(\.videoDuration), [30_000, 15_000])
        segments += segmenter.appendVideo(FakeSamples.video(dts: 990_000, idr: true))
        segments += segmenter.appendVideo(FakeSamples.video(dts: 993_000, idr: false))
        segments += segmenter.finish()
        let parts = segmenter.takeParts()
        XCTAssertEqual(segments.map(\.discontinuity), [false, true])
        XCTAssertEqual(parts.map(\.parentDiscontinuity), [true])
        XCTAssertEqual(parts.map(\.sequence), [2])
    }
}

final class LowLatencyPlaylistTests: XCTestCase {
    func testPartTargetIsWholeFramesRoundedUp() {
        let thirty = PartTiming(partMilliseconds: 333, fps: 30, segmentTicks: 180_000, targetDuration: 2)
        XCTAssertEqual(thirty.ticks, 30_000)
        XCTAssertEqual(thirty.partTarget, "0.33334")
        XCTAssertEqual(thirty.partHoldBack, "1.00002", "three of PART-TARGET as written")
        XCTAssertEqual(thirty.advancePartLimit, 9)
        XCTAssertEqual(thirty.skipUntilSeconds, 12)
        let twentyFive = PartTiming(partMilliseconds: 333, fps: 25, segmentTicks: 180_000, targetDuration: 2)
        XCTAssertEqual(twentyFive.ticks, 28_800, "8 frames")
        XCTAssertEqual(twentyFive.partTarget, "0.32000")
        XCTAssertEqual(PartTiming(partMilliseconds: 2000, fps: 30, segmentTicks: 90_000, targetDuration: 1).ticks, 90_000,
                       "never longer than a segment")
        XCTAssertEqual(PartTiming(partMilliseconds: 1000, fps: 30, segmentTicks: 180_000, targetDuration: 2).advancePartLimit, 3)
    }

    /// PART-TARGET suits every rate the thermal ladder may take the stream to: the parts
    /// the segmenter cuts at each, but a segment's first and last, last 85–100% of it (LL4).
    func testPartTargetSuitsEveryRateOfTheLadder() {
        func parts(rate: Int, target: Int64) -> [PartReport] {
            let frame = 90_000 / Int64(rate), perSegment = 2 * rate
            var segmenter = Segmenter(grid: SegmentGrid(start: 0, segmentTicks: 180_000), tracks: .init(audio: nil),
                                      timeline: Timeline(firstVideoCaptureTime: 0, wallClockMs: 0), nominalFrameDuration: frame,
                                      partTicks: target)
            var made: [PartReport] = []
            for i in 0..<(3 * perSegment) {
                _ = segmenter.appendVideo(FakeSamples.video(dts: Int64(i) * frame, idr: i % perSegment == 0, size: 20))
                made += segmenter.takeParts()
            }
            return made
        }
        for (milliseconds, fps, ladder, expected) in [(200, 30, [24, 20, 15, 10], Int64(18_750)), (200, 30, [], 18_000),
                                                      (333, 30, [24, 20, 15, 10], 30_000), (200, 25, [20, 15, 10], 18_000),
                                                      (200, 10, [8, 6], 45_000), (100, 30, [1], 90_000)] {
            let timing = PartTiming(partMilliseconds: milliseconds, fps: fps, rates: ladder, segmentTicks: 180_000, targetDuration: 2)
            XCTAssertEqual(timing.ticks, expected, "\(milliseconds) ms at \(fps) fps, ladder \(ladder)")
            for rate in [fps] + ladder {
                let made = parts(rate: rate, target: timing.ticks)
                XCTAssertFalse(made.isEmpty)
                XCTAssertTrue(made.allSatisfy { $0.videoDuration <= timing.ticks }, "\(rate) fps: \(made.map(\.videoDuration))")
                let middle = made.filter { $0.index > 0 && !$0.endsSegment }
                XCTAssertTrue(middle.allSatisfy { 100 * $0.videoDuration >= 85 * timing.ticks },
                              "\(rate) fps under PART-TARGET \(timing.ticks): \(middle.map(\.videoDuration))")
            }
        }
        XCTAssertEqual(PartTiming(partMilliseconds: 200, fps: 30, rates: [24, 20, 15, 10], segmentTicks: 180_000, targetDuration: 2).partTarget,
                       "0.20834", "five frames at 24 fps")
    }

    func testPartNamesReadBack() throws {
        XCTAssertEqual(StreamLayout.part(sequence: 12, index: 3), "part/000012.3.m4s")
        let numbers = try XCTUnwrap(StreamLayout.partNumbers("part/000012.3.m4s"))
        XCTAssertEqual([numbers.sequence, numbers.index], [12, 3])
        for bad in ["part/12.m4s", "part/1.2.3.m4s", "part/.3.m4s", "part/1.-3.m4s", "part/1234567890.0.m4s", "seg/000012.m4s", "part/1.2.mp4"] {
            XCTAssertNil(StreamLayout.partNumbers(bad), bad)
        }
    }

    func testDirectives() {
        func parse(_ arguments: [String: String]) -> Result<DeliveryDirectives, DirectiveError> {
            DeliveryDirectives.parse { arguments[$0] }
        }
        XCTAssertEqual(try parse([:]).get(), DeliveryDirectives())
        XCTAssertEqual(try parse(["_HLS_msn": "12", "_HLS_part": "3", "_HLS_skip": "YES"]).get(), DeliveryDirectives(msn: 12, part: 3, skip: true))
        XCTAssertEqual(try parse(["_HLS_skip": "v2"]).get(), DeliveryDirectives(skip: true))
        let bad: [([String: String], DirectiveError)] = [
            (["_HLS_part": "1"], .partWithoutSegment), (["_HLS_msn": "-1"], .notAnInteger("_HLS_msn", "-1")),
            (["_HLS_msn": "1e3"], .notAnInteger("_HLS_msn", "1e3")), (["_HLS_msn": ""], .notAnInteger("_HLS_msn", "")),
            (["_HLS_msn": "99999999999999999999"], .notAnInteger("_HLS_msn", "99999999999999999999")),
            (["_HLS_msn": "1", "_HLS_part": "x"], .notAnInteger("_HLS_part", "x")), (["_HLS_msn": " 1"], .notAnInteger("_HLS_msn", " 1")),
            (["_HLS_skip": "yes"], .badSkip("yes")), (["_HLS_skip": "NO"], .badSkip("NO"))]
        for (arguments, expected) in bad {
            guard case .failure(let error) = parse(arguments) else { return XCTFail("accepted \(arguments)") }
            XCTAssertEqual(error, expected)
        }
        XCTAssertEqual("\(DirectiveError.notAnInteger("_HLS_msn", "1e3"))", "_HLS_msn must be a decimal integer, got \"1e3\"")
    }

    func part(_ sequence: Int, _ index: Int, ends: Bool = false, ms: Int64? = nil) -> PartReport {
        PartReport(sequence: sequence, index: index, bytes: [UInt8(index)], videoStart: 0, videoDuration: 30_000, videoTimescale: 90_000,
                   independent: index == 0, endsSegment: ends, parentProgramDateTimeMs: ms)
    }

    func testTagsInTheirPlaces() {
        var playlist = MediaPlaylist(targetDuration: 2)
        playlist.entries = [.init(uri: "seg/000001.m4s", duration: "2.000", programDateTimeMs: nil),
                            .init(uri: "seg/000002.m4s", duration: "2.000", programDateTimeMs: 2_000)]
        let timing = PartTiming(ticks: 30_000, targetDuration: 2)
        let text = LowLatencyPlaylist(playlist: playlist, timing: timing, parts: [2: [part(2, 0), part(2, 1, ends: true)]],
                                      partial: [part(3, 0, ms: 4_000)], next: (3, 1)).render()
        XCTAssertEqual(text, """
            #EXTM3U
            #EXT-X-VERSION:9
            #EXT-X-TARGETDURATION:2
            #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.0,PART-HOLD-BACK=1.00002
            #EXT-X-PART-INF:PART-TARGET=0.33334
            #EXT-X-MEDIA-SEQUENCE:1
            #EXT-X-PLAYLIST-TYPE:EVENT
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-MAP:URI="init.mp4"
            #EXTINF:2.000,
            seg/000001.m4s
            #EXT-X-PROGRAM-DATE-TIME:1970-01-01T00:00:02.000Z
            #EXT-X-PART:DURATION=0.33333,URI="part/000002.0.m4s",INDEPENDENT=YES
            #EXT-X-PART:DURATION=0.33333,URI="part/000002.1.m4s"
            #EXTINF:2.000,
            seg/000002.m4s
            #EXT-X-PROGRAM-DATE-TIME:1970-01-01T00:00:04.000Z
            #EXT-X-PART:DURATION=0.33333,URI="part/000003.0.m4s",INDEPENDENT=YES
            #EXT-X-PRELOAD-HINT:TYPE=PART,URI="part/000003.1.m4s"

            """)
        // The file's own playlist is what a player that ignores the new tags reads.
        let plain = MediaPlaylist(parsing: text)
        XCTAssertEqual(plain?.entries, playlist.entries)
    }

    /// A delta update leaves out the segments that end at least CAN-SKIP-UNTIL (12 s)
    /// before the last one does, and keeps the rest exactly (HLS_RULES LL12).
    func testDeltaUpdateSkipsOnlyBeyondTheSkipBoundary() {
        var playlist = MediaPlaylist(targetDuration: 2)
        playlist.entries = (1...10).map { .init(uri: StreamLayout.segment($0), duration: "2.000", programDateTimeMs: Int64($0) * 2000) }
        let timing = PartTiming(ticks: 30_000, targetDuration: 2)
        let full = LowLatencyPlaylist(playlist: playlist, timing: timing, parts: [:], partial: [], next: (11, 0)).render()
        let delta = LowLatencyPlaylist(playlist: playlist, timing: timing, parts: [:], partial: [], next: (11, 0), skip: true).render()
        XCTAssertTrue(delta.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=4\n"), delta)
        XCTAssertFalse(delta.contains("seg/000004.m4s"))
        XCTAssertTrue(delta.contains("#EXT-X-MEDIA-SEQUENCE:1\n"))
        let tail = full.components(separatedBy: "seg/000004.m4s\n")[1]
        XCTAssertTrue(delta.hasSuffix(tail))
        var short = playlist
        short.entries = Array(playlist.entries.prefix(6))
        XCTAssertTrue(LowLatencyPlaylist(playlist: short, timing: timing, parts: [:], partial: [], next: (7, 0), skip: true).render()
            .contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=0\n"))
    }
}

final class LiveEdgeTests: XCTestCase {
    let timing = PartTiming(ticks: 30_000, targetDuration: 2)

    func part(_ sequence: Int, _ index: Int, ends: Bool = false) -> PartReport {
        PartReport(sequence: sequence, index: index, bytes: [UInt8(sequence), UInt8(index)], videoStart: 0, videoDuration: 30_000,
                   videoTimescale: 90_000, independent: index == 0, endsSegment: ends)
    }

    /// Segment `sequence` with its six parts, as the live output gives them.
    func addSegment(_ edge: LiveEdge, _ sequence: Int) {
        edge.add("s", parts: (0..<6).map { part(sequence, $0, ends: $0 == 5) })
        let report = SegmentReport(sequence: sequence, bytes: [], videoStart: Int64(sequence - 1) * 180_000, videoDuration: 180_000,
                                   videoTimescale: 90_000, videoSamples: 60, audioSamples: 0, programDateTimeMs: nil)
        edge.add("s", segment: report, entry: .init(uri: StreamLayout.segment(sequence), duration: "2.000", programDateTimeMs: nil))
    }

    final class Counter: @unchecked Sendable {  // `count` under `lock`
        let lock = Lock()
        var count = 0
        func increment() { lock.withLock { count += 1 } }
        var value: Int { lock.withLock { count } }
    }

    func testBlockingReloadWaitsForThePartAndWakes() {
        let edge = LiveEdge()
        XCTAssertEqual(edge.playlist("s", DeliveryDirectives(), orWake: {}), .notLive)
        edge.begin("s", targetDuration: 2, timing: timing)
        addSegment(edge, 1)
        edge.add("s", parts: [part(2, 0)])
        let woken = Counter()
        guard case .playlist(let now) = edge.playlist("s", DeliveryDirectives(msn: 2, part: 0), orWake: { woken.increment() }) else {
            return XCTFail("part 0 of segment 2 exists")
        }
        XCTAssertTrue(now.contains("part/000002.0.m4s\""))
        XCTAssertTrue(now.hasSuffix("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part/000002.1.m4s\"\n"))
        guard case .wait(let wait) = edge.playlist("s", DeliveryDirectives(msn: 2, part: 1), orWake: { woken.increment() }) else {
            return XCTFail("part 1 does not exist yet")
        }
        XCTAssertEqual(edge.waiting, 1)
        edge.add("s", parts: [part(2, 1)])
        XCTAssertEqual(woken.value, 1)
        XCTAssertFalse(edge.cancel(wait), "already woken")
        guard case .playlist = edge.playlist("s", DeliveryDirectives(msn: 2, part: 1), orWake: {}) else { return XCTFail() }
        // Past a complete segment's last part means the next segment's first (§6.2.5.2).
        guard case .playlist = edge.playlist("s", DeliveryDirectives(msn: 1, part: 9), orWake: {}) else { return XCTFail() }
        guard case .wait(let second) = edge.playlist("s", DeliveryDirectives(msn: 2), orWake: {}) else { return XCTFail() }
        XCTAssertTrue(edge.cancel(second))
        XCTAssertEqual(edge.waiting, 0)
        // Only what a wait asks for wakes it: a part before it does not.
        let later = Counter()
        guard case .wait = edge.playlist("s", DeliveryDirectives(msn: 2, part: 3), orWake: { later.increment() }) else { return XCTFail() }
        edge.add("s", parts: [part(2, 2)])
        XCTAssertEqual(later.value, 0)
        XCTAssertEqual(edge.waiting, 1)
        edge.add("s", parts: [part(2, 3)])
        XCTAssertEqual(later.value, 1)
        XCTAssertEqual(edge.waiting, 0)
    }

    func testRequestsTooFarAheadAreRefused() {
        let edge = LiveEdge()
        edge.begin("s", targetDuration: 2, timing: timing)
        addSegment(edge, 1)
        edge.add("s", parts: [part(2, 0)])
        if case .badRequest = edge.playlist("s", DeliveryDirectives(msn: 4), orWake: {}) {} else { XCTFail("msn 4 > 1 + 2") }
        if case .wait(let wait) = edge.playlist("s", DeliveryDirectives(msn: 3), orWake: {}) { _ = edge.cancel(wait) } else { XCTFail() }
        // The Advance Part Limit is 9 parts at a third of a second.
        if case .wait(let wait) = edge.playlist("s", DeliveryDirectives(msn: 2, part: 5), orWake: {}) { _ = edge.cancel(wait) } else { XCTFail() }
        if case .wait(let wait) = edge.playlist("s", DeliveryDirectives(msn: 3, part: 3), orWake: {}) { _ = edge.cancel(wait) } else { XCTFail() }
        if case .badRequest = edge.playlist("s", DeliveryDirectives(msn: 3, part: 4), orWake: {}) {} else { XCTFail("10 parts ahead") }
    }

    func testPartsAndTheHintedPart() {
        let edge = LiveEdge()
        edge.begin("s", targetDuration: 2, timing: timing)
        addSegment(edge, 1)
        edge.add("s", parts: [part(2, 0)])
        XCTAssertEqual(edge.part("s", sequence: 1, index: 5, orWake: {}), .part([1, 5], captured: 0))
        XCTAssertEqual(edge.part("s", sequence: 2, index: 0, orWake: {}), .part([2, 0], captured: 0))
        XCTAssertEqual(edge.part("s", sequence: 2, index: 2, orWake: {}), .notFound, "not the hinted part")
        XCTAssertEqual(edge.part("t", sequence: 2, index: 0, orWake: {}), .notFound)
        let woken = Counter()
        guard case .wait = edge.part("s", sequence: 2, index: 1, orWake: { woken.increment() }) else { return XCTFail() }
        edge.end("s")
        XCTAssertEqual(woken.value, 1, "the end wakes it")
        XCTAssertEqual(edge.part("s", sequence: 2, index: 1, orWake: {}), .notFound, "a hint the ended stream will never make")
        XCTAssertEqual(edge.part("s", sequence: 2, index: 0, orWake: {}), .part([2, 0], captured: 0), "made parts stay for three target durations")
        XCTAssertEqual(edge.playlist("s", DeliveryDirectives(msn: 5), orWake: {}), .notLive, "the file with ENDLIST answers")
    }

    /// Parts are listed for three target durations after their segment, kept for three
    /// more, then forgotten (HLS_RULES LL10).
    func testOldPartsLeaveTheListThenMemory() {
        let edge = LiveEdge()
        edge.begin("s", targetDuration: 2, timing: timing)
        for sequence in 1...5 { addSegment(edge, sequence) }
        guard case .playlist(let text) = edge.playlist("s", DeliveryDirectives(), orWake: {}) else { return XCTFail() }
        XCTAssertFalse(text.contains("part/000002."), "ended 6 s before the last")
        XCTAssertTrue(text.contains("part/000003.0.m4s"))
        XCTAssertEqual(edge.part("s", sequence: 2, index: 0, orWake: {}), .part([2, 0], captured: 0), "still fetchable")
        for sequence in 6...8 { addSegment(edge, sequence) }
        XCTAssertEqual(edge.part("s", sequence: 2, index: 0, orWake: {}), .notFound)
    }
}

/// `onair validate URL`'s rules for one playlist and for parts against their segment
/// (HLS_RULES LL1–LL8), on playlists broken the ways real servers broke them.
final class LowLatencyCheckerTests: XCTestCase {
    let timing = PartTiming(ticks: 30_000, targetDuration: 2)

    func part(_ sequence: Int, _ index: Int, ticks: Int64 = 30_000, independent: Bool? = nil) -> PartReport {
        PartReport(sequence: sequence, index: index, bytes: [], videoStart: 0, videoDuration: ticks, videoTimescale: 90_000,
                   independent: independent ?? (index == 0), endsSegment: false)
    }

    func good() -> String {
        var playlist = MediaPlaylist(targetDuration: 2)
        playlist.entries = [.init(uri: "seg/000001.m4s", duration: "2.000", programDateTimeMs: 0)]
        return LowLatencyPlaylist(playlist: playlist, timing: timing, parts: [1: (0..<6).map { part(1, $0) }],
                                  partial: [part(2, 0), part(2, 1)], next: (2, 2)).render()
    }

    func rules(_ text: String) -> [String] { LowLatencyChecker.checkPlaylist(text, path: "p").map { "\($0.severity) \($0.rule)" } }

    func testWhatOnairWritesPassesAndParses() {
        XCTAssertEqual(rules(good()), [])
        let snapshot = LowLatencyChecker.parse(good())
        XCTAssertEqual(snapshot.partTarget, 0.33334)
        XCTAssertEqual(snapshot.lastSegment, 1)
        XCTAssertEqual(snapshot.parts.map(\.parent), [1, 1, 1, 1, 1, 1, 2, 2])
        XCTAssertEqual(snapshot.parts.map(\.endsParent), [false, false, false, false, false, true, false, false])
        XCTAssertEqual(snapshot.hint, "part/000002.2.m4s")
    }

    func testBrokenPlaylists() {
        let text = good()
        XCTAssertEqual(rules(text.replacingOccurrences(of: "#EXT-X-PART-INF:PART-TARGET=0.33334\n", with: "")), ["error LL1"])
        XCTAssertEqual(rules(text.replacingOccurrences(of: "PART-HOLD-BACK=1.00002", with: "PART-HOLD-BACK=0.6")), ["error LL2"])
        XCTAssertEqual(rules(text.replacingOccurrences(of: "PART-HOLD-BACK=1.00002", with: "PART-HOLD-BACK=1.0")), ["warning LL2"],
                       "three of the exact target, under three of the written one")
        XCTAssertEqual(rules(text.replacingOccurrences(of: ",PART-HOLD-BACK=1.00002", with: "")), ["error LL2"])
        XCTAssertEqual(rules(text.replacingOccurrences(of: "CAN-SKIP-UNTIL=12.0", with: "CAN-SKIP-UNTIL=6.0")), ["error LL2"])
        // zap-stream-core#98: PART-TARGET written as the average while parts run longer.
        XCTAssertEqual(Set(rules(text.replacingOccurrences(of: "PART-TARGET=0.33334", with: "PART-TARGET=0.33"))), ["error LL4"])
        XCTAssertEqual(rules(text.replacingOccurrences(of: "DURATION=0.33333,URI=\"part/000001.2.m4s\"",
                                                     with: "DURATION=0.1,URI=\"part/000001.2.m4s\"")), ["error LL4"], "short, mid-segment")
        XCTAssertEqual(rules(text.replacingOccurrences(of: "DURATION=0.33333,URI=\"part/000001.5.m4s\"",
                                                     with: "DURATION=0.1,URI=\"part/000001.5.m4s\"")), [], "short, but the segment's last")
        XCTAssertEqual(rules(text.replacingOccurrences(of: "#EXT-X-PART:DURATION=0.33333,URI=\"part/000001.1.m4s\"",
                                                     with: "#EXT-X-PART:DURATION=0.33333,URI=\"part/000001.1.m4s\"\n#EXT-X-DISCONTINUITY")), ["error LL5"])
        XCTAssertEqual(rules(text + "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"x.m4s\"\n"), ["warning LL8"])
        XCTAssertEqual(rules(text + "#EXT-X-ENDLIST\n"), ["error LL8"])
    }

    /// Parts against their segment: the same samples, INDEPENDENT where an IDR starts.
    func testPartsAgainstTheirSegment() throws {
        var segmenter = Segmenter(grid: SegmentGrid(start: 900_000, segmentTicks: 180_000), tracks: .init(audio: nil),
                                  timeline: Timeline(firstVideoCaptureTime: 0, wallClockMs: 0), nominalFrameDuration: 3000, partTicks: 30_000)
        var segments: [SegmentReport] = []
        for i in 0...60 { segments += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i % 60 == 0)) }
        let made = segmenter.takeParts().filter { $0.sequence == 1 }
        let parts = made.map { (part: LowLatencyChecker.Part(uri: "p\($0.index)", duration: 0.33333, independent: $0.independent, parent: 1,
                                                             endsParent: $0.endsSegment), bytes: $0.bytes) }
        XCTAssertEqual(LowLatencyChecker.checkParts(parts, segment: segments[0].bytes, location: "s"), [])
        var lying = parts
        lying[2].part.independent = true
        lying[0].part.independent = false
        XCTAssertEqual(LowLatencyChecker.checkParts(lying, segment: segments[0].bytes, location: "s").map { "\($0.severity) \($0.rule) \($0.location)" },
                       ["warning LL7 p0", "error LL7 p2"])
        XCTAssertEqual(LowLatencyChecker.checkParts(Array(parts.dropLast()), segment: segments[0].bytes, location: "s").map(\.rule), ["LL6"])
    }
}
