import Foundation
import Layout
import XCTest
@testable import HLS
import MP4
import TestSupport

/// A ladder's rules: the audio group (V3, V4, C3, V7) and the renditions' alignment (V6,
/// S14 across renditions), on a ladder the real StreamWriter wrote.
final class CheckRenditionsTests: XCTestCase {
    var root = ""
    var stream: String { root + "/streams/ladder" }
    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-renditions-\(UUID().uuidString)").path
        try StreamBuilder.ladder(root: root)
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: root) }

    func findings() -> [Finding] { StreamChecker.check { FileManager.default.contents(atPath: self.stream + "/" + $0).map { Array($0) } } }
    func rules() -> Set<String> { Set(findings().filter { $0.severity == .error }.map(\.rule)) }
    func edit(_ name: String, _ change: (String) -> String) throws {
        let path = stream + "/" + name
        try change(try String(contentsOfFile: path, encoding: .utf8)).write(toFile: path, atomically: true, encoding: .utf8)
    }

    func testTheWrittenLadderPasses() throws {
        XCTAssertEqual(findings(), [])
        let index = try XCTUnwrap(MultivariantPlaylist(parsing: try String(contentsOfFile: stream + "/index.m3u8", encoding: .utf8)))
        XCTAssertEqual(MultivariantPlaylist(parsing: index.render()), index, "reads back what it renders")
        XCTAssertEqual(index.mediaPlaylists, ["v0/playlist.m3u8", "v1/playlist.m3u8", "audio/playlist.m3u8", "v0/iframes.m3u8", "v1/iframes.m3u8"])
        XCTAssertEqual(index.variants.map(\.codecs), [["avc1.64001f", "mp4a.40.2"], ["avc1.64001f", "mp4a.40.2"]])
        XCTAssertEqual(StreamLayout.mainPlaylist(index: index.render()), "v0/playlist.m3u8")
    }

    /// A rung that carried the one below for a while (the heat dropped it): its init
    /// changes after a discontinuity, and every rendition breaks at the same segment.
    func testACarriedRungNeedsADiscontinuityEverywhere() throws {
        /// `tags` before segment 2's own tags (its EXTINF, date, byte range).
        func before2(_ tags: [String]) -> (String) -> String {
            { text in
                var lines = text.components(separatedBy: "\n")
                var at = lines.firstIndex(of: "seg/000002.m4s")!
                while ["#EXTINF", "#EXT-X-BYTERANGE", "#EXT-X-PROGRAM-DATE-TIME"].contains(where: lines[at - 1].hasPrefix) { at -= 1 }
                lines.insert(contentsOf: tags, at: at)
                return lines.joined(separator: "\n")
            }
        }
        for name in ["v0/playlist.m3u8", "v0/iframes.m3u8"] { try edit(name, before2(["#EXT-X-DISCONTINUITY", "#EXT-X-MAP:URI=\"../v1/init.mp4\""])) }
        XCTAssertEqual(rules(), ["V6"], "the other renditions have no discontinuity there")
        for name in ["v1/playlist.m3u8", "v1/iframes.m3u8", "audio/playlist.m3u8"] { try edit(name, before2(["#EXT-X-DISCONTINUITY"])) }
        XCTAssertEqual(findings(), [])
        for name in ["v0/playlist.m3u8", "v0/iframes.m3u8"] {
            try edit(name) { $0.replacingOccurrences(of: "#EXT-X-DISCONTINUITY\n#EXT-X-MAP", with: "#EXT-X-MAP") }
        }
        XCTAssertTrue(rules().contains("P9"), "a new init without a discontinuity: \(findings())")
    }

    func testAnAudioGroupNobodyDeclared() throws {
        try edit("index.m3u8") { $0.replacingOccurrences(of: "AUDIO=\"audio\"", with: "AUDIO=\"sound\"") }
        XCTAssertEqual(rules(), ["V3"])
    }

    /// Edits the STREAM-INF line of variant `uri`.
    func editVariant(_ uri: String, _ change: @escaping (String) -> String) throws {
        try edit("index.m3u8") { text in
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let at = lines.firstIndex(of: uri)! - 1
            lines[at] = change(lines[at])
            return lines.joined(separator: "\n")
        }
    }

    func testCodecsWithoutTheGroupsAudio() throws {
        try editVariant("v1/playlist.m3u8") { $0.replacingOccurrences(of: ",mp4a.40.2", with: "") }
        XCTAssertEqual(rules(), ["C3"])
    }

    func testABandwidthWithoutTheSound() throws {
        let index = try XCTUnwrap(MultivariantPlaylist(parsing: try String(contentsOfFile: stream + "/index.m3u8", encoding: .utf8)))
        let v1 = try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: stream + "/v1/playlist.m3u8", encoding: .utf8)))
        let pictures = v1.measuredBitrates { FileManager.default.contents(atPath: self.stream + "/v1/" + $0).map { Int64($0.count) } }.peak
        try editVariant("v1/playlist.m3u8") {
            $0.replacingOccurrences(of: "BANDWIDTH=\(index.variants[1].bandwidth),", with: "BANDWIDTH=\(pictures + 1),")
        }
        XCTAssertEqual(rules(), ["V7"], "the pictures alone fit, the pictures and their sound do not")
    }

    func testTwoDefaultsInOneGroup() throws {
        try edit("index.m3u8") { text in
            let media = text.split(separator: "\n").first { $0.hasPrefix("#EXT-X-MEDIA:") }!
            return text.replacingOccurrences(of: media, with: media + "\n" + media.replacingOccurrences(of: "NAME=\"Main\"", with: "NAME=\"Other\""))
        }
        XCTAssertEqual(rules(), ["V4"])
    }

    func testRungsThatDoNotHoldTheSameTimes() throws {
        // v1's second segment holds the third's frames.
        let v1 = stream + "/v1/seg/"
        try FileManager.default.removeItem(atPath: v1 + "000002.m4s")
        try FileManager.default.copyItem(atPath: v1 + "000003.m4s", toPath: v1 + "000002.m4s")
        XCTAssertTrue(findings().contains { $0.rule == "V6" && $0.location == "v1/playlist.m3u8" && $0.message.hasPrefix("segment 2 is 14.0 s") },
                      "\(findings())")
    }

    func testSoundThatDoesNotStartWithItsPictures() throws {
        // The sound's segments swapped: the second holds the third's time.
        let audio = stream + "/audio/seg/"
        try FileManager.default.removeItem(atPath: audio + "000002.m4s")
        try FileManager.default.copyItem(atPath: audio + "000003.m4s", toPath: audio + "000002.m4s")
        XCTAssertTrue(findings().contains { $0.rule == "S14" && $0.location == "audio segment 2" }, "\(findings())")
    }
}
