import Layout
import XCTest
@testable import HLS
import Media
import MP4
import TestSupport

final class TimelineTests: XCTestCase {
    func testFirstVideoFrameIsTenSecondsAndOneDeltaAppliesToBothTracks() {
        let clock = ManualClock(now: 123_456_789_000)
        let timeline = Timeline(firstVideoCaptureTime: clock.now(), wallClockMs: 1_796_229_753_000)
        XCTAssertEqual(timeline.ticks(captureTime: clock.now(), timescale: 90_000), 900_000)
        XCTAssertEqual(timeline.ticks(captureTime: clock.now(), timescale: 48_000), 480_000)
        // Audio captured 15 ms before the first frame keeps its 15 ms lead.
        XCTAssertEqual(timeline.ticks(captureTime: clock.now() - 15_000_000, timescale: 48_000), 480_000 - 720)
        clock.advance(by: 2_000_000_000)
        XCTAssertEqual(timeline.ticks(captureTime: clock.now(), timescale: 90_000), 1_080_000)
        XCTAssertEqual(timeline.wallClockMs(ticks: 1_080_000, timescale: 90_000), 1_796_229_755_000)
    }

    func testKeyframesFallOnTheGridEvenWhenFramesComeLate() {
        var planner = KeyframePlanner(grid: SegmentGrid(start: 900_000, segmentTicks: 180_000))
        var exact: [Int] = []
        for i in 0..<200 where planner.needsKeyframe(at: 900_000 + Int64(i) * 3000) { exact.append(i) }
        XCTAssertEqual(exact, [0, 60, 120, 180])
        // Frames at 1080000 − 1000 and then + 2000 (jitter): the first one at or past
        // the boundary is the keyframe, and the grid does not move.
        var jittery = KeyframePlanner(grid: SegmentGrid(start: 900_000, segmentTicks: 180_000))
        let times: [Int64] = [900_000, 1_079_000, 1_082_000, 1_085_000, 1_260_000]
        XCTAssertEqual(times.map { jittery.needsKeyframe(at: $0) }, [true, false, true, false, true])
    }
}

final class SegmenterTests: XCTestCase {
    let timeline = Timeline(firstVideoCaptureTime: 0, wallClockMs: 1_000_000)
    let grid = SegmentGrid(start: 900_000, segmentTicks: 180_000)

    func makeSegmenter(audio: Bool = true) -> Segmenter {
        Segmenter(grid: grid, tracks: .init(audio: audio ? 2 : nil), timeline: timeline, nominalFrameDuration: 3000)
    }

    func testCutsAtGridIDRsAndTakesRealDurations() throws {
        var segmenter = makeSegmenter(audio: false)
        var reports: [SegmentReport] = []
        for i in 0..<150 {
            let ticks = 900_000 + Int64(i) * 3000
            reports += segmenter.appendVideo(FakeSamples.video(dts: ticks, idr: i % 60 == 0))
        }
        XCTAssertEqual(reports.map(\.sequence), [1, 2])
        XCTAssertEqual(reports.map(\.videoDuration), [180_000, 180_000])
        XCTAssertEqual(reports.map(\.durationSeconds), ["2.000", "2.000"])
        XCTAssertEqual(reports.map(\.programDateTimeMs), [1_000_000, 1_002_000])
        reports = segmenter.finish()
        XCTAssertEqual(reports.map(\.sequence), [3])
        XCTAssertEqual(reports[0].videoSamples, 30)
        XCTAssertEqual(reports[0].videoDuration, 90_000, "the last frame gets the nominal duration")
        XCTAssertEqual(segmenter.pendingVideoSamples, 0, "nothing is left over")
        let parsed = try ParsedSegment(bytes: reports[0].bytes)
        XCTAssertEqual(parsed.fragments[0].sequenceNumber, 3)
        XCTAssertEqual(parsed.traf(1)[0].baseDecodeTime, 1_260_000)
    }

