import RTP
import XCTest

final class RTCPTests: XCTestCase {
    func testASenderReportAndItsCNAMERoundTrip() throws {
        let block = RTCPPacket.ReportBlock(ssrc: 9, fractionLost: 12, cumulativeLost: -3, highestSequence: 70_000, jitter: 45,
                                           lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 65_536)
        let report = RTCPPacket.SenderReport(ssrc: 0xCAFE_F00D, ntpTime: RTCPPacket.ntpTime(unixMilliseconds: 1_500), rtpTime: 90_000,
                                             packetCount: 42, octetCount: 50_000, reports: [block])
        let bytes = RTCPPacket.senderReportPacket(report, cname: "onair-board")
        XCTAssertEqual(Array(bytes[0..<4]), [0x81, 200, 0, 12], "V=2, one report block, 13 words")
        XCTAssertEqual(bytes.count % 4, 0)
        XCTAssertEqual(try RTCPPacket.parse(bytes), [.senderReport(report), .sourceDescription([(0xCAFE_F00D, "onair-board")])])
    }

    func testNTPTimeIsSecondsSince1900AndAFraction() {
        XCTAssertEqual(RTCPPacket.ntpTime(unixMilliseconds: 0), 2_208_988_800 << 32)
        XCTAssertEqual(RTCPPacket.ntpTime(unixMilliseconds: 1_500), (2_208_988_801 << 32) | 0x8000_0000)
    }

    /// RFC 4585 §6.2.1: PID 100 with bits 0 and 2 of the BLP set lost 100, 101 and 103.
    func testANackNamesEveryLostPacket() throws {
        let bytes: [UInt8] = [0x81, 205, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 100, 0b0000_0000, 0b0000_0101]
        XCTAssertEqual(try RTCPPacket.parse(bytes), [.nack(sender: 1, media: 2, lost: [100, 101, 103])])
        let wrapping: [UInt8] = [0x81, 205, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0xFF, 0xFF, 0, 1]
        XCTAssertEqual(try RTCPPacket.parse(wrapping), [.nack(sender: 1, media: 2, lost: [65_535, 0])])
    }

    func testPictureLossFullIntraAndAReceiverReportInOneCompound() throws {
        let receiver: [UInt8] = [0x81, 201, 0, 7, 0, 0, 0, 5,
                                 0xCA, 0xFE, 0xF0, 0x0D, 10, 0xFF, 0xFF, 0xFF, 0, 1, 0, 2, 0, 0, 0, 30, 0x12, 0x34, 0x56, 0x78, 0, 1, 0, 0]
        let pli: [UInt8] = [0x81, 206, 0, 2, 0, 0, 0, 5, 0xCA, 0xFE, 0xF0, 0x0D]
        let fir: [UInt8] = [0x84, 206, 0, 4, 0, 0, 0, 5, 0, 0, 0, 0, 0xCA, 0xFE, 0xF0, 0x0D, 7, 0, 0, 0]
        let bye: [UInt8] = [0x81, 203, 0, 1, 0, 0, 0, 5]
        let packets = try RTCPPacket.parse(receiver + pli + fir + bye)
        XCTAssertEqual(packets.count, 4)
        guard case .receiverReport(5, let reports) = packets[0] else { return XCTFail("\(packets[0])") }
        XCTAssertEqual(reports.first?.cumulativeLost, -1, "24-bit signed")
        XCTAssertEqual(reports.first?.highestSequence, 65_538)
        XCTAssertEqual(reports.first?.roundTrip(arrival: 0x1236_5678), 0x1_0000, "arrival − LSR − DLSR: one second")
        XCTAssertEqual(packets[1], .pictureLoss(sender: 5, media: 0xCAFE_F00D))
        XCTAssertEqual(packets[2], .fullIntraRequest(sender: 5, requests: [(0xCAFE_F00D, 7)]))
        XCTAssertEqual(packets[3], .bye(ssrcs: [5]))
        XCTAssertEqual(try RTCPPacket.parse([0x81, 207, 0, 0]), [.other(packetType: 207, format: 1)], "XR: skipped, not an error")
    }

    func testMalformedCompoundsAreRefused() {
        func refused(_ bytes: [UInt8], _ expected: RTCPPacket.ParseError, line: UInt = #line) {
            XCTAssertThrowsError(try RTCPPacket.parse(bytes), line: line) { XCTAssertEqual($0 as? RTCPPacket.ParseError, expected, line: line) }
        }
        refused([0x81, 200, 0], .truncated)
        refused([0x41, 200, 0, 0], .version(1))
        refused([0x81, 200, 0, 9, 0, 0, 0, 1], .truncated)
        refused([0x85, 201, 0, 1, 0, 0, 0, 1], .badCount(packetType: 201))  // five blocks in one word
        refused([0x81, 202, 0, 2, 0, 0, 0, 1, 1, 200, 0, 0], .badCount(packetType: 202))  // an item past the packet
        refused([0xA1, 203, 0, 1, 0, 0, 0, 9], .badCount(packetType: 203))  // padding of 9 in 4 bytes
        refused([0x83, 203, 0, 1, 0, 0, 0, 1], .badCount(packetType: 203))
    }
}
