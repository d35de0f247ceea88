import Basics
import XCTest

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

final class UTCDateTests: XCTestCase {
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
