import Logging
import Media
import RTP
import Threading
import XCTest
@testable import Live

/// The live feed on its own: readers that join and leave while it publishes, each with its
/// own bounded ring, RTP payloads made once and only while wanted, Opus on its own thread
/// only while wanted.
final class LiveFeedTests: XCTestCase {
    static let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1F, 0xAC]
    static let pps: [UInt8] = [0x68, 0xEE, 0x3C, 0x80]

    /// A picture of one slice NAL of `size` bytes (length-prefixed).
    static func picture(_ index: Int, sync: Bool = false, size: Int = 8) -> RealTimePicture {
        let unit = [UInt8(sync ? 0x65 : 0x41)] + [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: size - 1)
        return RealTimePicture(accessUnit: [0, 0, UInt8(size >> 8), UInt8(size & 0xFF)] + unit, captureTime: Int64(index) * 33_333_333,
                               isSync: sync, sps: sps, pps: pps)
    }

    func feed() -> LiveFeed {
        let feed = LiveFeed(log: .silent())
        addTeardownBlock { feed.stop() }
        return feed
    }

    func pictures(_ taken: LiveReader.Taken) -> [LivePicture] {
        taken.items.compactMap { if case .picture(let picture) = $0 { picture } else { nil } }
    }

    func testWhatTheFeedIsNowIsKnownWithoutAReader() {
        let feed = feed()
        XCTAssertNil(feed.now.stream)
        feed.begin(RealTimeStream(id: "boot-1"))
        feed.publish(Self.picture(0))
        XCTAssertEqual(feed.now.stream?.id, "boot-1")
        XCTAssertEqual(feed.now.sps, [], "no IDR yet")
        feed.publish(Self.picture(1, sync: true))
        XCTAssertEqual(feed.now.sps, Self.sps)
        XCTAssertEqual(feed.now.pps, Self.pps)
        feed.publish(captured: AudioChunk(samples: [0, 0], channels: 2, sampleRate: 44_100, captureTime: 0))
        XCTAssertEqual(feed.now.microphone?.rate, 44_100)
        feed.end(stream: "boot-2")
        XCTAssertEqual(feed.now.stream?.id, "boot-1", "another stream's end ends nothing")
        feed.end(stream: "boot-1")
        XCTAssertNil(feed.now.stream)
    }

    func testAReaderGetsWhatIsPublishedAfterItJoinsUntilItLeaves() {
        let feed = feed()
        feed.begin(RealTimeStream(id: "boot-1"))
        feed.publish(Self.picture(0, sync: true))
        let wakes = Locked(0)
        let reader = feed.join("viewer", wants: [.pictures], capacity: 10) { wakes.withLock { $0 += 1 } }
        for index in 1...3 { feed.publish(Self.picture(index)) }
        let taken = reader.take()
        XCTAssertFalse(taken.overflowed)
        XCTAssertEqual(pictures(taken).map(\.captureTime), [1, 2, 3].map { Int64($0) * 33_333_333 }, "in order, none from before it joined")
        XCTAssertEqual(pictures(taken).map(\.payloads), [[], [], []], "no RTP payloads for a reader that does not want them")
        XCTAssertEqual(wakes.withLock { $0 }, 3)
        XCTAssertTrue(reader.take().items.isEmpty, "a take empties the ring")
        feed.leave(reader)
        feed.publish(Self.picture(4))
        XCTAssertTrue(reader.take().items.isEmpty)
        XCTAssertTrue(feed.readers.isEmpty)
    }

    /// A destination learns where each stream begins and ends in order with its pictures;
    /// a reader that does not ask for it gets none of it.
    func testAReaderOfStreamsSeesEachBeginAndEndInOrder() {
        let feed = feed()
        let destination = feed.join("destination", wants: [.streams, .pictures], capacity: 10) {}
        let viewer = feed.join("viewer", wants: [.pictures], capacity: 10) {}
        feed.begin(RealTimeStream(id: "boot-1"))
        feed.publish(Self.picture(0, sync: true))
        feed.end(stream: "boot-9")
        feed.end(stream: "boot-1")
        feed.end(stream: "boot-1")
        feed.begin(RealTimeStream(id: "boot-2"))
        let seen = destination.take().items.map { item -> String in
            switch item {
            case .began(let stream): return "began \(stream.id)"
            case .ended(let id): return "ended \(id)"
            case .picture: return "picture"
            default: return "other"
            }
        }
        XCTAssertEqual(seen, ["began boot-1", "picture", "ended boot-1", "began boot-2"], "another stream's end, and an end said twice, are not said")
        XCTAssertEqual(viewer.take().items.count, 1)
    }

    func testRTPPayloadsAreMadeOnceForEveryReaderThatWantsThem() throws {
        let feed = feed()
        feed.begin(RealTimeStream(id: "boot-1", audio: .init(config: [0x11, 0x90], sampleRate: 48_000, channels: 2)))
        let first = feed.join("webrtc", wants: [.pictures, .rtp], capacity: 10) {}
        let second = feed.join("rtsp", wants: [.pictures, .aac, .rtp], capacity: 10) {}
        feed.publish(Self.picture(1, sync: true, size: 3000))
        feed.publish(RealTimeSound(accessUnit: [0x21, 0x10, 0x05], captureTime: 1_000_000_000))
        let a = first.take(), b = second.take()
        XCTAssertEqual(a.items.count, 1, "no AAC for a reader that does not want it")
        XCTAssertEqual(b.items.count, 2)
        let (pa, pb) = (try XCTUnwrap(pictures(a).first), try XCTUnwrap(pictures(b).first))
        // STAP-A of SPS + PPS, then FU-A fragments of the 3000-byte slice (RFC 6184 §5.7.1, §5.8).
        XCTAssertEqual(pa.payloads.first?.first.map { $0 & 0x1F }, 24)
        XCTAssertGreaterThanOrEqual(pa.payloads.count, 4)
        XCTAssertTrue(pa.payloads.allSatisfy { $0.count <= LiveFeed.maximumPayload })
        XCTAssertEqual(pa.payloads, pb.payloads)
        // The same storage: made once, not copied per reader.
        pa.payloads[1].withUnsafeBufferPointer { x in
            pb.payloads[1].withUnsafeBufferPointer { y in XCTAssertEqual(x.baseAddress, y.baseAddress) }
        }
        XCTAssertEqual(pa.rtpTimestamp, RTPClock.video(33_333_333))
        guard case .sound(let sound) = b.items[1] else { return XCTFail("the AAC second, as published") }
        // RFC 3640 §3.3.6: AU-headers-length 16 bits, one 13+3-bit header, then the frame.
        XCTAssertEqual(sound.payloads, [[0x00, 0x10, 0x00, 0x18, 0x21, 0x10, 0x05]])
        XCTAssertEqual(sound.rtpTimestamp, 48_000)
    }

    /// A ladder's rungs: each reader takes its own rung's pictures; while the heat leaves its
    /// rung out it takes the highest encoded, from that one's IDR, and its own again when
    /// the rung is back. RTP payloads are made only for the rung an RTP reader takes, and
    /// `now` follows the highest rung encoded.
    func testEachReaderTakesItsRungAndTheHighestEncodedWhileItsOwnIsLeftOut() {
        let feed = feed()
        feed.begin(RealTimeStream(id: "boot-1"))
        let top = feed.join("viewer", wants: [.pictures, .rtp], capacity: 100, wake: {})
        let second = feed.join("destination.twitch", wants: [.pictures], rung: 1, capacity: 100, wake: {})
        let third = feed.join("destination.small", wants: [.pictures], rung: 2, capacity: 100, wake: {})
        let smallSPS: [UInt8] = [0x67, 0x42, 0xC0, 0x1E]
        func publish(_ index: Int, sync: Bool, topRung: Int) {
            for rung in topRung...2 {
                var picture = Self.picture(index, sync: sync)
                (picture.rung, picture.topRung) = (rung, topRung)
                if rung > 0 { picture.sps = smallSPS }
                feed.publish(picture)
            }
        }
        publish(0, sync: true, topRung: 0)
        publish(1, sync: false, topRung: 0)
        XCTAssertEqual(feed.now.sps, Self.sps, "the top rung's parameter sets")
        publish(2, sync: true, topRung: 1)  // hot: the top rung is left out from this IDR
        publish(3, sync: false, topRung: 1)
        XCTAssertEqual(feed.now.sps, smallSPS, "the highest rung encoded is the stream now")
        publish(4, sync: true, topRung: 0)  // cool again

        func seen(_ reader: LiveReader) -> [(index: Int64, rung: Int)] {
            pictures(reader.take()).map { ($0.captureTime / 33_333_333, $0.picture.rung) }
        }
        let viewer = pictures(top.take())
        XCTAssertEqual(viewer.map(\.picture.rung), [0, 0, 1, 1, 0], "the top reader takes the highest encoded rung")
        XCTAssertEqual(viewer.map { $0.captureTime / 33_333_333 }, [0, 1, 2, 3, 4], "one picture a frame")
        XCTAssertTrue(viewer.allSatisfy { !$0.payloads.isEmpty }, "RTP payloads for the rung its reader takes")
        XCTAssertEqual(seen(second).map(\.rung), [1, 1, 1, 1, 1], "its own rung throughout")
        XCTAssertEqual(seen(third).map(\.rung), [2, 2, 2, 2, 2])
        XCTAssertEqual(seen(third).count, 0, "taken")

        // A rung not encoded at all (the cost check left out the top two): the lowest there is.
        publish(5, sync: true, topRung: 2)
        XCTAssertEqual(pictures(top.take()).map(\.picture.rung), [2])
        XCTAssertEqual(seen(second).map(\.rung), [2])
        XCTAssertEqual(seen(third).map(\.rung), [2])
    }

    func testAReaderThatFallsAWholeRingBehindLosesItsQueueAndNoOneElseDoes() {
        let feed = feed()
        feed.begin(RealTimeStream(id: "boot-1"))
        let slow = feed.join("slow", wants: [.pictures], capacity: 3) {}
        let fast = feed.join("fast", wants: [.pictures], capacity: 100) {}
        for index in 1...5 { feed.publish(Self.picture(index)) }
        let taken = slow.take()
        XCTAssertTrue(taken.overflowed, "it must begin again at an IDR")
        XCTAssertEqual(pictures(taken).map(\.captureTime), [4, 5].map { Int64($0) * 33_333_333 })
        XCTAssertEqual(slow.discarded, 3)
        XCTAssertFalse(slow.take().overflowed, "said once")
        XCTAssertEqual(pictures(fast.take()).count, 5)
        XCTAssertEqual(fast.discarded, 0)
        XCTAssertEqual(Set(feed.readers.map(\.name)), ["slow", "fast"])
    }

    func testAskingForAPictureReachesTheStreamsEncoderAndNothingBetweenStreams() {
        let feed = feed()
        let asked = Locked(0)
        feed.askForPicture()
        feed.begin(RealTimeStream(id: "boot-1", askForPicture: { asked.withLock { $0 += 1 } }))
        feed.askForPicture()
        feed.end(stream: "boot-1")
        feed.askForPicture()
        XCTAssertEqual(asked.withLock { $0 }, 1)
    }

    /// 20 ms of a 440 Hz tone, 48 kHz stereo, captured at `index` × 20 ms.
    static func chunk(_ index: Int) -> AudioChunk {
        let samples = (0..<960).flatMap { n -> [Int16] in
            let value = Int16(8000 * sin(2 * Double.pi * 440 * Double(index * 960 + n) / 48_000))
            return [value, value]
        }
        return AudioChunk(samples: samples, channels: 2, sampleRate: 48_000, captureTime: Int64(index) * 20_000_000)
    }

    func testOpusIsEncodedOnItsOwnThreadOnlyWhileAReaderWantsIt() throws {
        let feed = feed()
        feed.begin(RealTimeStream(id: "boot-1"))
        let plain = feed.join("plain", wants: [.pictures], capacity: 100) {}
        for index in 0..<5 { feed.publish(captured: Self.chunk(index)) }
        XCTAssertFalse(feed.opusStarted, "no thread while nobody wants Opus")
        let arrived = Condition(0)
        let viewer = feed.join("webrtc", wants: [.pictures, .opus], capacity: 100) { arrived.withLock { $0 += 1 }; arrived.broadcast() }
        let publisher = Thread.current
        for index in 5..<15 { feed.publish(captured: Self.chunk(index)) }
        let count = arrived.withLock(until: monotonicNanoseconds() + 10_000_000_000) { $0 >= 10 ? $0 : nil }
        XCTAssertEqual(count, 10, "one packet per 20 ms chunk")
        let packets = viewer.take().items.compactMap { if case .opus(let packet) = $0 { packet } else { nil } }
        XCTAssertEqual(packets.count, 10)
        XCTAssertTrue(packets.allSatisfy { !$0.payload.isEmpty })
        // 20 ms apart on the 48 kHz clock, from the capture time less the look-ahead.
        XCTAssertEqual(zip(packets, packets.dropFirst()).map { $1.rtpTimestamp &- $0.rtpTimestamp }, Array(repeating: 960, count: 9))
        XCTAssertTrue(plain.take().items.isEmpty, "a reader that does not want Opus gets none")
        XCTAssertTrue(publisher === Thread.current)
        feed.leave(viewer)
        for index in 15..<20 { feed.publish(captured: Self.chunk(index)) }
        XCTAssertEqual(feed.opusQueued, 0, "nothing handed to the Opus thread once no reader wants it")
    }
}
