import Foundation
import XCTest
import Logging
import TestSupport
@testable import Streaming
import Devices
import Publishing
import HLS
import Codecs
import Media
import Threading

/// The start-up buffer between the camera and the session.
final class StartupGateTests: XCTestCase {
    final class Presented: PreviewSink, Sendable {
        private let presented = Locked<[Int64]>([])
        var frames: [Int64] { presented.withLock { $0 } }
        func present(_ frame: VideoFrame) { presented.withLock { $0.append(frame.index) } }
        func waitForFirstFrame() {}
        var firstFrameMilliseconds: Double? { nil }
    }

    /// The first presented frame's time is the log's, taken when it is presented: no
    /// listening to log lines for it.
    func testTheHeadlessPreviewNotesWhenItsFirstFrameWasPresented() {
        let events = EventNames()
        let preview = FirstFramePreview(log: events.log)
        XCTAssertNil(preview.firstFrameMilliseconds)
        preview.present(Self.frame(0))
        let first = preview.firstFrameMilliseconds
        XCTAssertNotNil(first)
        preview.present(Self.frame(1))
        XCTAssertEqual(preview.firstFrameMilliseconds, first, "the first frame only")
        preview.waitForFirstFrame()
        XCTAssertEqual(events.names.filter { $0 == "preview.first_frame" }.count, 1)
    }

    static func frame(_ index: Int64) -> VideoFrame {
        VideoFrame(width: 2, height: 2, planes: [UInt8](repeating: 0, count: 6), captureTime: index, index: index)
    }

    /// With --pace fast a full gate makes the source wait; if the pipeline never comes up,
    /// closing the gate lets it go (a run that fails to start must still exit).
    func testClosingLetsAWaitingProducerGo() {
        let gate = StartupGate(capacity: 1, blocking: true, preview: Presented(), log: Log(format: .logfmt, write: { _ in }))
        gate.capture(Self.frame(0))
        let released = Completion()
        let producer = WorkerThread(name: "test-producer") {
            gate.capture(Self.frame(1))  // waits for room
            released.signal()
        }
        XCTAssertFalse(released.wait(seconds: 0.3), "the producer waits while the gate is full")
        gate.close()
        XCTAssertTrue(released.wait(seconds: 10))
        producer.join()
    }

    func testHeldFramesComeFirstMarkedThenFramesPassStraightThrough() {
        let preview = Presented()
        let gate = StartupGate(capacity: 3, blocking: false, preview: preview, log: Log(format: .logfmt, write: { _ in }))
        for i: Int64 in 0..<6 {
            gate.capture(Self.frame(i))
            gate.capture(AudioChunk(samples: [0], channels: 1, sampleRate: 48_000, captureTime: i))
        }
        XCTAssertEqual(preview.frames, [0, 1, 2, 3, 4, 5], "every frame is presented at once")
        XCTAssertEqual(gate.droppedWhileHeld, 3, "the oldest go when the buffer is full")
        let queue = MediaQueue(videoCapacity: 1, audioCapacity: 1, policy: .dropOldest)
        gate.open(into: queue)
        var seen: [String] = []
        // The queue holds one item of each kind; held items wait for room instead of
        // evicting each other.
        while seen.count < 6, let item = queue.pop() {
            switch item {
            case .video(let f): seen.append("v\(f.index)")
            case .audio(let c): seen.append("a\(c.captureTime)")
            default: break
            }
        }
        gate.join()
        XCTAssertEqual(seen, ["v3", "a3", "v4", "a4", "v5", "a5"])
        XCTAssertEqual(queue.dropped.video + queue.dropped.audio, 0, "held items wait for room")
        // After the hand-over frames pass straight on, as any other: a full queue drops the
        // older one.
        gate.capture(Self.frame(6))
        gate.capture(Self.frame(7))
        XCTAssertEqual(queue.dropped.video, 1)
        if case .video(let f)? = queue.pop() { XCTAssertEqual(f.index, 7) } else { XCTFail("frame 7 passes through") }
    }
}
