import Foundation
import XCTest
@testable import Streaming
import Devices
import Publishing
import HLS
import Codecs
import Media
import Threading

/// The pre-roll ring, driven by capture times on a made-up clock.
final class PrerollTests: XCTestCase {
    func testTheRingStartsAtTheIDRAtOrBeforeNewestMinusNAndMovesToTenSeconds() throws {
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 30)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 3_000_000_000
        let timeline = Timeline(firstVideoCaptureTime: origin, wallClockMs: 1_796_000_000_000)
        let encoder = StreamEncoder(timeline: timeline, fps: 30, rotation: .none,
                                    keyframes: SegmentGrid(start: 900_000, segmentTicks: 90_000),  // an IDR a second
                                    video: try VideoEncoder(kind: .x264, settings: VideoEncoderSettings(width: 160, height: 96, fps: 30,
                                                                                                      bitrate: 200_000, keyframeInterval: 30)),
                                    audio: try AACEncoder(settings: AudioEncoderSettings()))
        let preroll = Preroll(encoder: encoder, seconds: 1)
        for i in Int64(0)..<100 {
            try preroll.encode(pattern.frame(index: i, captureTime: origin + pattern.offset(of: i)))
            if i % 3 == 2 {  // 100 ms of sound every third frame
                try preroll.encode(AudioChunk(samples: tone.samples(from: (i / 3) * 4800, count: 4800), channels: 1, sampleRate: 48_000,
                                              captureTime: origin + (i / 3) * 100_000_000))
            }
        }
        let dating = StreamDating(offsetMs: 1_796_000_000_000 - origin / 1_000_000)
        let start = try XCTUnwrap(preroll.origin(dating: dating))
        // Newest frame 99; 99 − 30 = 69; the IDR at or before it is frame 60.
        XCTAssertEqual(start.video.count, 40)
        XCTAssertTrue(start.video[0].isSync)
        XCTAssertEqual(start.video[0].dts, 900_000, "moved to the stream's 10 s")
        XCTAssertEqual(start.shift.video, 60 * 3000)
        XCTAssertEqual(start.shift.audio, 96_000, "2 s at 48 kHz")
        XCTAssertEqual(start.timeline.origin, origin + 2_000_000_000, "the stream's timeline starts at frame 60's capture")
        XCTAssertEqual(start.timeline.wallClockMs(ticks: 900_000, timescale: 90_000), 1_796_000_002_000,
                       "dated by the stream's calendar, at frame 60")
        let firstAudio = try XCTUnwrap(start.audio.first)
        XCTAssertLessThanOrEqual(firstAudio.dts, 480_000, "sound starts at or before the first picture")
        XCTAssertGreaterThan(firstAudio.dts + firstAudio.duration, 480_000, "with the AAC frame that covers it, none before")
        let order = start.heldInTimeOrder(audioTimescale: 48_000)
        XCTAssertEqual(order.count, start.video.count + start.audio.count)
        XCTAssertTrue(zip(order, order.dropFirst()).allSatisfy { a, b in
            let ta = a.isVideo ? a.sample.dts * 48_000 : a.sample.dts * 90_000
            let tb = b.isVideo ? b.sample.dts * 48_000 : b.sample.dts * 90_000
            return ta <= tb || (b.isVideo && !a.isVideo)
        }, "interleaved in time order")
    }
}