    func testAnIDROffTheGridDoesNotCut() {
        var segmenter = makeSegmenter(audio: false)
        var reports: [SegmentReport] = []
        for i in 0..<61 {
            reports += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i == 0 || i == 20 || i == 60))
        }
        XCTAssertEqual(reports.count, 1)
        XCTAssertEqual(reports[0].videoSamples, 60)
    }

    func testWaitsForAudioUpToTheCutThenSplitsItByStartTime() throws {
        var segmenter = makeSegmenter()
        var reports: [SegmentReport] = []
        for i in 0...60 {
            reports += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i % 60 == 0))
        }
        XCTAssertTrue(reports.isEmpty, "the cut waits: no audio has arrived")
        // Audio from 10 s − 1024 (priming) onward; the segment ends at 12 s = 576000.
        // The cut is written as soon as the audio covers it, not before.
        var audioTicks: Int64 = 480_000 - 1024
        while audioTicks + 1024 < 576_000 {
            reports += segmenter.appendAudio(FakeSamples.audio(dts: audioTicks))
            audioTicks += 1024
        }
        XCTAssertTrue(reports.isEmpty, "audio does not reach the cut yet")
        reports += segmenter.appendAudio(FakeSamples.audio(dts: audioTicks))  // 575232 + 1024 ≥ 576000
        audioTicks += 1024
        XCTAssertEqual(reports.count, 1)
        let audio = try ParsedSegment(bytes: reports[0].bytes).traf(2)[0]
        XCTAssertEqual(audio.baseDecodeTime, 478_976)
        // Frames starting before 12 s: ceil((576000 − 478976) / 1024) = 95.
        XCTAssertEqual(audio.samples.count, 95)
        XCTAssertEqual(reports[0].audioSamples, 95)
        // The last segment is frame 60 alone: 1080000..<1083000 at 90 kHz, which is
        // 576000..<577600 at 48 kHz. Audio at 576256 and 577280 starts inside it; 578304
        // and 579328 start after it.
        for _ in 0..<4 {
            reports = segmenter.appendAudio(FakeSamples.audio(dts: audioTicks))
            XCTAssertTrue(reports.isEmpty)
            audioTicks += 1024
        }
        reports = segmenter.finish()
        let last = try ParsedSegment(bytes: reports[0].bytes)
        XCTAssertEqual(last.traf(2)[0].baseDecodeTime, 478_976 + 95 * 1024, "audio continues exactly")
        XCTAssertEqual(last.traf(2)[0].samples.count, 2, "audio starting after the video end is dropped")
    }

    func testASilentMicrophoneDoesNotHoldTheStreamBack() {
        var segmenter = makeSegmenter()
        var reports: [SegmentReport] = []
        for i in 0..<(4 * 60 + 1) {
            reports += segmenter.appendVideo(FakeSamples.video(dts: 900_000 + Int64(i) * 3000, idr: i % 60 == 0))
        }
        // Four cuts without audio: each cut beyond the second releases the oldest.
        XCTAssertEqual(reports.map(\.sequence), [1, 2])
    }
}

final class PlaylistTests: XCTestCase {
    func testMediaPlaylistText() {
        var playlist = MediaPlaylist(targetDuration: 2)
        playlist.entries = [.init(uri: StreamLayout.segment(1), duration: "2.000", programDateTimeMs: 1_796_229_753_123),
                            .init(uri: StreamLayout.segment(2), duration: "1.967", programDateTimeMs: 1_796_229_755_123)]
        playlist.isEnded = true
        XCTAssertEqual(playlist.render(), """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:1
            #EXT-X-PLAYLIST-TYPE:EVENT
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-MAP:URI="init.mp4"
            #EXT-X-PROGRAM-DATE-TIME:2026-12-02T16:42:33.123Z
            #EXTINF:2.000,
            seg/000001.m4s
            #EXT-X-PROGRAM-DATE-TIME:2026-12-02T16:42:35.123Z
            #EXTINF:1.967,
            seg/000002.m4s
            #EXT-X-ENDLIST

            """)
    }

