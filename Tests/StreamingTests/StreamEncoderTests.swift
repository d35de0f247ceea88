import Foundation
import XCTest
@testable import Streaming
import Devices
import Publishing
import HLS
import Codecs
import Media

/// A 64x48, 10 fps x264 + mono AAC encoder on a timeline that starts at `origin`.
func smallStreamEncoder(origin: Int64) throws -> (StreamEncoder, Timeline) {
    let video = try VideoEncoder(kind: .x264, settings: VideoEncoderSettings(width: 64, height: 48, fps: 10, bitrate: 100_000, keyframeInterval: 20))
    let audio = try AACEncoder(settings: AudioEncoderSettings(sampleRate: 48_000, channels: 1, bitrate: 64_000))
    let timeline = Timeline(firstVideoCaptureTime: origin, wallClockMs: 0)
    let encoder = StreamEncoder(timeline: timeline, fps: 10, rotation: .none,
                                keyframes: SegmentGrid(start: timeline.startTicks(timescale: Timescale.video), segmentTicks: 180_000),
                                video: video, audio: audio)
    return (encoder, timeline)
}

/// The end of a stream: both tracks end together (HLS_RULES S14) even when the sound
/// lags the pictures, as it does on a loaded board.
final class StreamEncoderEndTests: XCTestCase {
    func testSoundThatStopsShortIsPaddedToTheLastPicture() throws {
        let origin: Int64 = 5_000_000_000
        let (encoder, timeline) = try smallStreamEncoder(origin: origin)
        var videoSamples: [EncodedSample] = [], audioSamples: [EncodedSample] = []
        let picture = [UInt8](repeating: 128, count: VideoFrame.byteCount(width: 64, height: 48))
        for i in 0..<10 {
            videoSamples += try encoder.encode(VideoFrame(width: 64, height: 48, planes: picture, captureTime: origin + Int64(i) * 100_000_000, index: Int64(i)))
        }
        // Sound up to 0.7 s of the pictures' 1.0 s: the last 0.3 s is still in the microphone.
        for i in 0..<35 {
            audioSamples += try encoder.encode(AudioChunk(samples: [Int16](repeating: 100, count: 960), channels: 1, sampleRate: 48_000,
                                                          captureTime: origin + Int64(i) * 20_000_000))
        }
        let rest = try encoder.flush()
        videoSamples += rest.video
        audioSamples += rest.audio
        XCTAssertEqual(encoder.videoEndTicks, 90_000, "ten frames at 10 fps")
        let audioEnd = try XCTUnwrap(audioSamples.last.map { $0.dts + $0.duration })
        let videoEnd = timeline.startTicks(timescale: 48_000) + 48_000
        XCTAssertLessThanOrEqual(abs(audioEnd - videoEnd), 1024, "audio ends \(Double(audioEnd - videoEnd) / 48_000) s from the video")
        XCTAssertGreaterThan(encoder.audioSilenceFilled, 0)
    }
}

/// A sound card whose clock runs slow against CLOCK_MONOTONIC (the qemu board's loopback):
/// each 20 ms chunk is stamped 0.4 ms later than the samples before it account for. The
/// encoder's output is contiguous, so those gaps must add up into silence, or the sound
/// slides behind the pictures and the stream's last segment ends short (S14).
final class AudioClockDriftTests: XCTestCase {
    func testASlowSoundClockIsMadeUpWithSilenceAndTheTracksEndTogether() throws {
        let origin: Int64 = 5_000_000_000
        let (encoder, timeline) = try smallStreamEncoder(origin: origin)
        var audioSamples: [EncodedSample] = []
        let picture = [UInt8](repeating: 128, count: VideoFrame.byteCount(width: 64, height: 48))
        var chunk: Int64 = 0
        for i in 0..<100 {  // 10 s
            _ = try encoder.encode(VideoFrame(width: 64, height: 48, planes: picture, captureTime: origin + Int64(i) * 100_000_000, index: Int64(i)))
            while origin + chunk * 20_400_000 + 20_400_000 <= origin + Int64(i + 1) * 100_000_000 {
                audioSamples += try encoder.encode(AudioChunk(samples: [Int16](repeating: 100, count: 960), channels: 1, sampleRate: 48_000,
                                                              captureTime: origin + chunk * 20_400_000))
                chunk += 1
            }
        }
        audioSamples += try encoder.flush().audio
        XCTAssertGreaterThan(encoder.audioSilenceFilled, 48_000 / 10, "2 % of 10 s: about 0.2 s made up with silence")
        let audioEnd = try XCTUnwrap(audioSamples.last.map { $0.dts + $0.duration })
        let videoEnd = timeline.startTicks(timescale: 48_000) + 480_000
        XCTAssertLessThanOrEqual(abs(audioEnd - videoEnd), 1024, "audio ends \(Double(audioEnd - videoEnd) / 48_000) s from the video")
    }
}

/// Issue 45: a real-time viewer's request for a picture makes the next frame an IDR — not
/// when the grid's is a few frames away, and at most one a second for requests — and the
/// grid's IDRs stay where they were.
final class PictureRequestTests: XCTestCase {
    func testARequestedIDRComesAtTheNextFrameAndTheGridKeepsItsOwn() throws {
        let origin: Int64 = 5_000_000_000
        let (encoder, timeline) = try smallStreamEncoder(origin: origin)
        let picture = [UInt8](repeating: 128, count: VideoFrame.byteCount(width: 64, height: 48))
        // 10 fps, 2 s segments: the grid's IDRs at frames 0, 20, 40.
        let asks: Set<Int> = [5, 7, 18, 46]
        var samples: [EncodedSample] = []
        for i in 0..<60 {
            if asks.contains(i) { encoder.pictureRequests.ask() }
            samples += try encoder.encode(VideoFrame(width: 64, height: 48, planes: picture, captureTime: origin + Int64(i) * 100_000_000, index: Int64(i)))
        }
        samples += try encoder.flush().video
        let start = timeline.startTicks(timescale: Timescale.video)
        let idrs = samples.filter(\.isSync).map { Int(($0.pts - start) / 9_000) }
        // 5: at once; 7: within a second of 5, so at 15; 18: the grid's 20 answers it; 46: at once.
        XCTAssertEqual(idrs, [0, 5, 15, 20, 40, 46])
        XCTAssertEqual(encoder.keyframesRequested, 3)
    }
}