/// The pre-roll of a ladder whose top rung the heat leaves out for a while, then whose rate
/// it lowers: what it holds never spans either change, and starts on the lowest rung's IDR (the lowest rung is never
/// left out; every rung's IDRs fall on the same frames).
final class LadderPrerollTests: XCTestCase {
    func testThePrerollHoldsOneSetOfRungsFromAnIDR() throws {
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 30)
        let origin: Int64 = 3_000_000_000
        let timeline = Timeline(firstVideoCaptureTime: origin, wallClockMs: 1_796_000_000_000)
        func rung(_ width: Int, _ height: Int) throws -> VideoEncoder {
            try VideoEncoder(kind: .x264, settings: VideoEncoderSettings(width: width, height: height, fps: 30, bitrate: 200_000, keyframeInterval: 30))
        }
        let encoder = StreamEncoder(timeline: timeline, fps: 30, rotation: .none, keyframes: SegmentGrid(start: 900_000, segmentTicks: 90_000),
                                    video: try rung(160, 96), lowerRungs: [try rung(80, 48)], audio: nil)
        let preroll = Preroll(encoder: encoder, seconds: 1)
        let dating = StreamDating(offsetMs: 1_796_000_000_000 - origin / 1_000_000)
        func feed(_ frames: Range<Int64>) throws {
            for i in frames { try preroll.encode(pattern.frame(index: i, captureTime: origin + pattern.offset(of: i))) }
        }
        try feed(0..<40)
        encoder.setDroppedRungs(1)  // hot: from the next boundary, frame 60
        try feed(40..<75)
        var held = try XCTUnwrap(preroll.origin(dating: dating)).video
        XCTAssertEqual(Set(held.map(\.rung)), [1], "only the rung still encoded, from the change on")
        XCTAssertTrue(held[0].isSync)
        XCTAssertEqual(held.count, 15, "frames 60-74")
        encoder.setDroppedRungs(0)  // cool again: from frame 90
        try feed(75..<135)
        held = try XCTUnwrap(preroll.origin(dating: dating)).video
        XCTAssertEqual(Set(held.map(\.rung)), [0, 1])
        for r in 0...1 {
            let first = try XCTUnwrap(held.first { $0.rung == r })
            XCTAssertTrue(first.isSync, "rung \(r) starts on an IDR")
            XCTAssertEqual(first.dts, held[0].dts, "both rungs from the same frame")
        }
        XCTAssertEqual(held.filter { $0.rung == 0 }.count, 45, "frames 90-134: the IDR at or before 134 − 30 is frame 90")
        // A frame rate the heat lowers: one rate in what is held (one discontinuity domain).
        encoder.setRate(15)  // from frame 150 on
        try feed(135..<170)
        held = try XCTUnwrap(preroll.origin(dating: dating)).video
        XCTAssertTrue(held[0].isSync)
        XCTAssertEqual(Set(zip(held.filter { $0.rung == 0 }, held.filter { $0.rung == 0 }.dropFirst()).map { $1.dts - $0.dts }), [6000],
                       "15 fps throughout, from the change on")
    }
}

/// One capture, two outputs: an output that falls behind drops its own oldest pictures
/// and never holds the other one back.
final class OutputIndependenceTests: XCTestCase {
    final class Counting: StreamOutput, Sendable {
        let name: String
        /// A slow output: each picture waits until the test lets it through.
        let held: Condition<Bool>?
        let taken = Locked<[Int64]>([])
        var frames: [Int64] { taken.withLock { $0 } }
        init(name: String, slow: Bool) {
            self.name = name
            held = slow ? Condition(true) : nil
        }
        func release() {
            held?.withLock { $0 = false }
            held?.broadcast()
        }
        func prepare() throws {}
        var encodings: [EncodingCost.Output] { [] }
        func prime(_ frame: VideoFrame) throws {}
        func prime(_ chunk: AudioChunk) throws {}
        func begin(_ start: StreamStart, firstFrame: VideoFrame) throws { try encode(firstFrame) }
        func encode(_ frame: VideoFrame) throws {
            held?.withLock(waitingFor: { $0 ? .wait : .done(()) })
            taken.withLock { $0.append(frame.index) }
        }
        func encode(_ chunk: AudioChunk) throws {}
        func setRate(_ fps: Int) {}
        func setDroppedRungs(_ dropped: Int) {}
        func finish() throws {}
    }

    func testASlowOutputDropsItsOwnFramesAndTheOtherGetsEveryOne() {
        let slow = Counting(name: "live", slow: true), fast = Counting(name: "recording", slow: false)
        // The recording's queue is the deeper one (as in Session); deep enough here that a
        // busy test machine cannot make it drop, while the slow output must.
        let workers = [(slow, 4), (fast, 100)].map {
            OutputWorker($0.0, queue: MediaQueue(videoCapacity: $0.1, audioCapacity: 50, policy: .dropOldest), failed: { _, _ in })
        }
        for worker in workers { worker.queue.push(.begin(StreamStart(id: "s", dating: StreamDating(offsetMs: 0)))) }
        for i in Int64(0)..<100 {
            let frame = VideoFrame(width: 2, height: 2, planes: [UInt8](repeating: 0, count: 6), captureTime: i, index: i)
            for worker in workers { worker.queue.push(.video(frame)) }  // never waits: drops instead
        }
        // The slow output has held every picture it took so far; its queue kept only the
        // newest.
        slow.release()
        for worker in workers { worker.queue.push(.finish); worker.stop() }
        XCTAssertEqual(fast.frames, Array(0..<100), "the fast output got every frame, in order")
        XCTAssertLessThan(slow.frames.count, 100)
        XCTAssertEqual(workers[0].queue.dropped.video, 100 - slow.frames.count, "the slow one dropped, and counted, the rest")
        XCTAssertEqual(workers[1].queue.dropped.video, 0)
    }
}
