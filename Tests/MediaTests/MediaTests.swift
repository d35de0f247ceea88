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

    func testUTCDateFormatsAndParses() {
        XCTAssertEqual(UTCDate.iso8601(milliseconds: 0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(UTCDate.iso8601(milliseconds: 1_796_229_753_123), "2026-12-02T16:42:33.123Z")
        XCTAssertEqual(UTCDate.compact(milliseconds: 1_796_229_753_123), "20261202T164233Z")
        XCTAssertEqual(UTCDate.parse("2026-12-02T16:42:33.123Z"), 1_796_229_753_123)
        XCTAssertEqual(UTCDate.parse("2026-12-02T17:42:33.1+01:00"), 1_796_229_753_100)
        XCTAssertEqual(UTCDate.parse("2024-02-29T00:00:00Z").map { UTCDate.iso8601(milliseconds: $0) }, "2024-02-29T00:00:00.000Z")
        XCTAssertNil(UTCDate.parse("2026-12-02 16:42:33Z"))
        XCTAssertNil(UTCDate.parse("2026-12-02T16:42:33"))
        XCTAssertEqual(UTCDate.httpDate(seconds: 1_796_229_753), "Wed, 02 Dec 2026 16:42:33 GMT")
        XCTAssertEqual(UTCDate.httpDate(seconds: 0), "Thu, 01 Jan 1970 00:00:00 GMT")
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

/// The text helpers that stand in for Foundation's String(format:) and trimming.
final class TextTests: XCTestCase {
    func testFixedPointMatchesPrintf() {
        XCTAssertEqual(2.0.fixed(1), "2.0")
        XCTAssertEqual(0.05.fixed(1), "0.1")
        XCTAssertEqual((-0.05).fixed(1), "-0.1")
        XCTAssertEqual((-0.04).fixed(1), "0.0")
        XCTAssertEqual(29.97.fixed(3), "29.970")
        XCTAssertEqual(1234.5.fixed(0), "1235")
        XCTAssertEqual(3.14159.fixed(2), "3.14")
        XCTAssertEqual(0.001.fixed(2), "0.00")
        XCTAssertEqual(Double.nan.fixed(1), "nan")
    }

    func testZeroPaddingAndTrimming() {
        XCTAssertEqual(7.zeroPadded(2), "07")
        XCTAssertEqual(123.zeroPadded(2), "123")
        XCTAssertEqual((-5).zeroPadded(3), "-005")
        XCTAssertEqual(" \tkey = value\r\n".trimmingWhitespace(), "key = value")
        XCTAssertEqual("   ".trimmingWhitespace(), "")
    }
}

final class SHA256Tests: XCTestCase {
    /// FIPS 180-4 examples (NIST's SHA256.pdf), and lengths about the padding's edges.
    func testKnownDigests() {
        XCTAssertEqual(SHA256.hex([]), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hex(Array("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(SHA256.hex([UInt8](repeating: 0x61, count: 1_000_000)), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        XCTAssertEqual(SHA256.hex([UInt8](repeating: 0x61, count: 55)), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        XCTAssertEqual(SHA256.hex([UInt8](repeating: 0x61, count: 64)), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
    }
}
