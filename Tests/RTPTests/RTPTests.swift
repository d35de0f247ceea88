import RTP
import TestSupport
import XCTest

final class RTPPacketTests: XCTestCase {
    func testTheFixedHeaderIsRFC3550s() throws {
        let packet = RTPPacket(marker: true, payloadType: 96, sequenceNumber: 0x1234, timestamp: 0xDEAD_BEEF, ssrc: 0x0102_0304, payload: [9, 8])
        XCTAssertEqual(packet.serialized(), [0x80, 0xE0, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF, 1, 2, 3, 4, 9, 8])
        XCTAssertEqual(try RTPPacket(parsing: packet.serialized()), packet)
    }

    func testExtensionsInBothFormsAndCSRCsRoundTrip() throws {
        let oneByte = RTPPacket(payloadType: 102, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: [7, 8],
                                extensions: [.init(id: 1, data: [0, 0, 0]), .init(id: 14, data: Array(repeating: 5, count: 16))], payload: [1])
        let bytes = oneByte.serialized()
        XCTAssertEqual(bytes[0], 0x92, "version 2, X, two CSRCs")
        XCTAssertEqual(Array(bytes[20..<22]), [0xBE, 0xDE], "RFC 8285 §4.2's profile")
        XCTAssertEqual((bytes.count - 12 - 8 - 4 - 1) % 4, 0, "the block is padded to 32 bits")
        XCTAssertEqual(try RTPPacket(parsing: bytes), oneByte)
        // Data of 17 bytes, or id 15, needs the two-byte form (§4.3).
        let twoByte = RTPPacket(payloadType: 102, sequenceNumber: 1, timestamp: 2, ssrc: 3,
                                extensions: [.init(id: 15, data: [1]), .init(id: 2, data: Array(repeating: 6, count: 17))], payload: [])
        XCTAssertEqual(Array(twoByte.serialized()[12..<14]), [0x10, 0x00])
        XCTAssertEqual(try RTPPacket(parsing: twoByte.serialized()), twoByte)
    }

    func testPaddingIsRemoved() throws {
        var bytes = RTPPacket(payloadType: 0, sequenceNumber: 0, timestamp: 0, ssrc: 0, payload: [1, 2, 3]).serialized()
        bytes[0] |= 0x20
        bytes += [0, 0, 3]
        XCTAssertEqual(try RTPPacket(parsing: bytes).payload, [1, 2, 3])
    }

    func testMalformedPacketsAreRefusedNotRead() {
        let good = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1,
                             extensions: [.init(id: 3, data: [1, 2])], payload: [1, 2, 3]).serialized()
        func refused(_ bytes: [UInt8], _ expected: RTPPacket.ParseError, line: UInt = #line) {
            XCTAssertThrowsError(try RTPPacket(parsing: bytes), line: line) { XCTAssertEqual($0 as? RTPPacket.ParseError, expected, line: line) }
        }
        refused(Array(good.prefix(11)), .truncated(need: 12, have: 11))
        refused([0x40] + good.dropFirst(), .version(1))
        refused([0x8F] + good.dropFirst(), .truncated(need: 72, have: good.count))
        var longExtension = good
        longExtension[14] = 0xFF
        longExtension[15] = 0xFF
        refused(longExtension, .truncated(need: 16 + 4 * 0xFFFF, have: good.count))
        var overrun = good
        overrun[16] = 0x3F  // id 3 with 16 bytes, in a 4-byte block
        refused(overrun, .badExtension("element 3 of 16 bytes past the block"))
        var zeroPadding = good
        zeroPadding[0] |= 0x20
        zeroPadding[zeroPadding.count - 1] = 0
        refused(zeroPadding, .padding(0))
        var hugePadding = good
        hugePadding[0] |= 0x20
        hugePadding[hugePadding.count - 1] = 200
        refused(hugePadding, .padding(200))
    }
}

final class H264PacketizerTests: XCTestCase {
    /// A NAL unit of `size` bytes whose header has `type` and NRI 3.
    func nal(_ type: UInt8, _ size: Int, seed: UInt8 = 0) -> [UInt8] {
        [0x60 | type] + (1..<max(1, size)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }
    }

