import Foundation
import XCTest
@testable import Streaming
import Devices
import Publishing
import HLS
import Media

/// FRAME-RATE follows the thermal ladder (RFC 8216bis §4.4.6.2: the variant's maximum).
extension LiveStreamTimingTests {
    /// What the qemu board showed under load: the ladder had stepped down to 6 fps before
    /// a stream started, and index.m3u8 still declared the configured 10 fps (the checker's
    /// V2). A stream that starts stepped down declares the rate it runs at, and index.m3u8
    /// is raised before the playlist lists the first segment at a higher rate. (At 5 fps
    /// the frame at 5.9 s rounds to the 6.0 s boundary; at 10 fps it once took the slot
    /// before it, and the first segment at the new rate began without an IDR.)
    func testFrameRateIsTheRateTheStreamRunsAtAndRisesBeforeTheFasterSegments() throws {
        let (profile, video, _, log) = try profileAndEncoders(fps: 10)
        let pattern = SyntheticPattern(width: 160, height: 96, fps: 10)
        let origin: Int64 = 5_000_000_000
        func frame(_ i: Int64) -> VideoFrame { pattern.frame(index: i, captureTime: origin + i * 100_000_000) }
        let start = StreamStart(id: "rate", dating: StreamDating(offsetMs: 1_796_229_753_000 - origin / 1_000_000))
        let encoder = LiveStream.encoder(firstFrame: frame(0), dating: start.dating, profile: profile,
                                         videos: [video], audio: nil)
        encoder.setRate(5)  // the ladder's rate when the stream begins
        var directory = ""
        var declaredWhenListed: [Int: String] = [:]
        func frameRate() -> String {
            let index = (try? String(contentsOfFile: directory + "/index.m3u8", encoding: .utf8)) ?? ""
            return index.components(separatedBy: "FRAME-RATE=").dropFirst().first.map { String($0.prefix { $0 != "\n" && $0 != "," }) } ?? "none"
        }
        let stream = try LiveStream(start: start, origin: StreamOrigin(encoder: encoder), profile: profile, log: log) { event in
            if case .segmentStored(_, let sequence, _, _) = event { declaredWhenListed[sequence] = frameRate() }
        }
        directory = stream.writer.staging  // where it is made until its first segment
        XCTAssertEqual(frameRate(), "5.000", "a stream that starts stepped down says so from the first index.m3u8")
        directory = stream.writer.directory
        for i in Int64(0)..<40 { try stream.encode(frame(i)) }
        stream.setRate(10)  // cooled down: the next segment runs at 10 fps
        for i in Int64(40)..<100 { try stream.encode(frame(i)) }
        try stream.finish()

        XCTAssertEqual(frameRate(), "10.000")
        let playlist = try String(contentsOfFile: directory + "/playlist.m3u8", encoding: .utf8)
        let beforeStep = playlist.components(separatedBy: "#EXT-X-DISCONTINUITY")[0]
        let slowSegments = beforeStep.components(separatedBy: "#EXTINF").count - 1
        XCTAssertGreaterThan(slowSegments, 0)
        XCTAssertEqual(declaredWhenListed[1], "5.000")
        XCTAssertEqual(declaredWhenListed[slowSegments + 1], "10.000", "raised before the first 10 fps segment was listed")
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
    }
}
