import Foundation
import XCTest
import Logging
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs
import Media

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