    let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0xDA]
    let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]

    func testSmallUnitsShareOneSTAPAWithTheParameterSetsBeforeAnIDR() {
        let idr = nal(5, 300)
        let payloads = H264Packetizer().payloads([[0x09, 0xF0][...], idr[...]], parameterSets: [sps, pps])
        XCTAssertEqual(payloads.count, 1)
        let stap = payloads[0]
        XCTAssertEqual(stap[0], 0x60 | 24, "STAP-A with the largest NRI (§5.7.1)")
        XCTAssertEqual(Array(stap[1...2]), [0, 5])
        XCTAssertEqual(Array(stap[3..<8]), sps)
        XCTAssertEqual(Array(stap[8...9]), [0, 4])
        XCTAssertEqual(Array(stap[14...15]), [1, 44], "then the IDR's 300 bytes; the delimiter is left out")
        XCTAssertEqual(stap.count, 1 + 2 + 5 + 2 + 4 + 2 + 300)
    }

    func testAUnitThatFitsGoesAloneAndOneByteMoreIsFragmented() {
        let packetizer = H264Packetizer()
        XCTAssertEqual(packetizer.payloads([nal(1, 1200)[...]]), [nal(1, 1200)])
        let big = nal(5, 1201)
        let fragments = packetizer.payloads([big[...]])
        XCTAssertEqual(fragments.count, 2)
        XCTAssertEqual(fragments[0][0], 0x60 | 28, "FU indicator: the unit's F and NRI, type 28 (§5.8)")
        XCTAssertEqual(fragments[0][1], 0x80 | 5, "S and the unit's type")
        XCTAssertEqual(fragments[1][1], 0x40 | 5, "E")
        XCTAssertEqual(fragments[0].count, 1200)
        XCTAssertEqual(Array(fragments[0][2...]) + Array(fragments[1][2...]), Array(big.dropFirst()), "the header byte is not sent")
    }

    func testNoPayloadExceedsTheLimitAndAnIDRWithItsOwnParameterSetsGetsNoSecondCopy() {
        let packetizer = H264Packetizer(maximumPayload: 500)
        let units = [sps, pps, nal(6, 40), nal(5, 4321), nal(5, 499), nal(5, 498)].map { $0[...] }
        let payloads = packetizer.payloads(units, parameterSets: [[0x67, 1], [0x68, 2]])
        XCTAssertTrue(payloads.allSatisfy { $0.count <= 500 })
        var depacketizer = H264Depacketizer()
        var stream = RTPStream(ssrc: 1, payloadType: 96, clockRate: 90_000, firstSequence: 10, timestampOffset: 0)
        let unit = stream.packets(payloads, timestamp: 3000).compactMap { depacketizer.push($0) }.first
        XCTAssertEqual(unit?.units, units.map(Array.init), "the unit's own SPS and PPS, not the given ones")
        XCTAssertEqual(unit?.complete, true)
    }

    /// Packetized, numbered, sent as bytes and read back, access units come out as they
    /// went in: whatever the sizes, across FU-A and STAP-A boundaries and sequence wrap.
    func testAccessUnitsRoundTripThroughPacketsAndBytes() throws {
        var generator = SplitMix(seed: 42)
        var stream = RTPStream(ssrc: 0xCAFE, payloadType: 96, clockRate: 90_000, firstSequence: 65_500, timestampOffset: 0xFFFF_FF00)
        let packetizer = H264Packetizer()
        var depacketizer = H264Depacketizer()
        for frame in 0..<300 {
            let isIDR = frame % 30 == 0
            let count = Int.random(in: 1...4, using: &generator)
            let units = (0..<count).map { n in
                nal(isIDR && n == 0 ? 5 : 1, [1, 2, 600, 1198, 1199, 1200, 1201, 2397, 2398, 9000].randomElement(using: &generator)!,
                    seed: UInt8(truncatingIfNeeded: frame &+ n))
            }
            let timestamp = stream.timestamp(ticks: Int64(frame) * 3000, timescale: 90_000)
            let payloads = packetizer.payloads(units.map { $0[...] }, parameterSets: [sps, pps])
            XCTAssertTrue(payloads.allSatisfy { $0.count <= 1200 })
            let packets = stream.packets(payloads, timestamp: timestamp)
            XCTAssertEqual(packets.filter(\.marker).count, 1)
            XCTAssertTrue(packets.last!.marker)
            var out: [H264Depacketizer.AccessUnit] = []
            for packet in packets {
                if let unit = depacketizer.push(try RTPPacket(parsing: packet.serialized())) { out.append(unit) }
            }
            XCTAssertEqual(out.count, 1, "frame \(frame)")
            XCTAssertEqual(out.first?.timestamp, timestamp)
            XCTAssertEqual(out.first?.units, (isIDR ? [sps, pps] : []) + units, "frame \(frame)")
            XCTAssertEqual(out.first?.complete, true)
        }
        XCTAssertLessThan(stream.nextSequence, 65_500, "the sequence number wrapped")
    }

    func testALostFragmentMarksItsAccessUnitIncomplete() {
        var stream = RTPStream(ssrc: 1, payloadType: 96, clockRate: 90_000, firstSequence: 0, timestampOffset: 0)
        let big = nal(5, 5000), small = nal(1, 100)
        var packets = stream.packets(H264Packetizer().payloads([small[...], big[...]]), timestamp: 0)
        XCTAssertEqual(packets.count, 6, "the small unit alone, then five fragments")
        packets.remove(at: 3)
        var depacketizer = H264Depacketizer()
        let unit = packets.compactMap { depacketizer.push($0) }.first
        XCTAssertEqual(unit?.units, [small], "the damaged unit is dropped")
        XCTAssertEqual(unit?.complete, false)
        // The next unit is whole again.
        let next = stream.packets(H264Packetizer().payloads([small[...]]), timestamp: 3000).compactMap { depacketizer.push($0) }.first
        XCTAssertEqual(next?.complete, true)
    }

    func testMalformedPayloadsOnlyMarkTheirUnitIncomplete() {
        var depacketizer = H264Depacketizer()
        let bad: [[UInt8]] = [[], [24, 0, 9, 1], [24, 0], [28, 0x80], [28, 0x05, 1, 2], [26, 1, 2]]
        for (n, payload) in bad.enumerated() {
            let timestamp = UInt32(n) * 3000
            XCTAssertNil(depacketizer.push(RTPPacket(payloadType: 96, sequenceNumber: UInt16(3 * n), timestamp: timestamp, ssrc: 1, payload: payload)))
            let unit = depacketizer.push(RTPPacket(marker: true, payloadType: 96, sequenceNumber: UInt16(3 * n + 1), timestamp: timestamp,
                                                   ssrc: 1, payload: [0x61, 1]))
            XCTAssertEqual(unit, .init(timestamp: timestamp, units: [[0x61, 1]], complete: false), "\(payload)")
            // The next unit, whole, is complete again.
            let next = depacketizer.push(RTPPacket(marker: true, payloadType: 96, sequenceNumber: UInt16(3 * n + 2), timestamp: timestamp + 1500,
                                                   ssrc: 1, payload: [0x61, 2]))
            XCTAssertEqual(next?.complete, true)
        }
    }
}

