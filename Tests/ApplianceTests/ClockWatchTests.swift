import Foundation
import XCTest
@testable import Appliance
import Logging
import TestSupport
import Threading

/// The clock watch on a made-up monotonic clock and a wall clock the test steps.
final class ClockWatchTests: XCTestCase {
    let s: Int64 = 1_000_000_000

    func testSaysWhenTheClockIsSynchronisedWithTheStepAndWarnsOnceWithoutNTP() {
        let manual = ManualClock(now: 5 * s)
        let wall = SteppedWallClock(offsetMs: 946_684_800_000, synchronized: false, clock: manual)
        let captured = Captured()
        let log = Log(format: .logfmt, write: { captured.add($0) })
        let watch = ClockWatch(clock: wall, servers: ["10.0.2.2"], log: log)
        XCTAssertFalse(watch.settled)
        for _ in 0..<59 { manual.advance(by: s); watch.poll() }
        XCTAssertFalse(captured.lines.contains { $0.contains("event=clock.unsynchronized") }, "a minute's patience")
        for _ in 0..<5 { manual.advance(by: s); watch.poll() }
        let warnings = captured.lines.filter { $0.contains("event=clock.unsynchronized") }
        XCTAssertEqual(warnings.count, 1, "said once")
        XCTAssertTrue(warnings[0].contains("servers=10.0.2.2"), warnings[0])

        wall.step(by: 851_558_400_123, synchronized: true)  // NTP: 2000-01-01 → 2026-12-03
        manual.advance(by: s)
        watch.poll()
        let synced = captured.lines.filter { $0.contains("event=clock.synchronized") }
        XCTAssertEqual(synced.count, 1)
        XCTAssertTrue(synced[0].contains("synchronized=true step=851558400.123 source=ntp"), synced[0])
        XCTAssertTrue(Event.clockSynchronized.onConsole, "the operator sees it on the console")
        XCTAssertEqual(watch.reading.synchronized, true)
        XCTAssertFalse(watch.settled, "just stepped: retention waits")
        for _ in 0..<600 { manual.advance(by: s); watch.poll() }
        XCTAssertTrue(watch.settled, "ten minutes without a step")

        wall.step(by: -3_600_000)  // a step while synchronised
        manual.advance(by: s)
        watch.poll()
        XCTAssertTrue(captured.lines.contains { $0.contains("event=clock.stepped") && $0.contains("step=-3600") })
        XCTAssertFalse(watch.settled)
    }

    func testAPollEverySecondRunsOnTheMonotonicScheduler() {
        let manual = ManualClock(now: 5 * s)
        let wall = SteppedWallClock(offsetMs: 0, synchronized: true, clock: manual)
        let watch = ClockWatch(clock: wall, servers: [], log: Log.silent())
        let scheduler = Scheduler(clock: manual)
        watch.start(on: scheduler)
        wall.step(by: 10 * 365 * 86_400_000)  // years forward: the schedule does not notice
        manual.advance(by: s)
        scheduler.runDue()
        XCTAssertEqual(watch.reading.offsetMs, 10 * 365 * 86_400_000)
        watch.stop(on: scheduler)
    }

    func testTimeServersFromTheConfigAndTheOnesLeftOut() throws {
        var settings = Settings()
        try ConfigFile.apply(try ConfigFile.parse("[time]\nservers = 10.0.2.2, ntp.example.org  fe80::1 bad!host -x.org\n",
                                                  file: "onair.conf"), to: &settings)
        XCTAssertEqual(settings.time.usable, ["10.0.2.2", "ntp.example.org", "fe80::1"])
        XCTAssertEqual(settings.time.problems, [
            "onair.conf:2: time.servers: 'bad!host' is not a host name or an IP address; left out",
            "onair.conf:2: time.servers: '-x.org' is not a host name or an IP address; left out"])
        XCTAssertTrue(settings.time.timesyncdConfig.contains("\n[Time]\nNTP=10.0.2.2 ntp.example.org fe80::1\n"))
        XCTAssertFalse(Settings().time.timesyncdConfig.contains("NTP="), "unset: timesyncd's FallbackNTP, Debian's pool")
    }

    func testTimeConfigCommandWritesTheDropInAndKeepsGoingPastABadEntry() throws {
        let files = ["board.conf": "[time]\nservers = pool.example\n", "onair.conf": "[time]\nservers = 10.0.2.2 nonsense!\n"]
        let read: (String) throws -> [UInt8] = { Array(files[$0]!.utf8) }
        guard case .timeConfig(let time, let output) = try CommandLineParser.parse(
            ["time-config", "--config", "board.conf", "--config", "onair.conf", "--write", "/run/x.conf"], readFile: read) else {
            return XCTFail("not time-config")
        }
        XCTAssertEqual(output, "/run/x.conf")
        XCTAssertEqual(time.usable, ["10.0.2.2"], "the owner's file wins")
        XCTAssertEqual(time.problems.count, 1)
        XCTAssertThrowsError(try CommandLineParser.parse(["time-config", "--bogus"], readFile: read))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onair-time-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        XCTAssertEqual(Runner.timeConfig(time, output: directory + "/timesyncd.conf.d/onair.conf"), 0)
        let written = try String(contentsOfFile: directory + "/timesyncd.conf.d/onair.conf", encoding: .utf8)
        XCTAssertTrue(written.contains("NTP=10.0.2.2\n"), written)
    }
}
