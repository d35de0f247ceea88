import Foundation
import XCTest
import Logging

final class LogTests: XCTestCase {
    final class Lines: @unchecked Sendable {
        var lines: [String] = []
    }

    func testLogfmtAndJSON() {
        let captured = Lines()
        let logfmt = Log(format: .logfmt, write: { captured.lines.append($0) })
        logfmt(Event("segment.stored"), ("seq", 3), ("note", "two words"), ("quote", "a\"b"))
        let json = Log(format: .json, write: { captured.lines.append($0) })
        json(Event("stream.ended"), ("id", "x"), ("segments", 6), ("ok", true))
        XCTAssertTrue(captured.lines[0].hasPrefix("t_ms="))
        XCTAssertTrue(captured.lines[0].hasSuffix(" level=info event=segment.stored seq=3 note=\"two words\" quote=\"a\\\"b\"\n"), captured.lines[0])
        let object = try? JSONSerialization.jsonObject(with: Data(captured.lines[1].utf8)) as? [String: Any]
        XCTAssertEqual(object?["event"] as? String, "stream.ended")
        XCTAssertEqual(object?["segments"] as? Int, 6)
        XCTAssertEqual(object?["ok"] as? Bool, true)
        XCTAssertNotNil(object?["t_ms"] as? Double)
    }

    /// Listeners get the typed event and its level; the console flag travels with the event.
    func testListenersHearTheEventItself() {
        let heard = Lines()
        let log = Log.silent { event, level, fields in heard.lines.append("\(event.name) \(event.onConsole) \(level) \(fields.count)") }
        log(Event("camera.lost", console: true), level: .error, ("device", "/dev/video0"))
        log(Event("upload.ok"), ("path", "a"), ("bytes", 1))
        XCTAssertEqual(heard.lines, ["camera.lost true error 1", "upload.ok false info 2"])
    }
}
