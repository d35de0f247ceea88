import Basics
import Foundation
import XCTest

/// onair's JSON against Foundation's: what one writes the other reads back the same.
final class JSONTests: XCTestCase {
    func testWritesCompactSortedAndLeavesOutNil() {
        let value = JSON.fields(["b": 1, "a": "x/y", "none": nil as String?, "list": [1.5, 2.0], "ok": true,
                                 "nested": JSON.fields(["z": Int64(-3)])])
        XCTAssertEqual(value.text, #"{"a":"x/y","b":1,"list":[1.5,2],"nested":{"z":-3},"ok":true}"#)
    }

    func testNumbersAsJSONEncoderWroteThem() {
        XCTAssertEqual(JSON.number(2), "2")
        XCTAssertEqual(JSON.number(-0.5), "-0.5")
        XCTAssertEqual(JSON.number(20.5), "20.5")
        XCTAssertEqual(JSON.number(0.1), "0.1")
        XCTAssertEqual(JSON.number(1e300), "1e+300")
        XCTAssertEqual(JSON.number(.nan), "null")
        XCTAssertEqual(JSON.number(.infinity), "null")
        for value in [0.1, 1.0 / 3, 123_456.789, 1e-7, -2.5e20] {
            XCTAssertEqual(Double(JSON.number(value)), value, "round trip of \(value)")
        }
    }

    func testStringsEscapeWhatRFC8259Requires() throws {
        let text = "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} é 🎥 /"
        let written = JSON.string(text).text
        XCTAssertEqual(written, #""quote \" backslash \\ newline \n tab \t nul \u0000 bell \u0007 é 🎥 /""#)
        let foundation = try JSONSerialization.jsonObject(with: Data("[\(written)]".utf8)) as? [String]
        XCTAssertEqual(foundation, [text])
        XCTAssertEqual(JSON.parse(Array(written.utf8)), .string(text))
    }

    func testParsesWhatFoundationWrites() throws {
        let object: [String: Any] = ["id": "20261203T160641Z-4a82", "bytes": 556_769, "seconds": 20.5, "frames": 205,
                                     "recording": false, "list": [1, "two", NSNull()], "escaped": "a\u{1}b\"c\\d/é\u{1F3A5}"]
        let data = try JSONSerialization.data(withJSONObject: object)
        let parsed = try XCTUnwrap(JSON.parse(Array(data)))
        XCTAssertEqual(parsed["id"]?.string, "20261203T160641Z-4a82")
        XCTAssertEqual(parsed["bytes"]?.int64, 556_769)
        XCTAssertEqual(parsed["seconds"]?.double, 20.5)
        XCTAssertEqual(parsed["frames"]?.int, 205)
        XCTAssertEqual(parsed["recording"]?.bool, false)
        XCTAssertEqual(parsed["list"], .array([.int(1), .string("two"), .null]))
        XCTAssertEqual(parsed["escaped"]?.string, "a\u{1}b\"c\\d/é\u{1F3A5}")
        XCTAssertEqual(JSON.parse(Array(#" { "a" : [ 1 , -2.5e3 , "\ud83c\udfa5" ] } "#.utf8)),
                       .object(["a": .array([.int(1), .double(-2500), .string("🎥")])]))
    }

    func testWritesWhatFoundationReads() throws {
        let value = JSON.fields(["s": "x\u{1f}\"", "n": -7, "d": 0.25, "a": [JSON.null, .bool(true)]])
        let read = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(value.bytes)) as? [String: Any])
        XCTAssertEqual(read["s"] as? String, "x\u{1f}\"")
        XCTAssertEqual(read["n"] as? Int, -7)
        XCTAssertEqual(read["d"] as? Double, 0.25)
        XCTAssertEqual((read["a"] as? [Any])?.count, 2)
        XCTAssertEqual(JSON.parse(value.bytes), value)
    }

    func testRefusesWhatIsNotJSON() {
        let bad = ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", ".5", "-", "1e", "tru", "nul", "\"\u{1}\"", "\"\\x\"",
                   "\"\\ud800\"", "\"unterminated", "[1] 2", "{\"a\":1,}", "NaN", "'a'", "[1 2]"]
        for text in bad {
            XCTAssertNil(JSON.parse(Array(text.utf8)), text)
        }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        XCTAssertNil(JSON.parse(Array(deep.utf8)), "deeper than 64")
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        XCTAssertNotNil(JSON.parse(Array(fine.utf8)))
    }
}
