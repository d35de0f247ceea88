import Foundation
import XCTest
import Logging
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs

/// The serial console is shared with the login prompt: agetty hangs the tty up when it
/// starts, which makes every file opened on it before fail with EIO. The status lines
/// must go on after that.
final class ConsoleHangupTests: XCTestCase {
    func testLinesContinueAfterTheTTYIsHungUp() throws {
        // A pseudo-terminal by hand (tty_ioctl(4)): /dev/ptmx, unlock, its number.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        XCTAssertGreaterThanOrEqual(master, 0)
        defer { close(master) }
        var unlock: Int32 = 0, number: UInt32 = 0
        XCTAssertEqual(ioctl(master, UInt(0x4004_5431) /* TIOCSPTLCK */, &unlock), 0)
        XCTAssertEqual(ioctl(master, UInt(0x8004_5430) /* TIOCGPTN */, &number), 0)
        let slave = "/dev/pts/\(number)"
        // Keep the line open from this side too, so the hang-up leaves a tty to reopen.
        let keeper = open(slave, O_RDWR | O_NOCTTY)
        defer { close(keeper) }
        let log = Log(format: .logfmt, write: { _ in })
        let snapshot = StatusSnapshotTests.sample()
        let report = OperatorReport(device: slave, interval: 3600, notifier: nil, log: log,
                                    snapshot: { [snapshot] in snapshot }, alive: { true })
        _ = fcntl(master, F_SETFL, O_NONBLOCK)
        func readUntil(_ word: String) -> String {
            var text = ""
            var buffer = [UInt8](repeating: 0, count: 4096)
            // Waits for the line to have something (poll), at most a second each time.
            for _ in 0..<10 where !text.contains(word) {
                var ready = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 1000) > 0 else { continue }
                let n = read(master, &buffer, buffer.count)
                if n > 0 { text += String(decoding: buffer[0..<n], as: UTF8.self) }
            }
            return text
        }
        log(.streamStarted, ("id", "first"))
        let before = readUntil("first")
        // What agetty does when it starts on the tty (it flushes what was not yet read).
        XCTAssertEqual(ioctl(keeper, UInt(0x5437) /* TIOCVHANGUP */), 0, String(cString: strerror(errno)))
        log(.streamStarted, ("id", "second"))
        let after = readUntil("second")
        withExtendedLifetime(report) {}
        XCTAssertTrue(before.contains("onair: stream.started id=first"), before)
        XCTAssertTrue(after.contains("onair: stream.started id=second"), "after the hang-up: \(after)")
    }
}

/// A slow console (its buffer full: EAGAIN) never stalls the run and loses no line it can
/// keep: lines wait, bounded, and go in order with the next line or tick; past the bound
/// the oldest go, and the console is told how many.
final class SlowConsoleTests: XCTestCase {
    func testLinesWaitForASlowConsoleAndTheDroppedAreCounted() throws {
        let fifo = NSTemporaryDirectory() + "onair-console-\(UUID().uuidString)"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        defer { unlink(fifo) }
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        let log = Log(format: .logfmt, write: { _ in })
        let snapshot = StatusSnapshotTests.sample()
        let report = OperatorReport(device: fifo, interval: 3600, notifier: nil, log: log,
                                    snapshot: { [snapshot] in snapshot }, alive: { true })
        func drain() -> String {
            var text = "", buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(reader, &buffer, buffer.count)
                guard n > 0 else { return text }
                text += String(decoding: buffer[0..<n], as: UTF8.self)
            }
        }
        // Each line whole, or the test fails on it.
        func ids(_ text: String) -> [Int] {
            text.split(whereSeparator: \.isNewline).compactMap { line -> Int? in
                if line.hasPrefix("onair: console.dropped") { return nil }
                XCTAssertTrue(line.hasPrefix("onair: stream.started id=line-") && line.count == 36, "a whole line: \(line)")
                return Int(line.dropFirst("onair: stream.started id=line-".count).prefix(6))
            }
        }
        // A pipe holds 64 KiB; the lines are 38 bytes: 1,800 of them fill it and leave 3 KB
        // waiting (OperatorReport.pendingLimit is 16 KiB).
        for n in 0..<1_800 { log(.streamStarted, ("id", String(format: "line-%06d", n))) }
        var text = drain()
        report.flush()
        text += drain()
        XCTAssertEqual(ids(text), Array(0..<1_800), "every line, in order, none cut")
        XCTAssertFalse(text.contains("console.dropped"))

        for n in 1_800..<5_000 { log(.streamStarted, ("id", String(format: "line-%06d", n))) }
        text = drain()
        report.flush()
        text += drain()
        let seen = ids(text)
        let notes = text.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("onair: console.dropped lines=") }
        let count = notes.map { Int($0.dropFirst("onair: console.dropped lines=".count).prefix { $0.isNumber })! }.reduce(0, +)
        XCTAssertGreaterThan(count, 0)
        XCTAssertEqual(seen.count + count, 3_200, "each line either shown or counted")
        XCTAssertEqual(seen, seen.sorted(), "in order")
        XCTAssertEqual(seen.last, 4_999, "the newest lines are kept")
        withExtendedLifetime(report) {}
    }
}
