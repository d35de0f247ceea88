import Foundation
import XCTest
@testable import Streaming
import Devices
import HLS
import Layout
import Media
import MP4

/// The live encoders' samples fan out to every sink of the stream: another consumer
/// (issue 31's real-time senders) sees exactly what the HLS packager cut into segments.
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

    func testASinkAddedToTheStreamGetsEverySampleTheSegmentsHold() throws {
        let (profile, video, audio, log) = try profileAndEncoders(fps: 10)
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 10)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        let origin: Int64 = 5_000_000_000
        func frame(_ i: Int64) -> VideoFrame { pattern.frame(index: i, captureTime: origin + i * 100_000_000) }
        let start = StreamStart(id: "sinks", dating: StreamDating(offsetMs: 1_796_229_753_000 - origin / 1_000_000))
        let encoder = LiveStream.encoder(firstFrame: frame(0), dating: start.dating, profile: profile, videos: [video], audio: audio)
        let stream = try LiveStream(start: start, origin: StreamOrigin(encoder: encoder), profile: profile, log: log) { _ in }
        let sink = CollectingSink()
        stream.add(sink)
        for i in Int64(0)..<100 {
            if i == 40 { stream.setRate(5) }  // the heat: a new domain from the next boundary
            try stream.encode(frame(i))
            try stream.encode(AudioChunk(samples: tone.samples(from: i * 4_800, count: 4_800), channels: 1, sampleRate: 48_000,
                                         captureTime: origin + i * 100_000_000))
        }
        try stream.finish()

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
}
