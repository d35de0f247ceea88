import XCTest
@testable import Media
import TestSupport

final class TimeTests: XCTestCase {
    func testRescaleRoundsToNearestWithoutOverflow() {
        XCTAssertEqual(rescale(1, from: 30, to: 90_000), 3000)
        XCTAssertEqual(rescale(33_333_333, from: 1_000_000_000, to: 90_000), 3000)
        XCTAssertEqual(rescale(33_333_334, from: 1_000_000_000, to: 90_000), 3000)
        XCTAssertEqual(rescale(-33_333_333, from: 1_000_000_000, to: 90_000), -3000)
        XCTAssertEqual(rescale(5, from: 10, to: 1), 1, "halves round away from zero")
        XCTAssertEqual(rescale(-5, from: 10, to: 1), -1)
        // 100 days of nanoseconds × 90 kHz overflows Int64 in the product.
        let hundredDays: Int64 = 100 * 86_400 * 1_000_000_000
        XCTAssertEqual(rescale(hundredDays, from: 1_000_000_000, to: 90_000), 100 * 86_400 * 90_000)
        // A result past Int64 (values from a file) saturates instead of trapping.
        XCTAssertEqual(rescale(.max, from: 1, to: 90_000), .max)
        XCTAssertEqual(rescale(.min + 1, from: 1, to: 4_294_967_295), .min)
        XCTAssertEqual(rescale(Int64.max / 2, from: 1, to: 3), .max)
    }

    /// Issue 29: numbers from outside become integers only through checked conversions.
    func testOutsideSecondsAreBoundedAndConversionsSaturate() {
        XCTAssertEqual(MediaSeconds(parsing: "2.5")?.value, 2.5)
        XCTAssertEqual(MediaSeconds(parsing: "1e9")?.ticks(4_294_967_295), 4_294_967_295_000_000_000)
        for text in ["1e19", "1e308", "-1", "-0.1", "nan", "inf", "-inf", "", "0x10", "1e9000", String(repeating: "9", count: 100)] {
            XCTAssertNil(MediaSeconds(parsing: text), text)
        }
        XCTAssertEqual(int64Saturating(1e19), .max)
        XCTAssertEqual(int64Saturating(-1e19), .min)
        XCTAssertEqual(int64Saturating(.nan), 0)
        XCTAssertEqual(int64Saturating(9_223_372_036_854_775_807.0), .max, "2^63 as a Double")
        XCTAssertEqual(int64Saturating(-2.7), -2)
        XCTAssertEqual(ticksSaturating(seconds: .infinity, timescale: 90_000), .max)
        XCTAssertEqual(ticksSaturating(seconds: 2, timescale: 90_000), 180_000)
    }

    func testDecimalSeconds() {
        XCTAssertEqual(decimalSeconds(180_000, timescale: 90_000), "2.000")
        XCTAssertEqual(decimalSeconds(183_003, timescale: 90_000), "2.033")
        XCTAssertEqual(decimalSeconds(45, timescale: 90_000), "0.001", "0.0005 s rounds up")
        XCTAssertEqual(decimalSeconds(-1024, timescale: 48_000), "-0.021")
        XCTAssertEqual(decimalSeconds(30_000, timescale: 1000, places: 0), "30")
    }
}

