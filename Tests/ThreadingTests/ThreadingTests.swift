import XCTest
import Glibc
@testable import Threading

final class ThreadingTests: XCTestCase {
    /// Four threads adding to one counter under the lock lose no update.
    func testLockSerialisesUpdates() {
        let lock = Lock()
        nonisolated(unsafe) var count = 0
        let threads = (0..<4).map { n in
            WorkerThread(name: "test-add-\(n)") { for _ in 0..<10_000 { lock.withLock { count += 1 } } }
        }
        for thread in threads { thread.join() }
        XCTAssertEqual(lock.withLock { count }, 40_000)
    }

    /// A typed error thrown inside passes through withLock unchanged.
    func testLockRethrows() {
        struct Failure: Error, Equatable {}
        XCTAssertThrowsError(try Lock().withLock { () throws(Failure) in throw Failure() }) { XCTAssertEqual($0 as? Failure, Failure()) }
    }

    /// A timed wait ends at its CLOCK_MONOTONIC deadline when nothing signals, and at once
    /// when something already has.
    func testCompletionWaitsUntilItsDeadlineOrItsSignal() {
        let quiet = Completion()
        let started = monotonicNanoseconds()
        XCTAssertFalse(quiet.wait(seconds: 0.05))
        XCTAssertGreaterThanOrEqual(monotonicNanoseconds() - started, 50_000_000)

        let fired = Completion()
        let thread = WorkerThread(name: "test-signal") { fired.signal() }
        XCTAssertTrue(fired.wait(seconds: 30))
        XCTAssertTrue(fired.hasFired)
        fired.wait()
        thread.join()
    }

    /// The kernel knows the thread by its name (what `top -H` shows), cut to 15 bytes.
    func testWorkerThreadsNameThemselves() {
        nonisolated(unsafe) var seen = ""
        let thread = WorkerThread(name: "onair-a-long-thread-name") {
            seen = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        }
        thread.join()
        thread.join()  // a second join returns at once
        XCTAssertEqual(seen, "onair-a-long-th\n")
    }

    /// Jobs run one at a time in the order given; stop() runs those already queued, then
    /// joins, and later jobs are dropped.
    func testSerialWorkerRunsJobsInOrderAndStopDrains() {
        let worker = SerialWorker(name: "test-serial")
        let lock = Lock()
        nonisolated(unsafe) var order: [Int] = []
        for n in 0..<100 { worker.async { lock.withLock { order.append(n) } } }
        worker.stop()
        XCTAssertEqual(lock.withLock { order }, Array(0..<100))
        worker.async { lock.withLock { order.append(-1) } }
        worker.stop()
        XCTAssertEqual(lock.withLock { order.count }, 100)
    }

    /// A condition's waiter sees the state its signaller set; a timed wait ends at its
    /// deadline when nothing changes.
    func testConditionHandsStateBetweenThreads() {
        let condition = Condition(0)
        let producer = WorkerThread(name: "test-produce") {
            for n in 1...50 {
                condition.withLock { $0 = n }
                condition.broadcast()
            }
        }
        condition.withLock(waitingFor: { $0 < 50 ? .wait : .done(()) })
        producer.join()
        let deadline = monotonicNanoseconds() + 1_000_000
        var calls = 0
        let value = condition.withLock(waitingFor: { value -> ConditionStep<Int> in
            calls += 1
            return monotonicNanoseconds() >= deadline ? .done(value) : .waitUntil(deadline)
        })
        XCTAssertEqual(value, 50)
        XCTAssertGreaterThanOrEqual(calls, 2, "the body is asked again after the wait")
    }

    /// Locked state is reached only through withLock: many threads' increments all land.
    func testLockedStateTakesEveryThreadsChange() {
        let count = Locked(0)
        let threads = (0..<4).map { n in WorkerThread(name: "test-add-\(n)") { for _ in 0..<1000 { count.withLock { $0 += 1 } } } }
        for thread in threads { thread.join() }
        XCTAssertEqual(count.withLock { $0 }, 4000)
    }
}
