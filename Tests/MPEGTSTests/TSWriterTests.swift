import Media
import XCTest
@testable import MPEGTS

final class TSWriterTests: XCTestCase {
    static let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1F, 0xAC]
    static let pps: [UInt8] = [0x68, 0xEE, 0x3C, 0x80]

    /// A picture of one slice NAL unit of `size` bytes, length-prefixed.
    static func picture(sync: Bool, size: Int) -> [UInt8] {
        [0, 0, UInt8(size >> 8), UInt8(size & 0xFF), sync ? 0x65 : 0x41] + [UInt8](repeating: 0xAB, count: size - 1)
    }

    func testTheCRCIsMPEG2s() {
        XCTAssertEqual(CRC32MPEG2.checksum(Array("123456789".utf8)), 0x0376_E6E7)
    }

    func testTimestampsAndPCRsInTheirBits() {
        // PTS 0x1_2345_6789 (33 bits) with '0010' and marker bits (§2.4.3.7).
        let bytes = TSWriter.timestamp(0x1_2345_6789, marker: 2)
        let back = (Int64(bytes[0] >> 1) & 7) << 30 | Int64(bytes[1]) << 22 | Int64(bytes[2] >> 1) << 15 | Int64(bytes[3]) << 7 | Int64(bytes[4] >> 1)
        XCTAssertEqual(back, 0x1_2345_6789)
        XCTAssertEqual(bytes[0] >> 4, 2)
        XCTAssertEqual([bytes[0] & 1, bytes[2] & 1, bytes[4] & 1], [1, 1, 1], "marker bits")
        let pcr = TSWriter.pcr(0x1_2345_6789)
        let base = Int64(pcr[0]) << 25 | Int64(pcr[1]) << 17 | Int64(pcr[2]) << 9 | Int64(pcr[3]) << 1 | Int64(pcr[4] >> 7)
        XCTAssertEqual(base, 0x1_2345_6789)
    }

    func testADTSHeaderSaysTheProfileRateChannelsAndLength() throws {
        let config = try AudioSpecificConfig(bytes: [0x11, 0x90])  // AAC-LC, 48 kHz, stereo
        let header = TSWriter.adts(config, length: 300)
        XCTAssertEqual(header.count, 7)
        XCTAssertEqual(header[0], 0xFF)
        XCTAssertEqual(header[1] & 0xF6, 0xF0, "sync, MPEG-4, layer 0")
        XCTAssertEqual(header[2] >> 6, 1, "profile: AAC LC (object type 2) - 1")
        XCTAssertEqual((header[2] >> 2) & 0xF, 3, "48 kHz")
        XCTAssertEqual((header[2] & 1) << 2 | header[3] >> 6, 2, "two channels")
        let length = Int(header[3] & 3) << 11 | Int(header[4]) << 3 | Int(header[5] >> 5)
        XCTAssertEqual(length, 307)
    }

    /// Ten seconds of a stream at 30 pictures a second with an IDR every two, and AAC at
    /// 48 kHz: whole packets, no continuity gap, PAT/PMT before every IDR and often, a PCR
    /// at least every 100 ms, each picture and frame a PES of its own.
    func testAStreamIsWhatAReceiverReliesOn() throws {
        var writer = TSWriter(audio: try AudioSpecificConfig(bytes: [0x11, 0x90]))
        var stream: [UInt8] = []
        var events: [(Int64, Bool)] = (0..<300).map { (Int64($0) * 3000, true) } + (0..<469).map { (Int64($0) * 1920, false) }
        events.sort { $0.0 < $1.0 }
        var pictures = 0
        for (time, video) in events {
            if video {
                let sync = pictures % 60 == 0
                stream += writer.video(Self.picture(sync: sync, size: sync ? 20_000 : 900 + pictures % 7), isSync: sync,
                                       sps: Self.sps, pps: Self.pps, time: time)
                pictures += 1
            } else {
                stream += writer.audio([UInt8](repeating: 0x21, count: 180 + Int(time % 5)), time: time)
            }
        }
        let report = TSCheck.check(stream)
        XCTAssertEqual(report.problems, [])
        XCTAssertEqual(report.starts[TSWriter.videoPID], 300)
        XCTAssertEqual(report.starts[TSWriter.audioPID], 469)
        // Ten seconds of the stream's own clock (no time is measured): tables at least every 100 ms of it.
        XCTAssertGreaterThanOrEqual(report.tables, 100, "at least one PAT per 100 ms of stream time")
    }

    func testTheCheckerFindsWhatIsWrong() {
        var writer = TSWriter(audio: nil)
        var stream: [UInt8] = []
        for index in 0..<10 {
            stream += writer.video(Self.picture(sync: index == 0, size: 400), isSync: index == 0, sps: Self.sps, pps: Self.pps,
                                   time: Int64(index) * 18_000)  // 200 ms apart: the PCRs too
        }
        var report = TSCheck.check(stream)
        XCTAssertTrue(report.problems.contains { $0.contains("PCR 200.0 ms") }, "\(report.problems)")
        // A lost packet: the next one's counter is not the one after.
        stream.removeSubrange(188 * 3..<188 * 4)
        report = TSCheck.check(stream)
        XCTAssertTrue(report.problems.contains { $0.contains("continuity") }, "\(report.problems)")
        // Packets written and never sent, said so: no problem.
        var sender = TSWriter(audio: nil)
        var sent = sender.video(Self.picture(sync: true, size: 4000), isSync: true, sps: Self.sps, pps: Self.pps, time: 0)
        _ = sender.video(Self.picture(sync: false, size: 4000), isSync: false, sps: Self.sps, pps: Self.pps, time: 3000)
        sender.discontinuity()
        sent += sender.video(Self.picture(sync: true, size: 4000), isSync: true, sps: Self.sps, pps: Self.pps, time: 6000)
        XCTAssertEqual(TSCheck.check(sent).problems, [])
        XCTAssertEqual(TSCheck.check([0x47, 0, 0]).problems, ["3 bytes is not a whole number of 188-byte packets"])
    }
}
