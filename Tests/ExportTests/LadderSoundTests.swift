import Foundation
import XCTest
@testable import Export
import HLS
import TestSupport

/// The sound of a ladder stream, a rendition of its own.
final class LadderSoundTests: XCTestCase {
    /// A microphone that stops delivering: a ladder's sound is a rendition of its own,
    /// which players need beside the pictures, so it goes on as silence rather than stop.
    func testALadderWhoseMicrophoneStopsGoesOnWithSilence() throws {
        var live: (pictures: Int, sound: Int) = (0, 0)
        let (root, id) = try storedStream(ladder: true, soundUntil: 100) { directory in
            func count(_ name: String) throws -> Int {
                try XCTUnwrap(MediaPlaylist(parsing: try String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8))).entries.count
            }
            live = (try count("v0/playlist.m3u8"), try count("audio/playlist.m3u8"))
        }
        XCTAssertEqual(live.pictures, 5, "the last segment ends with the stream")
        XCTAssertGreaterThanOrEqual(live.sound, 4, "the sound keeps up within a segment while live: \(live)")
        let directory = "\(root)/streams/\(id)"
        XCTAssertEqual(StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }, [])
        let probe = try Probe(try { () throws -> String in
            let file = root + "/whole.mp4"
            try Data(try StreamExport.make(root: root, ExportRequest(stream: id)).file.readAll()).write(to: URL(fileURLWithPath: file))
            return file
        }())
        XCTAssertEqual(probe.audioSeconds, probe.videoSeconds, accuracy: 0.05, "sound to the end, silent after the microphone stopped")
    }
}
