import Foundation
import XCTest
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs
import Media

/// The record button's meaning, on a made-up clock.
final class ButtonLogicTests: XCTestCase {
    let ms: Int64 = 1_000_000

    func testTogglePressActsAtOnceAndALongPressFiresOnce() {
        var logic = ButtonLogic(mode: .toggle, minimumHoldMs: 1000, longPressSeconds: 3)
        XCTAssertEqual(logic.press(at: 0), [.toggle], "at the press, not the release")
        XCTAssertEqual(logic.press(at: 10 * ms), [], "a second down without an up is noise")
        XCTAssertEqual(logic.tick(at: 2999 * ms), [])
        XCTAssertEqual(logic.nextDeadline, 3000 * ms)
        XCTAssertEqual(logic.tick(at: 3000 * ms), [.longPress])
        XCTAssertEqual(logic.tick(at: 9000 * ms), [], "once per press")
        XCTAssertEqual(logic.release(at: 9500 * ms), [])
        XCTAssertEqual(logic.press(at: 10_000 * ms), [.toggle])
        XCTAssertEqual(logic.release(at: 10_200 * ms), [])
        XCTAssertEqual(logic.tick(at: 20_000 * ms), [], "a short press is no long press")
    }

    func testHoldRecordsWhileHeldAndATapStillRecordsTheMinimum() {
        var logic = ButtonLogic(mode: .hold, minimumHoldMs: 1000, longPressSeconds: 3)
        XCTAssertEqual(logic.press(at: 0), [.start])
        XCTAssertEqual(logic.tick(at: 5000 * ms), [], "no long press while holding to record")
        XCTAssertEqual(logic.release(at: 6000 * ms), [.stop])
        XCTAssertEqual(logic.press(at: 10_000 * ms), [.start])
        XCTAssertEqual(logic.release(at: 10_100 * ms), [], "a tap: the stop waits for the minimum")
        XCTAssertEqual(logic.nextDeadline, 11_000 * ms)
        XCTAssertEqual(logic.tick(at: 10_999 * ms), [])
        XCTAssertEqual(logic.tick(at: 11_000 * ms), [.stop])
        XCTAssertEqual(logic.press(at: 20_000 * ms), [.start])
        XCTAssertEqual(logic.release(at: 20_100 * ms), [])
        XCTAssertEqual(logic.press(at: 20_500 * ms), [], "pressed again inside the minimum: still recording")
        XCTAssertEqual(logic.tick(at: 21_000 * ms), [])
        XCTAssertEqual(logic.release(at: 23_000 * ms), [.stop])
    }
}

final class TallyPatternTests: XCTestCase {
    func status(pending: Int, oldest: Double?) -> Publisher.Status {
        .init(destination: "d", pendingSegments: pending, pendingBytes: 0, oldestPendingSeconds: oldest, streamsPublishing: 0,
              attempts: 0, failures: 0, bytes: 0, lastError: nil)
    }

    func testWhatTheLightSays() {
        XCTAssertEqual(TallyPattern.of(state: .armed, publish: nil, failed: false), .off)
        XCTAssertEqual(TallyPattern.of(state: .recording, publish: status(pending: 2, oldest: 3), failed: false), .on)
        XCTAssertEqual(TallyPattern.of(state: .armed, publish: status(pending: 2, oldest: 3), failed: false), .slowBlink,
                       "armed, still uploading a backlog")
        XCTAssertEqual(TallyPattern.of(state: .recording, publish: status(pending: 9, oldest: 45), failed: false), .fastBlink,
                       "nothing confirmed for 45 s needs attention")
        XCTAssertEqual(TallyPattern.of(state: .stopped, publish: nil, failed: true), .fastBlink)
        XCTAssertEqual((0..<8).map { TallyPattern.slowBlink.lit(at: Int64($0) * 250) }, [true, true, false, false, true, true, false, false])
        XCTAssertEqual((0..<4).map { TallyPattern.fastBlink.lit(at: Int64($0) * 125) }, [true, false, true, false])
    }
}
