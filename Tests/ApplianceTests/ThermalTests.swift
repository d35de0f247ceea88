import Foundation
import XCTest
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs
import Media

/// The frame-rate ladder on a made-up clock.
final class ThermalLadderTests: XCTestCase {
    let s: Int64 = 1_000_000_000

    func testDownWhenHotForTheDwellUpWhenCoolNeverFasterThanTheDwell() {
        var ladder = ThermalLadder(steps: [30, 24, 20, 15, 10], fps: 30, hot: 80, cool: 70, dwellSeconds: 5)
        XCTAssertEqual(ladder.fps, 30)
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 0))
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 4 * s), "hot, but not for the dwell yet")
        XCTAssertEqual(ladder.observe(temperature: 85, pressure: false, at: 5 * s)?.to, 24)
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 6 * s), "the next step waits a whole dwell")
        XCTAssertEqual(ladder.observe(temperature: 85, pressure: false, at: 10 * s)?.to, 20)
        XCTAssertNil(ladder.observe(temperature: 75, pressure: false, at: 11 * s), "between cool and hot: stay")
        XCTAssertNil(ladder.observe(temperature: 65, pressure: false, at: 12 * s))
        XCTAssertNil(ladder.observe(temperature: 65, pressure: false, at: 16 * s))
        let up = ladder.observe(temperature: 65, pressure: false, at: 17 * s)
        XCTAssertEqual(up?.from, 20)
        XCTAssertEqual(up?.to, 24)
        XCTAssertEqual(up?.reason, "cool")
    }

    func testEncoderBacklogCountsAsHeatAndTheLadderHasEnds() {
        var ladder = ThermalLadder(steps: [10, 30, 15], fps: 25, hot: 80, cool: 70, dwellSeconds: 1)
        XCTAssertEqual(ladder.steps, [25, 15, 10], "the configured rate on top, then the steps below it")
        XCTAssertEqual(ladder.fps, 25)
        XCTAssertNil(ladder.observe(temperature: nil, pressure: true, at: 0))
        XCTAssertEqual(ladder.observe(temperature: nil, pressure: true, at: s)?.reason, "encoder backlog")
        XCTAssertEqual(ladder.fps, 15)
        XCTAssertNotNil(ladder.observe(temperature: 95, pressure: false, at: 3 * s))
        XCTAssertEqual(ladder.fps, 10)
        XCTAssertNil(ladder.observe(temperature: 95, pressure: false, at: 10 * s), "the bottom of the ladder")
        XCTAssertNil(ladder.observe(temperature: 95, pressure: false, at: 20 * s))
    }

    /// A board opened at 15 fps on the default ladder stays at 15 when cool: found on the
    /// qemu board, which climbed to 30 and repeated every other picture.
    func testCoolNeverRaisesTheRateAboveTheConfiguredOne() {
        var ladder = ThermalLadder(steps: [30, 24, 20, 15, 10], fps: 15, hot: 80, cool: 70, dwellSeconds: 1)
        for t in 0..<60 { XCTAssertNil(ladder.observe(temperature: 50, pressure: false, at: Int64(t) * s)) }
        XCTAssertEqual(ladder.fps, 15)
    }

    func testTheSensorFileIsMillidegrees() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onair-temp-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "48312\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(ThermalWatch.read(path), 48.312)
        XCTAssertNil(ThermalWatch.read(path + ".missing"))
    }
}
