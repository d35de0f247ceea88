import Foundation
import XCTest
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs

/// The frame-rate ladder on a made-up clock.
final class ThermalLadderTests: XCTestCase {
    let s: Int64 = 1_000_000_000

    func testDownWhenHotForTheDwellUpWhenCoolNeverFasterThanTheDwell() {
        var ladder = ThermalLadder(steps: [30, 24, 20, 15, 10], fps: 30, hot: 80, cool: 70, dwellSeconds: 5)
        XCTAssertEqual(ladder.fps, 30)
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 0))
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 4 * s), "hot, but not for the dwell yet")
        XCTAssertEqual(ladder.observe(temperature: 85, pressure: false, at: 5 * s), .step(from: 30, to: 24, reason: .hot))
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 6 * s), "the next step waits a whole dwell")
        XCTAssertEqual(ladder.observe(temperature: 85, pressure: false, at: 10 * s), .step(from: 24, to: 20, reason: .hot))
        XCTAssertNil(ladder.observe(temperature: 75, pressure: false, at: 11 * s), "between cool and hot: stay")
        XCTAssertNil(ladder.observe(temperature: 65, pressure: false, at: 12 * s))
        XCTAssertNil(ladder.observe(temperature: 65, pressure: false, at: 16 * s))
        XCTAssertEqual(ladder.observe(temperature: 65, pressure: false, at: 17 * s), .step(from: 20, to: 24, reason: .cool))
    }

    func testEncoderBacklogCountsAsHeatAndTheLadderHasEnds() {
        var ladder = ThermalLadder(steps: [10, 30, 15], fps: 25, hot: 80, cool: 70, dwellSeconds: 1)
        XCTAssertEqual(ladder.steps, [25, 15, 10], "the configured rate on top, then the steps below it")
        XCTAssertEqual(ladder.fps, 25)
        XCTAssertNil(ladder.observe(temperature: nil, pressure: true, at: 0))
        XCTAssertEqual(ladder.observe(temperature: nil, pressure: true, at: s), .step(from: 25, to: 15, reason: .backlog))
        XCTAssertEqual(ladder.observe(temperature: 95, pressure: false, at: 3 * s), .step(from: 15, to: 10, reason: .hot))
        XCTAssertEqual(ladder.fps, 10)
    }

    /// With a live quality ladder the top rungs go first, one a step while more than one
    /// is left, then the frame rate; cooling brings back the rate first, then the rungs.
    func testWithAQualityLadderTheTopRungsGoFirstThenTheRate() {
        var ladder = ThermalLadder(steps: [30, 24, 20], fps: 30, rungs: 3, hot: 80, cool: 70, dwellSeconds: 1)
        XCTAssertEqual(ladder.levels.map { "\($0.dropped)@\($0.fps)" }, ["0@30", "1@30", "2@30", "2@24", "2@20"])
        XCTAssertNil(ladder.observe(temperature: 85, pressure: false, at: 0))
        XCTAssertEqual(ladder.observe(temperature: 85, pressure: false, at: s), .rungs(from: 0, to: 1, reason: .hot))
        XCTAssertEqual(ladder.observe(temperature: nil, pressure: true, at: 2 * s), .rungs(from: 1, to: 2, reason: .backlog))
        XCTAssertEqual(ladder.observe(temperature: 85, pressure: false, at: 3 * s), .step(from: 30, to: 24, reason: .hot))
        XCTAssertEqual(ladder.dropped, 2, "the lowest rung is never dropped")
        XCTAssertNil(ladder.observe(temperature: 60, pressure: false, at: 4 * s))
        XCTAssertEqual(ladder.observe(temperature: 60, pressure: false, at: 5 * s), .step(from: 24, to: 30, reason: .cool))
        // The rung that backlogged comes back after twice the dwell.
        XCTAssertNil(ladder.observe(temperature: 60, pressure: false, at: 6 * s))
        XCTAssertEqual(ladder.observe(temperature: 60, pressure: false, at: 7 * s), .rungs(from: 2, to: 1, reason: .cool))
        XCTAssertEqual(ladder.observe(temperature: 60, pressure: false, at: 8 * s), .rungs(from: 1, to: 0, reason: .cool))
        XCTAssertEqual(ladder.fps, 30)
        XCTAssertEqual(ThermalLadder(steps: [30, 24], fps: 30, rungs: 1, hot: 80, cool: 70, dwellSeconds: 1).levels.count, 2,
                       "without a ladder: the rates alone")
    }

    /// Hot at the bottom of the ladder: said once (the console shows it), then again only
    /// after it has cooled and heated up once more.
    func testHotAtTheLowestRateIsReportedOncePerEpisode() {
        var ladder = ThermalLadder(steps: [6], fps: 10, hot: 80, cool: 70, dwellSeconds: 1)
        XCTAssertNil(ladder.observe(temperature: nil, pressure: true, at: 0))
        XCTAssertEqual(ladder.observe(temperature: nil, pressure: true, at: s), .step(from: 10, to: 6, reason: .backlog))
        XCTAssertEqual(ladder.observe(temperature: 95, pressure: false, at: 2 * s), .atLowest(fps: 6, reason: .hot),
                       "still hot a dwell after the step, and nothing left to lower")
        for t in 3..<20 { XCTAssertNil(ladder.observe(temperature: 95, pressure: false, at: Int64(t) * s)) }
        XCTAssertNil(ladder.observe(temperature: 75, pressure: false, at: 20 * s), "no longer hot: the episode ends")
        XCTAssertNil(ladder.observe(temperature: 95, pressure: false, at: 21 * s))
        XCTAssertEqual(ladder.observe(temperature: 95, pressure: false, at: 22 * s), .atLowest(fps: 6, reason: .hot))
        XCTAssertEqual(ladder.fps, 6)
    }

    /// Found in the emulated board: encoders that fall behind at 10 fps keep up at 6, so
    /// the ladder went 10 → 6 → 10 → 6 every eight seconds, a discontinuity each time. A
    /// rate that backlogged is retried after 2, 4, 8… dwells of calm.
    func testARateTheEncodersCouldNotKeepUpWithIsRetriedLessAndLessOften() {
        var ladder = ThermalLadder(steps: [6], fps: 10, hot: 80, cool: 70, dwellSeconds: 1)
        var t: Int64 = 0
        /// Seconds of calm at 6 fps before the ladder went back to 10.
        func calmUntilUp() -> Int64 {
            let start = t
            while ladder.fps != 10 {
                t += s
                if let event = ladder.observe(temperature: 50, pressure: false, at: t) {
                    XCTAssertEqual(event, .step(from: 6, to: 10, reason: .cool))
                }
                if t - start > 1000 * s { XCTFail("never went back up"); break }
            }
            return (t - start) / s
        }
        func backlogUntilDown() {
            while ladder.fps != 6 {
                t += s
                _ = ladder.observe(temperature: 50, pressure: true, at: t)
            }
        }
        var waits: [Int64] = []
        for _ in 0..<8 {
            backlogUntilDown()
            waits.append(calmUntilUp())
        }
        // The first calm reading (a second in) starts the count; then 2, 4, 8… dwells.
        XCTAssertEqual(waits, [3, 5, 9, 17, 33, 65, 65, 65], "each retry waits twice the last, up to 64 dwells")
        XCTAssertEqual(ladder.coolDwell(toward: 1), s, "a step that never fell behind needs one dwell")
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
