import Foundation
import XCTest
@testable import Streaming
import Devices
import HLS
import Layout
import Live
import Logging
import Media
import MP4
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
