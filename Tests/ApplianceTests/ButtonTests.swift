import Foundation
import XCTest
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs
import Logging
import Threading
import TestSupport

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

    /// A press less than `min_interval_ms` after the last one that acted is ignored, and
    /// its release with it; the next one after the interval acts; a long press still counts
    /// from the press that acted.
    func testTogglePressesTooCloseTogetherAreOneAndHoldKeepsItsRepress() {
        var logic = ButtonLogic(mode: .toggle, minimumHoldMs: 1000, longPressSeconds: 3, minimumIntervalMs: 500)
        XCTAssertEqual(logic.press(at: 0), [.toggle])
        XCTAssertEqual(logic.release(at: 100 * ms), [])
        XCTAssertEqual(logic.press(at: 300 * ms), [], "a double tap: ignored")
        XCTAssertTrue(logic.ignoring)
        XCTAssertNil(logic.nextDeadline, "an ignored press is no long press")
        XCTAssertEqual(logic.tick(at: 5000 * ms), [])
        XCTAssertEqual(logic.release(at: 5100 * ms), [], "its release too")
        XCTAssertFalse(logic.ignoring)
        XCTAssertEqual(logic.press(at: 5200 * ms), [.toggle], "past the interval since the press that acted")
        XCTAssertEqual(logic.release(at: 5300 * ms), [])
        XCTAssertEqual(logic.press(at: 5699 * ms), [])
        XCTAssertEqual(logic.release(at: 5750 * ms), [])
        XCTAssertEqual(logic.press(at: 5700 * ms + 500 * ms), [.toggle])
        var hold = ButtonLogic(mode: .hold, minimumHoldMs: 1000, longPressSeconds: 3, minimumIntervalMs: 500)
        XCTAssertEqual(hold.press(at: 0), [.start])
        XCTAssertEqual(hold.release(at: 100 * ms), [])
        XCTAssertEqual(hold.press(at: 200 * ms), [], "hold: pressed again inside the minimum keeps recording, as before")
        XCTAssertEqual(hold.release(at: 3000 * ms), [.stop])
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
        // With destinations: on air only while one takes the stream.
        XCTAssertEqual(TallyPattern.of(state: .recording, publish: nil, failed: false, destinationsLive: true), .on)
        XCTAssertEqual(TallyPattern.of(state: .recording, publish: nil, failed: false, destinationsLive: false), .fastBlink)
        XCTAssertEqual(TallyPattern.of(state: .armed, publish: nil, failed: false, destinationsLive: false), .off, "nothing to take while armed")
        XCTAssertEqual((0..<8).map { TallyPattern.slowBlink.lit(at: Int64($0) * 250) }, [true, true, false, false, true, true, false, false])
        XCTAssertEqual((0..<4).map { TallyPattern.fastBlink.lit(at: Int64($0) * 125) }, [true, false, true, false])
    }
}

/// The button controller and the thermal watch on the control scheduler, on virtual time.
final class ControlLoopTests: XCTestCase {
    final class Actions: @unchecked Sendable {  // touched by the test's thread only (runDue runs tasks there)
        var list: [ButtonLogic.Action] = []
    }

    func testAHeldButtonIsALongPressOnceTheSchedulerReachesItsDeadline() {
        let clock = ManualClock()
        let scheduler = Scheduler(clock: clock)
        let actions = Actions()
        var settings = ButtonSettings()
        settings.longPressSeconds = 3
        let buttons = ButtonController(settings: settings, scheduler: scheduler, log: .silent()) { actions.list.append($0) }
        buttons.edge(ButtonEdge(pressed: true, time: clock.now()), source: "test")
        XCTAssertEqual(actions.list, [.toggle], "toggle mode: the press itself")
        clock.advance(by: 2_900_000_000)
        scheduler.runDue()
        XCTAssertEqual(actions.list, [.toggle], "not held for 3 s yet")
        clock.advance(by: 100_000_000)
        scheduler.runDue()
        XCTAssertEqual(actions.list, [.toggle, .longPress], "the deadline the press set, not the idle half second")
        buttons.stop()
        XCTAssertEqual(scheduler.pending, [])
    }

    func testTheThermalWatchStepsDownAfterTheDwellOnTheSchedulersClock() throws {
        let clock = ManualClock()
        let scheduler = Scheduler(clock: clock)
        let sensor = FileManager.default.temporaryDirectory.appendingPathComponent("onair-temp-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: sensor) }
        try "91000\n".write(toFile: sensor, atomically: true, encoding: .utf8)
        var settings = ThermalSettings()
        settings.sensor = .named(sensor)
        settings.dwellSeconds = 2
        let rates = Rates()
        let watch = ThermalWatch(settings: settings, fps: 30, scheduler: scheduler, log: .silent(), dropped: { 0 },
                                 temperature: { _ in }, setRate: { rates.add($0) })
        for _ in 0..<2 {
            clock.advance(by: 1_000_000_000)
            scheduler.runDue()
        }
        XCTAssertEqual(rates.list, [], "hot since the first reading, a second ago")
        clock.advance(by: 1_000_000_000)
        scheduler.runDue()
        XCTAssertEqual(rates.list, [24], "hot for the 2 s dwell: one step down the ladder")
        XCTAssertEqual(watch.temperature, 91)
        watch.stop()
        XCTAssertEqual(scheduler.pending, [])
    }

    final class Rates: @unchecked Sendable {  // touched by the test's thread only
        var list: [Int] = []
        func add(_ fps: Int) { list.append(fps) }
    }
}