final class RTPStreamTests: XCTestCase {
    func testTimestampsRescaleOffsetAndWrap() {
        let video = RTPStream(ssrc: 1, payloadType: 96, clockRate: 90_000, firstSequence: 0, timestampOffset: 10)
        XCTAssertEqual(video.timestamp(ticks: 90_000, timescale: 90_000), 90_010)
        XCTAssertEqual(video.timestamp(ticks: 1000, timescale: 1000), 90_010)
        let audio = RTPStream(ssrc: 2, payloadType: 111, clockRate: 48_000, firstSequence: 0, timestampOffset: UInt32.max)
        XCTAssertEqual(audio.timestamp(ticks: 20, timescale: 1000), 959, "wraps modulo 2^32 (RFC 3550 §5.1)")
        XCTAssertEqual(audio.timestamp(ticks: Int64.max / 2, timescale: 1), audio.timestamp(ticks: Int64.max / 2, timescale: 1), "no trap")
    }

    func testPacketsAndOctetsAreCountedForSenderReports() {
        var stream = RTPStream(ssrc: 1, payloadType: 96, clockRate: 90_000, firstSequence: 65_535, timestampOffset: 0)
        let packets = stream.packets([[1, 2], [3]], timestamp: 5, extensions: [.init(id: 1, data: [9])])
        XCTAssertEqual(packets.map(\.sequenceNumber), [65_535, 0])
        XCTAssertEqual(packets.map(\.extensions.count), [1, 0])
        XCTAssertEqual(stream.packetCount, 2)
        XCTAssertEqual(stream.octetCount, 3)
    }
}
