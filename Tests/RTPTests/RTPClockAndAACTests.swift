import RTP
import XCTest

final class RTPClockTests: XCTestCase {
    func testTimestampsAreTheCaptureClockAtTheMediaRate() {
        XCTAssertEqual(RTPClock.video(0), 0)
        XCTAssertEqual(RTPClock.video(1_000_000_000), 90_000)
        // Rounded to the nearest tick: a 30 fps frame is 3000 ticks, not 2999.
        XCTAssertEqual(RTPClock.video(33_333_333), 3_000)
        XCTAssertEqual(RTPClock.timestamp(20_000_000, rate: 48_000), 960)
        // Before zero the same: -20 ms is 960 ticks before 0, -1 ns rounds to 0.
        XCTAssertEqual(RTPClock.timestamp(-20_000_000, rate: 48_000), 0 &- 960)
        XCTAssertEqual(RTPClock.timestamp(-1, rate: 48_000), 0)
        XCTAssertEqual(RTPClock.timestamp(-6_500_000 + 20_000_000, rate: 48_000) &- RTPClock.timestamp(-6_500_000, rate: 48_000), 960)
        // AAC frames at 44.1 kHz, 1024 samples apart on the capture clock (ns, rounded),
        // stay exactly 1024 ticks apart.
        let start: Int64 = 123_456_789_012
        let stamps = (0..<100).map { RTPClock.timestamp(start + ($0 * 1024 * 1_000_000_000 + 22_050) / 44_100, rate: 44_100) }
        XCTAssertEqual(Set(zip(stamps.dropFirst(), stamps).map { $0 &- $1 }), [1024])
        // Years of uptime: no overflow, wrapped modulo 2^32 (the values are Python's exact
        // round(Int64.max * rate / 1e9) mod 2^32).
        XCTAssertEqual(RTPClock.video(Int64.max), 2_269_117_122)
        XCTAssertEqual(RTPClock.timestamp(Int64.max, rate: 48_000), 923_864_645)
        XCTAssertEqual(RTPClock.timestamp(Int64.max, rate: 44_100), 124_024_912)
    }
}

final class AACPacketizerTests: XCTestCase {
    /// RFC 3640 §3.3.6: AU-headers-length 16 (bits), then size << 3 | index 0.
    func testOneAccessUnitPerPacketWithAnAACHbrHeader() throws {
        let unit = (0..<371).map { UInt8(truncatingIfNeeded: $0) }
        let payloads = AACPacketizer().payloads(unit)
        XCTAssertEqual(payloads.count, 1)
        XCTAssertEqual(Array(payloads[0][0..<4]), [0x00, 0x10, UInt8(371 >> 5), UInt8(371 & 0x1F) << 3])
        XCTAssertEqual(Array(payloads[0][4...]), unit)
        XCTAssertEqual(AACPacketizer.accessUnits(payloads[0]), [unit])
    }

    /// §3.2.3.1: a unit larger than a packet is fragmented; every fragment carries the
    /// whole unit's size.
    func testALargeUnitIsFragmentedWithItsWholeSize() {
        let unit = [UInt8](repeating: 7, count: 3000)
        let payloads = AACPacketizer(maximumPayload: 1000).payloads(unit)
        XCTAssertEqual(payloads.map(\.count), [1000, 1000, 1000, 16])
        XCTAssertTrue(payloads.allSatisfy { Array($0[0..<4]) == [0x00, 0x10, UInt8(3000 >> 5), UInt8(3000 & 0x1F) << 3] })
        XCTAssertEqual(payloads.map { $0.count - 4 }.reduce(0, +), 3000)
    }

    func testUnitsThatCannotBeDescribedAreNotSent() {
        XCTAssertEqual(AACPacketizer().payloads([]), [])
        XCTAssertEqual(AACPacketizer().payloads([UInt8](repeating: 0, count: 8192)), [])
        XCTAssertNil(AACPacketizer.accessUnits([0x00]))
        XCTAssertNil(AACPacketizer.accessUnits([0x00, 0x20, 0x00, 0x08]))
    }
}
