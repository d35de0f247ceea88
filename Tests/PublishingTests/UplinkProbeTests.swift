import Foundation
import XCTest
@testable import Publishing
import TestSupport

final class UplinkProbeTests: XCTestCase {
    let presets = [("low", 964_000), ("medium", 1_564_000), ("high", 2_564_000)]

    func testChoosesTheHighestPresetAtHalfTheThroughput() {
        XCTAssertEqual(UplinkProbe.choose(presets, throughput: 10_000_000), "high")
        XCTAssertEqual(UplinkProbe.choose(presets, throughput: 5_128_000), "high", "exactly half")
        XCTAssertEqual(UplinkProbe.choose(presets, throughput: 5_127_999), "medium")
        XCTAssertEqual(UplinkProbe.choose(presets, throughput: 3_128_000), "medium")
        XCTAssertEqual(UplinkProbe.choose(presets, throughput: 3_127_999), "low")
        XCTAssertEqual(UplinkProbe.choose(presets, throughput: 100_000), "low", "the lowest when none fits")
    }

    func testMeasuresAThrottledUplink() throws {
        let server = try RecordingServer(status: { _ in 201 })
        defer { server.stop() }
        server.throttle = 125_000  // 1 Mb/s
        let transport = CurlTransport(destination: try Destination.parse(url: "http://127.0.0.1:\(server.port)/"))
        let throughput = try UplinkProbe.measure(with: transport)
        XCTAssertLessThan(throughput, 1_100_000, "no faster than the uplink allows")
        XCTAssertEqual(UplinkProbe.choose(presets, throughput: throughput), "low")
        XCTAssertEqual(server.requests.first?.path, "/.onair-probe")
        XCTAssertEqual(server.requests.first?.body.count, UplinkProbe.size)
    }
}
