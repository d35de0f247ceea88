import Foundation
import XCTest
@testable import Streaming
import Codecs
import Devices
import HLS
import Layout
import Live
import Logging
import Media
import MP4
import System
import Threading

/// The live encoders' samples go to every complete reader of the live feed: another one
/// beside the HLS packager sees exactly what the packager cut into segments.
extension LiveStreamTimingTests {
    final class CollectingSink: EncodedSink {
        var video: [EncodedSample] = []
        var audio: [EncodedSample] = []
        var changes: [StreamChange] = []
        var finished: [StreamTotals] = []
        func append(video sample: EncodedSample) throws { video.append(sample) }
        func append(audio sample: EncodedSample) throws { audio.append(sample) }
        func discontinuity(_ change: StreamChange) throws { changes.append(change) }
        func finish(_ totals: StreamTotals) throws { finished.append(totals) }
    }

    /// A 10 fps stream of the synthetic pattern (with sound) from 5 s, and its frames.
    func tenFPSStream(_ id: String, feed: LiveFeed? = nil) throws -> (stream: LiveStream, frame: (Int64) -> VideoFrame) {
        let (profile, video, audio, log) = try profileAndEncoders(fps: 10)
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 10)
        let origin = Self.origin
        let frame = { (i: Int64) in pattern.frame(index: i, captureTime: origin + i * 100_000_000) }
        let start = StreamStart(id: id, dating: StreamDating(offsetMs: 1_796_229_753_000 - origin / 1_000_000))
        let encoder = LiveStream.encoder(firstFrame: frame(0), dating: start.dating, profile: profile, videos: [video], audio: audio)
        return (try LiveStream(start: start, origin: StreamOrigin(encoder: encoder), profile: profile, log: log, feed: feed) { _ in }, frame)
    }

    static let origin: Int64 = 5_000_000_000

    func testAnotherCompleteReaderGetsEverySampleTheSegmentsHold() throws {
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin = Self.origin
        // Another complete reader of the feed beside the packager, on a thread of its own.
        let feed = LiveFeed(log: .silent())
        let sink = CollectingSink()
        let reader = feed.join("collector", wants: .complete, capacity: 64, wake: {})
        let collector = WorkerThread(name: "collector") {
            while let items = reader.next() {
                for case .encoded(let item) in items {
                    switch item {
                    case .video(let sample): try? sink.append(video: sample)
                    case .audio(let sample): try? sink.append(audio: sample)
                    case .change(let change): try? sink.discontinuity(change)
                    case .end(let totals):
                        try? sink.finish(totals)
                        feed.finished(reader, failure: nil)
                    }
                }
            }
        }
        let (stream, frame) = try tenFPSStream("sinks", feed: feed)
        for i in Int64(0)..<100 {
            if i == 40 { stream.setRate(5) }  // the heat: a new domain from the next boundary
            try stream.encode(frame(i))
            try stream.encode(AudioChunk(samples: tone.samples(from: i * 4_800, count: 4_800), channels: 1, sampleRate: 48_000,
                                         captureTime: origin + i * 100_000_000))
        }
        try stream.finish()
        collector.join()

        XCTAssertEqual(sink.finished.count, 1)
        XCTAssertEqual(sink.finished.first?.framesEncoded, sink.video.count, "every encoded picture reached the sink")
        XCTAssertEqual(sink.changes.map(\.fps), [5])
        XCTAssertEqual(sink.changes.map(\.format), [true])
        XCTAssertTrue(sink.video.first?.isSync ?? false, "the first picture is an IDR")
        XCTAssertEqual(sink.video.map(\.dts), sink.video.map(\.dts).sorted(), "in decode order")
        XCTAssertFalse(sink.audio.isEmpty)

        // The same pictures, byte for byte, as the segments hold.
        let directory = stream.writer.directory
        let initSegment = try ParsedInit(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + StreamLayout.initSegment))))
        let videoTrack = try XCTUnwrap(initSegment.track("vide"))
        var stored: [[UInt8]] = []
        for sequence in 1...stream.writer.segmentCount {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + StreamLayout.segment(sequence))))
            let segment = try ParsedSegment(bytes: bytes, trex: initSegment.trex)
            for fragment in segment.fragments {
                for traf in fragment.trafs where traf.trackID == videoTrack.trackID {
                    stored += traf.samples.map { Array(bytes[$0.range]) }
                }
            }
        }
        XCTAssertEqual(stored.count, sink.video.count)
        XCTAssertTrue(stored == sink.video.map(\.data), "the sink's pictures are the segments' pictures")
    }

    /// A ladder's real-time readers (a destination may ask for a lower rung): each takes
    /// its rung's pictures with that encoder's parameter sets; while the heat leaves the
    /// top rung out, the top's reader takes the next one from its IDR, and the top again
    /// from the IDR where it is back. Rungs are numbered as configured: with the top rung
    /// left out by the cost check, the lower rung's reader still gets its own.
    func testRealTimeReadersTakeTheirRungAsConfigured() throws {
        var profile = smallLiveProfile(fps: 10)  // an IDR every 20 frames
        profile.lowerRungs = [Rung(width: 80, height: 48, bitrate: 100_000)]
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 10)
        // Real time: the feed's real-time readers take only pictures captured just now.
        let origin = KernelClock.monotonic()
        let frame = { (i: Int64) in pattern.frame(index: i, captureTime: origin + i * 100_000_000) }

        /// What the top rung's reader and rung 2's took, and each encoder's SPS.
        func run(_ profile: LiveProfile, frames: Int64, heat: [Int64: Int] = [:]) throws -> (top: [LivePicture], second: [LivePicture], sps: [[UInt8]]) {
            let feed = LiveFeed(log: .silent())
            defer { feed.stop() }
            let top = feed.join("viewer", wants: [.pictures], capacity: 1000, wake: {})
            let second = feed.join("destination.small", wants: [.pictures], rung: 1, capacity: 1000, wake: {})
            let videos = try profile.rungSettings.map { try VideoEncoder(kind: .x264, settings: $0) }
            let start = StreamStart(id: "ladder-\(profile.rungsLeftOut)", dating: StreamDating(offsetMs: 1_796_229_753_000 - origin / 1_000_000))
            let encoder = LiveStream.encoder(firstFrame: frame(0), dating: start.dating, profile: profile, videos: videos,
                                             audio: try AACEncoder(settings: AudioEncoderSettings()))
            let stream = try LiveStream(start: start, origin: StreamOrigin(encoder: encoder), profile: profile,
                                        log: Log(format: .logfmt, write: { _ in }), feed: feed) { _ in }
            for i in Int64(0)..<frames {
                if let dropped = heat[i] { stream.setDroppedRungs(dropped) }
                try stream.encode(frame(i))
            }
            try stream.finish()
            let taken = { (reader: LiveReader) in reader.take().items.compactMap { if case .picture(let p) = $0 { p } else { nil } } }
            return (taken(top), taken(second), videos.map(\.sps))
        }
        func index(_ picture: LivePicture) -> Int64 { (picture.captureTime - origin) / 100_000_000 }

        // Hot from the boundary at frame 20 to the one at 40.
        let ladder = try run(profile, frames: 60, heat: [5: 1, 25: 0])
        XCTAssertEqual(ladder.top.map(index), Array(0..<60), "one picture a frame for the top's reader")
        XCTAssertEqual(ladder.top.map(\.picture.rung), [Int](repeating: 0, count: 20) + [Int](repeating: 1, count: 20) + [Int](repeating: 0, count: 20),
                       "the next rung while the top is left out")
        for switched in [20, 40] { XCTAssertTrue(ladder.top[switched].isSync, "the rung changes at an IDR (frame \(switched))") }
        XCTAssertEqual(ladder.top.map(\.picture.sps), ladder.top.map { ladder.sps[$0.picture.rung] }, "each with its own encoder's SPS")
        XCTAssertEqual(ladder.second.map(index), Array(0..<60))
        XCTAssertEqual(Set(ladder.second.map(\.picture.rung)), [1], "the lower rung's reader keeps its rung throughout")
        XCTAssertEqual(ladder.second.first?.picture.sps, ladder.sps[1])

        // The cost check left the top rung out before the stream began: only 80x48 is
        // encoded, and it is still rung 2 as configured.
        let lowered = try run(profile.withoutTopRung(), frames: 10)
        XCTAssertEqual(lowered.sps.count, 1)
        XCTAssertEqual(lowered.second.map(index), Array(0..<10))
        XCTAssertEqual(Set(lowered.second.map(\.picture.rung)), [1])
        XCTAssertEqual(lowered.top.map(\.picture.rung), lowered.second.map(\.picture.rung), "the top's reader takes the highest encoded")
    }

    /// The packager writes on its own thread; a write that fails there fails the stream
    /// as it did on the encoders' thread: a later `encode`, or `finish`, throws it.
    func testAWriteThatFailsOnThePackagersThreadFailsTheStream() throws {
        let (stream, frame) = try tenFPSStream("fails")
        // A file where the stream's folder must go: the first segment cannot be stored.
        XCTAssertTrue(FileManager.default.createFile(atPath: stream.writer.directory, contents: Data("in the way".utf8)))
        var failure: Error?
        do {
            for i in Int64(0)..<100 { try stream.encode(frame(i)) }
            try stream.finish()
        } catch {
            failure = error
        }
        XCTAssertNotNil(failure, "the packager's failure reached the encoders' thread")
    }
}