    func testMultivariantPlaylistText() {
        let playlist = MultivariantPlaylist(variants: [.init(uri: "playlist.m3u8", bandwidth: 1_700_000, averageBandwidth: 1_560_000,
                                                             codecs: ["avc1.64001f", "mp4a.40.2"], width: 1280, height: 720, frameRateMilli: 29_970)])
        XCTAssertEqual(playlist.render(), """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-STREAM-INF:BANDWIDTH=1700000,AVERAGE-BANDWIDTH=1560000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720,FRAME-RATE=29.970
            playlist.m3u8

            """)
        XCTAssertEqual(MultivariantPlaylist(parsing: playlist.render()), playlist, "reads back what it renders")
        XCTAssertNil(MultivariantPlaylist(parsing: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"), "a media playlist is not one")
    }

    func testBitrateMeterPeakIsTheBusiestWindow() {
        var meter = BitrateMeter(timescale: 1000, targetDuration: 2)
        for bytes in [250_000, 250_000, 500_000, 250_000] { meter.add(bytes: bytes, ticks: 2000) }
        XCTAssertEqual(meter.average, 1_250_000)
        XCTAssertEqual(meter.peak, 2_000_000, "one 2 s segment of 500 kB")
    }

    func testAttributeListSyntax() {
        XCTAssertEqual(ParsedPlaylist.attributes(#"BANDWIDTH=1,CODECS="a,b",RESOLUTION=2x2"#),
                       ["BANDWIDTH": "1", "CODECS": "a,b", "RESOLUTION": "2x2"])
        for bad in [#"bandwidth=1"#, #"A=1,A=2"#, #"A="x"#, #"A="""#, #"A = 1"#] {
            XCTAssertThrowsError(try ParsedPlaylist.attributeList(bad), bad)
        }
    }
}

final class PlaylistReadBackTests: XCTestCase {
    /// A rung the heat dropped names the rung below's init for the segments it carries:
    /// EXT-X-MAP where it changes; the first is always the rendition's own (what it is),
    /// and a stream that began with its top rung dropped names the carried one before its
    /// first segment; read back, the same text.
    func testEntriesWithAnotherInit() throws {
        var playlist = MediaPlaylist(targetDuration: 2)
        playlist.entries = [.init(uri: "seg/000001.m4s", duration: "2.000", programDateTimeMs: nil, map: "../v1/init.mp4"),
                            .init(uri: "seg/000002.m4s", duration: "2.000", programDateTimeMs: nil, discontinuity: true),
                            .init(uri: "seg/000003.m4s", duration: "2.000", programDateTimeMs: nil)]
        let text = playlist.render()
        XCTAssertTrue(text.contains("#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXT-X-MAP:URI=\"../v1/init.mp4\"\n#EXTINF:2.000,\nseg/000001.m4s\n"
                                    + "#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:2.000,\nseg/000002.m4s\n#EXTINF:2.000,\nseg/000003.m4s\n"), text)
        XCTAssertEqual(try XCTUnwrap(MediaPlaylist(parsing: text)).render(), text)
        XCTAssertEqual(ParsedPlaylist(text: text).segments.map(\.map), ["../v1/init.mp4", "init.mp4", "init.mp4"])
    }

    func testParsesWhatItRendersAndCutsPrefixes() throws {
        var playlist = MediaPlaylist(targetDuration: 2)
        playlist.entries = (1...3).map { .init(uri: StreamLayout.segment($0), duration: "2.000", programDateTimeMs: 1_796_229_753_123 + Int64($0) * 2000) }
        playlist.isEnded = true
        let parsed = try XCTUnwrap(MediaPlaylist(parsing: playlist.render()))
        XCTAssertEqual(parsed, playlist)
        XCTAssertEqual(parsed.prefix(2).entries.count, 2)
        XCTAssertFalse(parsed.prefix(2).isEnded, "ENDLIST only with every segment")
        XCTAssertTrue(parsed.prefix(3).isEnded)
        XCTAssertNil(MediaPlaylist(parsing: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"), "no MAP: not one of ours")
    }
}
