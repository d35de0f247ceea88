import Basics
import Foundation
import XCTest
import Logging
@testable import Streaming
import Devices
import HLS
import Codecs
import Media
import Recording
import TestSupport
import Threading

/// A board without a real-time clock: the wall clock starts wrong, NTP steps it, and may
/// step it again. Nothing onair makes is dated before the clock is trusted, and no step
/// of it changes a segment, a frame or a date already given.
final class ClockTests: XCTestCase {
    func testIdsAreDatesOnlyOnATrustedClockAndNeverRepeat() throws {
        let root = temporaryRoot()
        let names = StreamNames(root: root, device: "cam1", bootID: "3F9A1C2B-77aa-4e3b-9d1c-1234567890ab")
        let clock = SteppedWallClock(offsetMs: 946_684_800_000, synchronized: false)
        let ms: Int64 = 1_000_000
        XCTAssertEqual(names.next(dating: StreamDating(clock: clock), firstCapture: 42_000 * ms + 5), "boot-3f9a1c2b-0000042000-cam1")
        XCTAssertEqual(names.next(dating: StreamDating(clock: clock), firstCapture: 42_000 * ms + 7), "boot-3f9a1c2b-0000042001-cam1",
                       "two in one millisecond")
        // A restart of onair in the same boot: ids already on disk are passed over.
        try FileManager.default.createDirectory(atPath: root + "/streams/boot-3f9a1c2b-0000050000-cam1", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/recordings", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: root + "/recordings/boot-3f9a1c2b-0000050001-cam1.mp4.part", contents: Data())
        let restarted = StreamNames(root: root, device: "cam1", bootID: "3f9a1c2b-77aa")
        XCTAssertEqual(restarted.next(dating: StreamDating(clock: clock), firstCapture: 50_000 * ms), "boot-3f9a1c2b-0000050002-cam1")
        XCTAssertNil(UTCDate.parseCompact("boot-3f9a1c2b-0000050002-cam1"), "not a date: retention by age cannot misread it")

        clock.step(by: 0, synchronized: true)
        let capture = MonotonicClock().now()
        let dated = names.next(dating: StreamDating(clock: clock), firstCapture: capture)
        XCTAssertTrue(dated.hasPrefix("2000"), dated)
        XCTAssertTrue(dated.hasSuffix("Z-cam1"), dated)
        // A second stream in the same second, and a third after a restart (its directory
        // made): the next free seconds, never a counter after the device name.
        let second = names.next(dating: StreamDating(clock: clock), firstCapture: capture)
        XCTAssertEqual(UTCDate.parseCompact(second), UTCDate.parseCompact(dated).map { $0 + 1000 }, second)
        for id in [dated, second] { try FileManager.default.createDirectory(atPath: root + "/streams/" + id, withIntermediateDirectories: true) }
        let third = StreamNames(root: root, device: "cam1").next(dating: StreamDating(clock: clock), firstCapture: capture)
        XCTAssertTrue([dated, second].allSatisfy { $0 != third }, third)
        // Two boards started in the same second.
        XCTAssertNotEqual(StreamNames.datedID(wallClockMs: 1_796_229_753_000, device: "cam1"),
                          StreamNames.datedID(wallClockMs: 1_796_229_753_000, device: "cam2"))
        XCTAssertEqual(StreamNames.datedID(wallClockMs: 1_796_229_753_000, device: "cam1"), "20261202T164233Z-cam1")
        XCTAssertLessThan(StreamNames.datedID(wallClockMs: 1_796_229_753_000, device: "cam1"),
                          StreamNames.datedID(wallClockMs: 1_796_229_754_000, device: "cam1"))
    }

    func testDatingIsFixedOnceTrustedAndNeverMovesAfter() {
        let manual = ManualClock(now: 10_000_000_000)
        let clock = SteppedWallClock(offsetMs: 1_000_000, synchronized: false, clock: manual)
        let dating = StreamDating(clock: clock)
        XCTAssertNil(dating.wallClockMs(monotonic: 10_000_000_000), "no date on an untrusted clock")
        clock.step(by: 3 * 365 * 86_400_000, synchronized: true)
        let first = dating.wallClockMs(monotonic: 10_000_000_000)
        XCTAssertEqual(first, 10_000 + 1_000_000 + 3 * 365 * 86_400_000)
        clock.step(by: -3_600_000)
        XCTAssertEqual(dating.wallClockMs(monotonic: 12_000_000_000), first.map { $0 + 2000 }, "a later step moves no date")
    }

    /// The whole session on a clock that is wrong at the start (2000-01-01, unsynchronised),
    /// stepped forward three years when NTP answers, then back an hour: one stream, valid,
    /// every frame in it in order, no date before the clock was trusted and none that jumps.
    func testAStreamSurvivesTheClockSteppingYearsAndBack() throws {
        let root = temporaryRoot()
        let fps = 30
        let video = VideoEncoderSettings(width: 320, height: 192, fps: fps, bitrate: 1_500_000, keyframeInterval: 2 * fps)
        let live = LiveProfile(output: OutputProfile(encoder: .x264, video: video, audio: AudioEncoderSettings(), dataDirectory: root),
                               segmentMilliseconds: 2000)
        let profile = SessionProfile(live: live, recording: nil, fps: fps, durationMilliseconds: 12_000, waitsForEncoders: true,
                                     dataDirectory: root)
        let manual = ManualClock(now: 50_000_000_000)
        let wall = SteppedWallClock(offsetMs: 946_684_800_000 - 50_000, synchronized: false, clock: manual)
        let ended = Completion()
        let session = Session(profile: profile, log: Log(format: .logfmt, write: { _ in }), clock: wall)
        session.startRecording()
        try session.start { _ in ended.signal() }
        let pattern = SyntheticPattern(width: 320, height: 192, fps: fps)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin = manual.now()
        let threeYears: Int64 = 1096 * 86_400_000
        var chunk: Int64 = 0
        for i in Int64(0)..<Int64(12 * fps + 15) {
            let capture = origin + pattern.offset(of: i)
            manual.sleep(until: capture)
            if i == 100 { wall.step(by: threeYears, synchronized: true) }  // NTP answers in segment 2
            if i == 250 { wall.step(by: -3_600_000) }                      // and steps back an hour in segment 5
            session.queue.push(.video(pattern.frame(index: i, captureTime: capture)))
            while origin + (chunk + 1) * 20_000_000 <= capture {
                session.queue.push(.audio(AudioChunk(samples: tone.samples(from: chunk * 960, count: 960), channels: 1,
                                                     sampleRate: 48_000, captureTime: origin + chunk * 20_000_000)))
                chunk += 1
            }
        }
        XCTAssertTrue(ended.wait(seconds: 120), "the stream ends at its 12 s")
        session.shutdown()
        XCTAssertNil(session.error)

        let ids = try FileManager.default.contentsOfDirectory(atPath: root + "/streams").filter { !$0.hasPrefix(".") }
        XCTAssertEqual(ids.count, 1)
        let id = try XCTUnwrap(ids.first)
        XCTAssertTrue(id.hasPrefix("boot-"), "started unsynchronised: no date in the id (\(id))")
        let directory = root + "/streams/" + id
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
        let text = try String(contentsOfFile: directory + "/playlist.m3u8", encoding: .utf8)
        let playlist = try XCTUnwrap(MediaPlaylist(parsing: text))
        XCTAssertEqual(playlist.entries.count, 6)
        XCTAssertFalse(text.contains("#EXT-X-DISCONTINUITY"), "a clock step is not a break in the media")
        let dates = playlist.entries.map(\.programDateTimeMs)
        // Segment 0 was written (at frame 60) before NTP answered; segment 1 (frames 60–119)
        // after, so it is dated, correctly: the calendar maps capture times, whenever found.
        XCTAssertNil(dates[0], "no date before the clock was trusted")
        let dated = dates.dropFirst().compactMap { $0 }
        XCTAssertEqual(dated.count, 5, "every segment after it is dated: \(dates)")
        XCTAssertEqual(dated.first, origin / 1_000_000 + 2000 + 946_684_800_000 - 50_000 + threeYears,
                       "segment 1 starts 2 s after frame 0, on the clock as NTP set it")
        XCTAssertEqual(zip(dated, dated.dropFirst()).map { $1 - $0 }, [2000, 2000, 2000, 2000], "dates follow the media, through the step back")
        let info = StreamInfo(id: id, playlist: text, playlistURL: "")
        XCTAssertEqual(info.start, UTCDate.iso8601(milliseconds: try XCTUnwrap(dated.first) - 2000), "the true start, found later")

        // Every frame, in order, none lost or repeated: the index bands of the decoded stream.
        let indices = try decodedIndices(directory + "/index.m3u8", width: 320, height: 192)
        XCTAssertEqual(indices, (0..<UInt32(12 * fps)).map { $0 })
    }

    func testRetentionByAgeNeedsAKnownStart() throws {
        let root = temporaryRoot()
        let recordings = Recordings(root: root)
        try FileManager.default.createDirectory(atPath: recordings.directory, withIntermediateDirectories: true)
        for id in ["20200101T000000Z-0001", "boot-3f9a1c2b-0000001", "boot-3f9a1c2b-0000002"] {
            FileManager.default.createFile(atPath: "\(recordings.directory)/\(id).mp4", contents: Data([0]))
        }
        // Its clock was synchronised during the recording: the true start was written down.
        let dated = Recordings.Entry(id: "boot-3f9a1c2b-0000002", file: "boot-3f9a1c2b-0000002.mp4", bytes: 1, seconds: 1, frames: 30,
                                     priority: .normal, recording: false, startMs: 1_577_836_800_000)
        FileManager.default.createFile(atPath: "\(recordings.directory)/boot-3f9a1c2b-0000002.json", contents: Data(dated.json.bytes))
        recordings.expire(keepDays: 30, nowMs: 1_796_229_753_000, log: Log(format: .logfmt, write: { _ in }))
        XCTAssertEqual(recordings.list().map(\.id), ["boot-3f9a1c2b-0000001"], "the undated one waits for storage.min_free")
    }

    private func temporaryRoot() -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-clock-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: root) }
        return root
    }

    /// The synthetic pattern's frame index of every picture ffmpeg decodes from `input`.
    private func decodedIndices(_ input: String, width: Int, height: Int) throws -> [UInt32] {
        let (status, pixels) = try toolOutput("/usr/bin/ffmpeg", ["-v", "error", "-i", input, "-map", "0:v:0", "-fps_mode", "passthrough",
                                                                  "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        XCTAssertEqual(status, 0)
        let size = width * height
        return pixels.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            return (0..<(pixels.count / size)).map { frame in
                SyntheticPattern.decodeIndex(luma: UnsafeBufferPointer(rebasing: bytes[(frame * size)..<((frame + 1) * size)]),
                                             width: width, height: height) ?? .max
            }
        }
    }
}
