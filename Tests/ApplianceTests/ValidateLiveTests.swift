import XCTest
@testable import Appliance
import Fetch
import HLS

/// `onair validate URL` against servers that break the low-latency protocol: canned
/// answers by URL, so each failure is exactly one thing.
final class ValidateLiveTests: XCTestCase {
    final class CannedServer: Getter {
        var answers: [String: [UInt8]] = [:]
        var refused: Set<String> = []
        func get(_ url: String) throws -> [UInt8] {
            if refused.contains(url) { throw FetchError("\(url): HTTP 400", status: 400) }
            guard let body = answers[url] else { throw FetchError("\(url): HTTP 404", status: 404) }
            return body
        }
    }

    let base = "http://board/streams/s/"

    func playlist(parts: Int, hint: String) -> String {
        var playlist = MediaPlaylist(targetDuration: 2)
        playlist.entries = [.init(uri: "seg/000001.m4s", duration: "2.000", programDateTimeMs: nil)]
        let made = (0..<parts).map {
            PartReport(sequence: 2, index: $0, bytes: [], videoStart: 0, videoDuration: 30_000, videoTimescale: 90_000,
                       independent: $0 == 0, endsSegment: false)
        }
        var text = LowLatencyPlaylist(playlist: playlist, timing: PartTiming(ticks: 30_000, targetDuration: 2), parts: [:],
                                      partial: made, next: (2, parts)).render()
        text = text.replacingOccurrences(of: "part/000002.\(parts).m4s", with: hint)
        return text
    }

    func run(_ server: CannedServer) throws -> [String] {
        var validation = LiveValidation(url: base + "playlist.m3u8", getter: server)
        return try validation.run(seconds: 1).findings.map { "\($0.severity) \($0.rule)" }
    }

    func testAReloadWithoutTheHintedPartAndAPartWithoutASegmentAnswered() throws {
        let server = CannedServer()
        server.answers[base + "playlist.m3u8"] = Array(playlist(parts: 1, hint: "part/000002.1.m4s").utf8)
        server.answers[base + "part/000002.1.m4s"] = [0]
        // The reload lists a part, but not the one it hinted.
        server.answers[base + "playlist.m3u8?_HLS_msn=2&_HLS_part=1"] = Array(playlist(parts: 2, hint: "part/000002.2.m4s")
            .replacingOccurrences(of: "part/000002.1.m4s", with: "part/other.m4s").utf8)
        server.answers[base + "playlist.m3u8?_HLS_part=0"] = Array("#EXTM3U\n".utf8)
        XCTAssertEqual(try run(server), ["error LL11", "error LL11"])
        server.refused = [base + "playlist.m3u8?_HLS_part=0"]
        XCTAssertEqual(try run(server), ["error LL11"])
    }

    func testAHintedPartThatNeverComes() throws {
        let server = CannedServer()
        server.answers[base + "playlist.m3u8"] = Array(playlist(parts: 1, hint: "part/000002.1.m4s").utf8)
        server.refused = [base + "playlist.m3u8?_HLS_part=0"]
        XCTAssertEqual(try run(server), ["error LL8"])
    }

    func testAPlaylistWithoutPartsIsNotFollowed() {
        let server = CannedServer()
        server.answers[base + "playlist.m3u8"] = Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.000,\nseg/1.m4s\n".utf8)
        XCTAssertThrowsError(try run(server)) { XCTAssertTrue("\($0)".contains("not a low-latency playlist"), "\($0)") }
    }
}
