import Synchronization
import XCTest
@testable import Threading

/// The control loops' scheduler on a clock the test moves: nothing waits in real time.
final class SchedulerTests: XCTestCase {
    final class Hands: MediaClock, @unchecked Sendable {  // `now` only on the test's thread
        var time: Int64 = 1_000_000_000
        func now() -> Int64 { time }
        func sleep(until deadline: Int64) { time = max(time, deadline) }
    }
    let s: Int64 = 1_000_000_000

    func testPeriodicTasksRunOnTheirGridAndInDeadlineOrder() {
        let clock = Hands()
        let scheduler = Scheduler(clock: clock)
        var ran: [String] = []
        scheduler.every(1, "thermal") { _ in ran.append("thermal") }
        scheduler.every(0.25, "tally") { _ in ran.append("tally") }
        XCTAssertEqual(scheduler.runDue(), 0, "nothing is due before its first period")
        clock.time += s / 4
        XCTAssertEqual(scheduler.runDue(), 1)
        clock.time += s * 3 / 4
        XCTAssertEqual(scheduler.runDue(), 2, "a late run runs each task once, not once per missed period")
        XCTAssertEqual(ran, ["tally", "tally", "thermal"])
        clock.time += s / 4
        scheduler.runDue()
        XCTAssertEqual(ran.last, "tally", "the tally's grid is kept: due again a quarter second after its last run")
        XCTAssertEqual(scheduler.pending, ["tally", "thermal"])
    }

    func testATaskSaysWhenNextOrThatItIsDoneAndCanBeMovedOrCancelled() {
        let clock = Hands()
        let scheduler = Scheduler(clock: clock)
        var times: [Int64] = []
        let second = s
        let button = scheduler.schedule("button", at: clock.time + 5 * s) { now in
            times.append(now)
            return times.count < 2 ? now + second : nil
        }
        scheduler.reschedule(button, at: clock.time + s)  // a press: its hold deadline is sooner
        clock.time += s
        scheduler.runDue()
        clock.time += s
        scheduler.runDue()
        XCTAssertEqual(times, [2 * s, 3 * s])
        XCTAssertEqual(scheduler.pending, [], "it returned nil: done")
        let report = scheduler.every(1, "report") { _ in XCTFail("cancelled") }
        scheduler.cancel(report)
        clock.time += 10 * s
        XCTAssertEqual(scheduler.runDue(), 0)
    }

    /// On its own thread and the real clock: a task due now runs, and none after stop().
    func testTheThreadRunsWhatIsDueAndNothingAfterStop() {
        let scheduler = Scheduler()
        let ran = Completion()
        let count = Mutex(0)
        scheduler.schedule("once", at: scheduler.clock.now()) { _ in ran.signal(); return nil }
        scheduler.every(0.001, "often") { _ in count.withLock { $0 += 1 } }
        scheduler.start()
        XCTAssertTrue(ran.wait(seconds: 30))
        scheduler.stop()  // joins the thread: nothing can run once it returns
        let after = count.withLock { $0 }
        XCTAssertEqual(scheduler.runDue(), 0, "and nothing is left to run")
        XCTAssertEqual(count.withLock { $0 }, after)
        XCTAssertEqual(scheduler.pending, [])
    }
}
