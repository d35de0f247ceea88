import Foundation
import XCTest
@testable import Streaming
import Devices
import Publishing
import HLS
import Codecs
import Media
import Threading

final class MediaQueueTests: XCTestCase {
    static func frame(_ index: Int64) -> VideoFrame {
        VideoFrame(width: 2, height: 2, planes: [UInt8](repeating: 0, count: 6), captureTime: index, index: index)
    }
    static func chunk(_ time: Int64) -> AudioChunk {
        AudioChunk(samples: [0], channels: 1, sampleRate: 48_000, captureTime: time)
    }
    func drain(_ queue: MediaQueue) -> [String] {
        queue.close()
        var out: [String] = []
        while let item = queue.pop() {
            switch item {
            case .video(let f): out.append("v\(f.index)")
            case .audio(let c): out.append("a\(c.captureTime)")
            case .begin(let start): out.append("begin:\(start.id)")
            case .finish: out.append("finish")
            case .rate(let fps): out.append("rate:\(fps)")
            case .droppedRungs(let dropped): out.append("rungs:\(dropped)")
            }
        }
        return out
    }

    /// A stream's start and end are never dropped, however full the queue is.
    func testControlItemsAreNeverDroppedOrCounted() {
        let queue = MediaQueue(videoCapacity: 1, audioCapacity: 1, policy: .dropOldest)
        queue.push(.begin(StreamStart(id: "s", dating: StreamDating(offsetMs: 0))))
        queue.capture(Self.frame(0)); queue.capture(Self.chunk(0))
        queue.capture(Self.frame(1)); queue.capture(Self.chunk(1))
        queue.push(.finish)
        XCTAssertEqual(drain(queue), ["begin:s", "v1", "a1", "finish"])
        XCTAssertEqual(queue.dropped.video, 1)
        XCTAssertEqual(queue.dropped.audio, 1)
    }

    func testRealTimeDropsTheOldestOfTheSameKindOnly() {
        let queue = MediaQueue(videoCapacity: 2, audioCapacity: 3, policy: .dropOldest)
        queue.capture(Self.frame(0)); queue.capture(Self.chunk(0)); queue.capture(Self.frame(1)); queue.capture(Self.chunk(1))
        queue.capture(Self.frame(2))   // video full: frame 0 goes, audio untouched
        queue.capture(Self.chunk(2)); queue.capture(Self.chunk(3))   // audio full: chunk 0 goes
        XCTAssertEqual(queue.dropped.video, 1)
        XCTAssertEqual(queue.dropped.audio, 1)
        XCTAssertEqual(drain(queue), ["v1", "a1", "v2", "a2", "a3"])
    }

    func testFastPaceMakesTheProducerWait() {
        let queue = MediaQueue(videoCapacity: 1, audioCapacity: 1, policy: .block)
        queue.capture(Self.frame(0))
        let pushed = Completion()
        let producer = WorkerThread(name: "test-producer") { queue.capture(MediaQueueTests.frame(1)); pushed.signal() }
        defer { producer.join() }
        XCTAssertFalse(pushed.wait(seconds: 0.2), "the second frame waits for room")
        guard case .video(let first)? = queue.pop() else { return XCTFail("expected a frame") }
        XCTAssertEqual(first.index, 0)
        XCTAssertTrue(pushed.wait(seconds: 10))
        XCTAssertEqual(drain(queue), ["v1"])
        XCTAssertEqual(queue.dropped.video, 0)
    }

    func testCloseWakesAWaitingProducerAndIgnoresLaterPushes() {
        let queue = MediaQueue(videoCapacity: 1, audioCapacity: 1, policy: .block)
        queue.capture(Self.frame(0))
        let returned = Completion()
        let producer = WorkerThread(name: "test-producer") { queue.capture(MediaQueueTests.frame(1)); returned.signal() }
        defer { producer.join() }
        queue.close()
        XCTAssertTrue(returned.wait(seconds: 10))
        queue.capture(Self.frame(2))
        XCTAssertEqual(drain(queue), ["v0"])
    }

    /// Whether an item was pushed held comes out with it, so the session passes the
    /// start-up backlog on held and the outputs' queues wait rather than drop it.
    func testAHeldItemComesOutHeld() {
        let queue = MediaQueue(videoCapacity: 2, audioCapacity: 2, policy: .dropOldest)
        queue.push(.video(Self.frame(0)), held: true)
        queue.capture(Self.frame(1))
        XCTAssertEqual(queue.popHeld()?.held, true)
        XCTAssertEqual(queue.popHeld()?.held, false)
    }

}
