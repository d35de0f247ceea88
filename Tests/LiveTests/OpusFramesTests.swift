import Codecs
import Logging
import Media
import RTP
import XCTest
@testable import Live

/// The feed's Opus: 20 ms Opus frames on the capture clock, from any chunking the
/// microphone gives, started again after a gap.
final class OpusFramesTests: XCTestCase {
    func chunk(_ frames: Int, at time: Int64, rate: Int = 48_000) -> AudioChunk {
        AudioChunk(samples: (0..<frames).map { Int16(truncatingIfNeeded: $0 * 37 % 2000) }, channels: 1, sampleRate: rate, captureTime: time)
    }

    func testFramesAre20MillisecondsOnTheCaptureClock() throws {
        var state = OpusFrames(bitrate: 64_000)
        let lookahead = Int64(try OpusEncoder(sampleRate: 48_000, channels: 1, bitrate: 64_000).lookahead) * 1_000_000_000 / 48_000
        let start: Int64 = 5_000_000_000
        // 10 ms chunks (the synthetic microphone's): a frame every second chunk.
        var packets: [OpusPacket] = []
        for n in 0..<10 { packets += state.encode(chunk(480, at: start + Int64(n) * 10_000_000), log: .silent()) }
        XCTAssertEqual(packets.count, 5)
        XCTAssertTrue(packets.allSatisfy { !$0.payload.isEmpty && $0.payload.count < 400 })
        // 960 ticks of the 48 kHz clock apart, the first at the capture time less the look-ahead.
        XCTAssertEqual(packets.map { $0.rtpTimestamp &- packets[0].rtpTimestamp }, [0, 960, 1920, 2880, 3840])
        XCTAssertEqual(packets[0].rtpTimestamp, RTPClock.timestamp(start - lookahead, rate: 48_000))
        // A chunk a second later (the microphone was away): frames start at its own time.
        let later = state.encode(chunk(960, at: start + 2_000_000_000), log: .silent())
        XCTAssertEqual(later.map(\.rtpTimestamp), [RTPClock.timestamp(start + 2_000_000_000 - lookahead, rate: 48_000)])
    }

    /// 16 kHz is encoded as it is; RTP's clock stays 48 kHz (RFC 7587 §4.1).
    func testOtherRatesOpusTakesKeepThe48kHzClock() {
        var state = OpusFrames(bitrate: 32_000)
        let packets = state.encode(chunk(640, at: 0, rate: 16_000), log: .silent())
        XCTAssertEqual(packets.count, 2)
        XCTAssertEqual(packets[1].rtpTimestamp &- packets[0].rtpTimestamp, 960)
        // 44.1 kHz is not a rate Opus takes: nothing, and one warning.
        XCTAssertEqual(state.encode(chunk(882, at: 0, rate: 44_100), log: .silent()).count, 0)
    }
}