final class H264Tests: XCTestCase {
    func testSplitsAnnexBWithThreeAndFourByteStartCodes() {
        let stream: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 4, 5, 0]
        let units = H264.splitAnnexB(stream).map(Array.init)
        XCTAssertEqual(units, [[0x67, 1, 2], [0x68, 3], [0x65, 4, 5, 0]])
    }

    func testLengthPrefixedRoundTrip() throws {
        let units: [ArraySlice<UInt8>] = [[0x65, 1, 2, 3][...], [0x06, 9][...]]
        let sample = H264.lengthPrefixed(units)
        XCTAssertEqual(sample, [0, 0, 0, 4, 0x65, 1, 2, 3, 0, 0, 0, 2, 0x06, 9])
        XCTAssertEqual(try H264.splitLengthPrefixed(sample).map(Array.init), units.map(Array.init))
        XCTAssertThrowsError(try H264.splitLengthPrefixed([0, 0, 0, 9, 0x65]))
    }

    func testRemovesEmulationPrevention() {
        XCTAssertEqual(H264.rbsp([0x67, 0, 0, 3, 1, 0, 0, 3][...]), [0x67, 0, 0, 1, 0, 0])
    }

    func testParsesX264SPS() throws {
        let sps = try H264SPS(nal: Golden.sps[...])
        XCTAssertEqual(sps.profileIdc, 100)
        XCTAssertEqual(sps.levelIdc, 31)
        XCTAssertEqual(sps.width, 1280)
        XCTAssertEqual(sps.height, 720)
        XCTAssertEqual(sps.codecString, "avc1.64001f")
        XCTAssertThrowsError(try H264SPS(nal: Golden.pps[...]))
        XCTAssertThrowsError(try H264SPS(nal: Golden.sps.prefix(5)))
    }

    func testParsesCroppedBaselineSPS() throws {
        // Baseline 1920x1080 (1088 coded, 8 rows cropped), from a known encoder.
        let sps = try H264SPS(nal: hex("6742c028da01e0089f961000000300100000030320f1832a")[...])
        XCTAssertEqual(sps.profileIdc, 66)
        XCTAssertEqual(sps.width, 1920)
        XCTAssertEqual(sps.height, 1080)
    }
}

final class AACTests: XCTestCase {
    func testAudioSpecificConfig() throws {
        let config = try AudioSpecificConfig(bytes: Golden.audioConfig)
        XCTAssertEqual(config.objectType, 2)
        XCTAssertEqual(config.sampleRate, 48_000)
        XCTAssertEqual(config.channelConfiguration, 1)
        XCTAssertEqual(config.codecString, "mp4a.40.2")
        XCTAssertEqual(try AudioSpecificConfig.aacLC(sampleRate: 48_000, channels: 1).bytes, Golden.audioConfig)
        XCTAssertEqual(try AudioSpecificConfig.aacLC(sampleRate: 44_100, channels: 2).bytes, [0x12, 0x10])
        XCTAssertThrowsError(try AudioSpecificConfig.aacLC(sampleRate: 12_345, channels: 1))
        XCTAssertThrowsError(try AudioSpecificConfig(bytes: [0x17, 0x88]), "sampling index 14 is reserved")
    }
}

final class RotationTests: XCTestCase {
    /// A 4x2 frame whose every byte is its own position, so moves are visible.
    func frame() -> VideoFrame {
        VideoFrame(width: 4, height: 2, planes: Array(0..<12), captureTime: 7, index: 3)
    }

    func testQuarterTurnMovesPixelsClockwise() {
        let turned = frame().rotated(.quarter)
        XCTAssertEqual(turned.width, 2)
        XCTAssertEqual(turned.height, 4)
        // Luma rows 0: [0 1 2 3], 1: [4 5 6 7] → columns read bottom-up.
        XCTAssertEqual(Array(turned.planes[0..<8]), [4, 0, 5, 1, 6, 2, 7, 3])
        XCTAssertEqual(turned.captureTime, 7)
        XCTAssertEqual(turned.index, 3)
    }

    func testFourQuarterTurnsAndTwoHalvesAreIdentity() {
        let original = VideoFrame(width: 6, height: 4, planes: (0..<36).map { UInt8($0 * 7 % 251) }, captureTime: 0, index: 0)
        var turned = original
        for _ in 0..<4 { turned = turned.rotated(.quarter) }
        XCTAssertEqual(turned.planes, original.planes)
        XCTAssertEqual(original.rotated(.half).rotated(.half).planes, original.planes)
        XCTAssertEqual(original.rotated(.quarter).rotated(.threeQuarters).planes, original.planes)
    }
}
