import Foundation
import XCTest
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs
import Media

final class LogTests: XCTestCase {
    final class Lines: @unchecked Sendable {
        var lines: [String] = []
    }

    func testLogfmtAndJSON() {
        let captured = Lines()
        let logfmt = Log(format: .logfmt, write: { captured.lines.append($0) })
        logfmt("segment.stored", ("seq", 3), ("note", "two words"), ("quote", "a\"b"))
        let json = Log(format: .json, write: { captured.lines.append($0) })
        json("stream.ended", ("id", "x"), ("segments", 6), ("ok", true))
        XCTAssertTrue(captured.lines[0].hasPrefix("t_ms="))
        XCTAssertTrue(captured.lines[0].hasSuffix(" level=info event=segment.stored seq=3 note=\"two words\" quote=\"a\\\"b\"\n"), captured.lines[0])
        let object = try? JSONSerialization.jsonObject(with: Data(captured.lines[1].utf8)) as? [String: Any]
        XCTAssertEqual(object?["event"] as? String, "stream.ended")
        XCTAssertEqual(object?["segments"] as? Int, 6)
        XCTAssertEqual(object?["ok"] as? Bool, true)
        XCTAssertNotNil(object?["t_ms"] as? Double)
    }
}
