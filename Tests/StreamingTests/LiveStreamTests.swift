import Foundation
import XCTest
import TestSupport
import Logging
@testable import Streaming
import Devices
import Publishing
import HLS
import Codecs
import Media

/// The live path's own timing discipline, with real encoders and a real writer: whatever
/// the capture does (jitter, a dropped frame, a repeated one, a lost audio chunk), the
/// stream stays constant-rate, continuous and in sync.
final class LiveStreamTimingTests: XCTestCase {
    /// A 160x96 stream at `fps` with real x264 and AAC encoders, writing under a temporary
    /// folder that `addTeardownBlock` removes.
    func profileAndEncoders(fps: Int) throws -> (LiveProfile, VideoEncoder, AACEncoder, Log) {
        let profile = smallLiveProfile(fps: fps)
        let size = profile.output.video
        let video = try VideoEncoder(kind: .x264, settings: VideoEncoderSettings(width: size.width, height: size.height, fps: fps,
                                                                                bitrate: 200_000, keyframeInterval: 2 * fps))
        return (profile, video, try AACEncoder(settings: AudioEncoderSettings()), Log(format: .logfmt, write: { _ in }))
    }

    func testDropsRepeatsJitterAndLostAudioStillGiveAValidStream() throws {
        let (profile, video, audio, log) = try profileAndEncoders(fps: 30)
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 30)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 5_000_000_000
        func frame(_ i: Int64, jitter: Int64 = 0) -> VideoFrame {
            pattern.frame(index: i, captureTime: origin + pattern.offset(of: i) + jitter)
        }
        let stream = try LiveStream(firstFrame: frame(0), wallClockMs: 1_796_229_753_000, profile: profile,
                                    video: video, audio: audio, log: log, observer: { _ in })
        var chunk: Int64 = 0
        for i in Int64(1)..<180 {
            if i == 50 || i == 51 { continue }                                     // two frames dropped
            try stream.encode(frame(i, jitter: (i % 3 - 1) * 4_000_000))            // ±4 ms jitter
            if i == 90 { try stream.encode(frame(i, jitter: 2_000_000)) }          // the same slot again
            while origin + chunk * 20_000_000 + 20_000_000 <= frame(i).captureTime {
                if chunk != 40 {                                                    // one 20 ms chunk lost
                    try stream.encode(AudioChunk(samples: tone.samples(from: chunk * 960, count: 960), channels: 1,
                                                 sampleRate: 48_000, captureTime: origin + chunk * 20_000_000))
                }
                chunk += 1
            }
        }
        try stream.finish()
        XCTAssertEqual(stream.framesEncoded, 180, "every slot of 6 s at 30 fps, once")
        XCTAssertEqual(stream.framesRepeated, 2)
        XCTAssertEqual(stream.framesSkipped, 1)
        // The lost chunk, and at the end the 40 ms from the last whole chunk (5.96 s) to the
        // last picture's end (6 s), so both tracks end together.
        XCTAssertEqual(stream.audioSilenceFilled, 960 + 1920)
        let directory = stream.writer.directory
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
    }
    /// What the qemu board showed: sound lagging the pictures by 300 ms, a stall that
    /// drops 26 frames, then a stop, with the sound let in until it covers the last picture
    /// (as the session's finishing state does). Both tracks still end together.
    func testAStopAfterAStallWithLaggingSoundEndsBothTracksTogether() throws {
        let (profile, video, audio, log) = try profileAndEncoders(fps: 10)
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 10)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 5_000_000_000
        func frame(_ i: Int64) -> VideoFrame { pattern.frame(index: i, captureTime: origin + i * 100_000_000) }
        func chunk(_ n: Int64) -> AudioChunk {
            AudioChunk(samples: tone.samples(from: n * 960, count: 960), channels: 1, sampleRate: 48_000, captureTime: origin + n * 20_000_000)
        }
        let stream = try LiveStream(firstFrame: frame(0), wallClockMs: 1_796_229_753_000, profile: profile,
                                    video: video, audio: audio, log: log, observer: { _ in })
        var next: Int64 = 0
        let last: Int64 = 205
        for i in Int64(1)...last {
            if (170..<196).contains(i) { continue }  // the stall
            try stream.encode(frame(i))
            // Sound arrives 300 ms behind the pictures.
            while origin + next * 20_000_000 + 20_000_000 <= frame(i).captureTime - 300_000_000 {
                try stream.encode(chunk(next))
                next += 1
            }
        }
        // Finishing: sound until it covers the last picture.
        while origin + next * 20_000_000 < frame(last).captureTime + 100_000_000 {
            try stream.encode(chunk(next))
            next += 1
        }
        try stream.finish()
        let directory = stream.writer.directory
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
    }
}

