import Logging
import TestSupport
import Threading
import XCTest
@testable import Appliance
@testable import Devices
import System

/// A button or tally line, input device or sensor that cannot be had does not stop the
/// appliance (issue 33): it is said once with why and what still works, tried again every
/// five seconds on the control scheduler, and taken with one more line when it can be.
final class DeviceRetriesTests: XCTestCase {
    let s: Int64 = 1_000_000_000

    func testALineHeldByAnotherIsSaidOnceTriedAgainAndTakenWhenFree() {
        let clock = ManualClock(now: 5 * s)
        let scheduler = Scheduler(clock: clock)
        let lines = Locked<[String]>([])
        let retries = DeviceRetries(log: .silent { event, _, fields in
            lines.withLock { $0.append("\(event) " + fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")) }
        })
        let attempts = Locked(0)
        let taken = Locked<[String]>([])
        retries.keepTrying("button.gpio", device: "gpiochip0:3", on: scheduler, others: { "keys (auto), Enter on stdin" }, open: { () throws -> String in
            let attempt = attempts.withLock { $0 += 1; return $0 }
            guard attempt >= 3 else { throw DeviceError.setting(key: "button.gpio", value: "/dev/gpiochip0:3", reason: "busy: held by gpio-keys") }
            return "line"
        }, took: { line in taken.withLock { $0.append(line) } })
        XCTAssertEqual(lines.withLock { $0 }, ["device.unavailable key=button.gpio device=gpiochip0:3 problem=busy: held by gpio-keys "
                                                + "meanwhile=keys (auto), Enter on stdin action=tried again every 5 s"])
        XCTAssertEqual(retries.unavailable, [.init(key: "button.gpio", device: "gpiochip0:3", problem: "busy: held by gpio-keys")])
        clock.advance(by: 5 * s)
        scheduler.runDue()
        XCTAssertEqual(attempts.withLock { $0 }, 2)
        XCTAssertEqual(lines.withLock { $0.count }, 1, "the same problem is not said again")
        XCTAssertEqual(taken.withLock { $0 }, [])
        clock.advance(by: 5 * s)
        scheduler.runDue()
        XCTAssertEqual(taken.withLock { $0 }, ["line"])
        XCTAssertEqual(lines.withLock { $0.last }, "device.available key=button.gpio device=gpiochip0:3")
        XCTAssertEqual(retries.unavailable, [])
        clock.advance(by: 10 * s)
        scheduler.runDue()
        XCTAssertEqual(attempts.withLock { $0 }, 3, "no more tries once taken")
    }

    func testWhatOpensAtOnceSaysNothingAndAStopEndsTheTries() {
        let clock = ManualClock(now: 5 * s)
        let scheduler = Scheduler(clock: clock)
        let lines = Locked(0)
        let retries = DeviceRetries(log: .silent { _, _, _ in lines.withLock { $0 += 1 } })
        retries.keepTrying("tally.gpio", device: "gpiochip0:4", on: scheduler, others: { "" }, open: { 1 }, took: { _ in })
        XCTAssertEqual(lines.withLock { $0 }, 0)
        let attempts = Locked(0)
        retries.keepTrying("button.gpio", device: "gpiochip9:3", on: scheduler, others: { "" }, open: { () throws -> Int in
            attempts.withLock { $0 += 1 }
            throw DeviceError.setting(key: "button.gpio", value: "/dev/gpiochip9", reason: "no such GPIO chip")
        }, took: { _ in })
        retries.stop()
        clock.advance(by: 20 * s)
        scheduler.runDue()
        XCTAssertEqual(attempts.withLock { $0 }, 1)
    }

    /// What the kernel answers a line request is said in words: a chip that is not there,
    /// a line held by someone (named when the kernel names it), a line the chip lacks.
    func testGPIOProblemsInWords() throws {
        XCTAssertThrowsError(try GPIOButton(line: "gpiochip99:3", activeLow: true, bias: "pull-up", debounceMilliseconds: 10)) {
            XCTAssertEqual("\($0)", "button.gpio /dev/gpiochip99: no such GPIO chip (gpiodetect lists the board's)")
        }
        XCTAssertThrowsError(try GPIOOutput(line: "/nonexistent/chip:1", activeLow: false)) {
            XCTAssertEqual(DeviceRetries.reason($0), "no such GPIO chip (gpiodetect lists the board's)")
        }
        // Not a chip at all: the kernel cannot say who holds the line.
        let notAChip = try FileDescriptor.open("/dev/null", .readOnly)
        defer { notAChip.close() }
        XCTAssertEqual(GPIOChip.reason(requesting: 3, on: notAChip, .busy), "busy: held by another request")
        XCTAssertEqual(GPIOChip.reason(requesting: 3, on: notAChip, .permissionDenied), "GPIO_V2_GET_LINE_IOCTL: \(Errno.permissionDenied)")
        XCTAssertThrowsError(try GPIOButton(line: "/dev/null:3", activeLow: true, bias: "pull-up", debounceMilliseconds: 10)) {
            XCTAssertEqual(DeviceRetries.reason($0), "not a GPIO chip")
        }
    }

    func testALineIsCheckedForItsFormInTheConfig() throws {
        for good in ["gpiochip0:17", "/dev/gpiochip4:3", "off"] {
            var settings = Settings()
            XCTAssertNoThrow(try ConfigFile.apply([.init(key: "button.gpio", value: good, origin: "c:1")], to: &settings), good)
        }
        for bad in ["gpiochip0", "gpiochip0:x", ":3", "gpiochip0:3:4", "gpiochip0:99999999999999999999"] {
            var settings = Settings()
            XCTAssertThrowsError(try ConfigFile.apply([.init(key: "tally.gpio", value: bad, origin: "c:1")], to: &settings), bad) {
                XCTAssertTrue("\($0)".hasPrefix("c:1: tally.gpio: expected off or a line such as gpiochip0:17"), "\($0)")
            }
        }
    }
}