/// A camera unplugged for four seconds and back: the live stream goes on after an
/// EXT-X-DISCONTINUITY (no burst of repeated pictures, no sound from the gap), and the
/// recording keeps the last picture up through the gap while the sound goes on.
final class DiscontinuityTests: XCTestCase {
    func testACameraGapBecomesADiscontinuityLiveAndAPauseInTheRecording() throws {
        let profile = smallLiveProfile(fps: 30)
        let recordingProfile = RecordingProfile(output: profile.output, preallocateMegabytes: 0, priority: .normal)
        let encoderSettings = VideoEncoderSettings(width: 160, height: 96, fps: 30, bitrate: 200_000, keyframeInterval: 60)
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 30)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 5_000_000_000
        let log = Log(format: .logfmt, write: { _ in })
        func frame(_ i: Int64) -> VideoFrame {
            var f = pattern.frame(index: i, captureTime: origin + pattern.offset(of: i))
            f.discontinuity = i == 210
            return f
        }
        let start = StreamStart(id: "20261202T120000Z-0001", dating: StreamDating(offsetMs: 1_796_229_753_000 - origin / 1_000_000))
        let live = try LiveStream(start: start, firstFrame: frame(0), profile: profile,
                                  video: try VideoEncoder(kind: .x264, settings: encoderSettings),
                                  audio: try AACEncoder(settings: AudioEncoderSettings()), log: log, observer: { _ in })
        let recording = try RecordingStream(start: start, firstFrame: frame(0), profile: recordingProfile,
                                            video: try VideoEncoder(kind: .x264, settings: encoderSettings),
                                            audio: try AACEncoder(settings: AudioEncoderSettings()), log: log)
        var chunk: Int64 = 0
        // 0–3 s pictures, 3–7 s none (the camera is away), 7–10 s pictures again; sound throughout.
        for i in Int64(1)..<300 where i < 90 || i >= 210 {
            try live.encode(frame(i))
            try recording.encode(frame(i))
            while origin + chunk * 20_000_000 + 20_000_000 <= frame(i).captureTime {
                let sound = AudioChunk(samples: tone.samples(from: chunk * 960, count: 960), channels: 1, sampleRate: 48_000,
                                       captureTime: origin + chunk * 20_000_000)
                try live.encode(sound)
                try recording.encode(sound)
                chunk += 1
            }
        }
        try live.finish()
        try recording.finish()

        XCTAssertEqual(live.framesEncoded, 180, "no pictures invented for the gap")
        XCTAssertEqual(live.framesRepeated, 0)
        let directory = live.writer.directory
        let playlist = try String(contentsOfFile: directory + "/playlist.m3u8", encoding: .utf8)
        XCTAssertEqual(playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count, 2, playlist)
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
        let parsed = try XCTUnwrap(MediaPlaylist(parsing: playlist))
        let after = try XCTUnwrap(parsed.entries.firstIndex { $0.discontinuity })
        XCTAssertEqual(try XCTUnwrap(parsed.entries[after].programDateTimeMs) - XCTUnwrap(parsed.entries[after - 1].programDateTimeMs), 3000 + 4000 - 2000,
                       "the date after the gap is the capture time of the frame after it")
        XCTAssertEqual(parsed.entries.reduce(0.0) { $0 + (Double($1.duration) ?? 0) }, 6.0, accuracy: 0.001)

        let file = profile.output.dataDirectory + "/recordings/\(start.id).mp4"
        XCTAssertTrue(FileManager.default.fileExists(atPath: file))
        let movie = try ParsedMovieSummary(path: file)
        XCTAssertEqual(movie.videoFrames, 180)
        XCTAssertEqual(movie.videoSeconds, 10.0, accuracy: 0.001, "the last picture before the gap lasts through it")
        XCTAssertEqual(movie.audioSeconds, 10.0, accuracy: 0.05, "the sound goes on")
    }
}

/// Frame count and durations of a progressive MP4, read through libavformat's eyes
/// (ffprobe), so the test does not trust the writer's own reader.
struct ParsedMovieSummary {
    var videoFrames = 0
    var videoSeconds = 0.0
    var audioSeconds = 0.0

    init(path: String) throws {
        let probe = try toolOutput("/usr/bin/ffprobe", ["-v", "error", "-count_packets", "-show_entries",
                                                         "stream=codec_type,nb_read_packets,duration", "-of", "csv=p=0", path])
        let text = String(decoding: probe.stdout, as: UTF8.self)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ",")
            guard fields.count == 3 else { continue }
            if fields[0] == "video" { videoSeconds = Double(fields[1]) ?? 0; videoFrames = Int(fields[2]) ?? 0 }
            if fields[0] == "audio" { audioSeconds = Double(fields[1]) ?? 0 }
        }
    }
}

extension XCTestCase {
    /// A 160x96 live stream at `fps` with sound, 2 s segments, writing under a temporary
    /// folder that the test's teardown removes.
    func smallLiveProfile(fps: Int) -> LiveProfile {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-stream-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: root) }
        let video = VideoEncoderSettings(width: 160, height: 96, fps: fps, bitrate: 1_500_000, keyframeInterval: 1)
        return LiveProfile(output: OutputProfile(encoder: .auto, video: video, audio: AudioEncoderSettings(), dataDirectory: root),
                           segmentMilliseconds: 2000)
    }
}
