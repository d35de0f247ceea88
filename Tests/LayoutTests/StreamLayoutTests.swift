import Layout
import XCTest

final class StreamLayoutTests: XCTestCase {
    let layout = StreamLayout(root: "/data")

    func testEveryPathOfAStreamAndARecordingIsBelowTheRoot() {
        XCTAssertEqual(layout.stream("s1"), "/data/streams/s1")
        XCTAssertEqual(layout.staging("s1"), "/data/streams/.s1.tmp")
        XCTAssertEqual(layout.file("s1", StreamLayout.path(StreamLayout.playlist, in: StreamLayout.rung(1))), "/data/streams/s1/v1/playlist.m3u8")
        XCTAssertEqual(layout.recording("r"), "/data/recordings/r.mp4")
        XCTAssertEqual(layout.recordingPart("r"), "/data/recordings/r.mp4.part")
        XCTAssertEqual(layout.recordingInfo("r"), "/data/recordings/r.json")
        XCTAssertEqual(layout.publishedIndex("k"), "/data/published/k.json")
        XCTAssertEqual(Set(layout.paths(of: "x")).count, 5, "an id is free only when none of its five paths exists")
        XCTAssertEqual(StreamLayout.url(ofStream: "s1"), "/streams/s1/index.m3u8")
    }

    func testSegmentAndPartNamesReadBack() {
        XCTAssertEqual(StreamLayout.segment(1), "seg/000001.m4s")
        XCTAssertEqual(StreamLayout.segment(1_234_567), "seg/1234567.m4s", "past six digits the name grows")
        XCTAssertEqual(StreamLayout.part(sequence: 12, index: 3), "part/000012.3.m4s")
        let numbers = StreamLayout.partNumbers(StreamLayout.part(sequence: 12, index: 3))
        XCTAssertEqual(numbers?.sequence, 12)
        XCTAssertEqual(numbers?.index, 3)
        for bad in ["part/1.m4s", "part/x.1.m4s", "part/1.2.mp4", "seg/000001.m4s", "part/9999999999.1.m4s", "part/-1.2.m4s"] {
            XCTAssertNil(StreamLayout.partNumbers(bad), bad)
        }
    }

    func testTheMainPlaylistIsTheFirstVariantInsideTheStream() {
        let ladder = "#EXTM3U\r\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",URI=\"audio/playlist.m3u8\"\r\n"
            + "#EXT-X-STREAM-INF:BANDWIDTH=1\r\n  v0/playlist.m3u8  \r\n#EXT-X-STREAM-INF:BANDWIDTH=1\r\nv1/playlist.m3u8\r\n"
        XCTAssertEqual(StreamLayout.mainPlaylist(index: ladder), "v0/playlist.m3u8")
        XCTAssertEqual(StreamLayout.mainPlaylist(index: nil), "playlist.m3u8")
        XCTAssertEqual(StreamLayout.mainPlaylist(index: "#EXTM3U\nstray.m3u8\n"), "playlist.m3u8", "a URI line without STREAM-INF is no variant")
        for outside in ["../other/playlist.m3u8", "/etc/passwd", "http://example.com/p.m3u8", "v0/../../x.m3u8"] {
            XCTAssertEqual(StreamLayout.mainPlaylist(index: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n\(outside)\n"), "playlist.m3u8", outside)
        }
    }

    func testNamesFromOutsideAndNamesFoundOnDisk() {
        for id in ["20261204T101500Z-cam", "boot-1-0000000001-cam"] { XCTAssertTrue(StreamLayout.isID(id), id) }
        for id in ["", ".s1.tmp", "a/b", "..", "a\0b"] { XCTAssertFalse(StreamLayout.isID(id), id) }
        let names = ["b", ".a.tmp", "a", ".published", "c.corrupt"]
        XCTAssertEqual(StreamLayout.streamIDs(names), ["a", "b", "c.corrupt"])
        XCTAssertEqual(StreamLayout.stagings(names), [".a.tmp"])
        XCTAssertEqual(StreamLayout.recordingID("r.mp4.part")?.id, "r")
        XCTAssertEqual(StreamLayout.recordingID("r.mp4.part")?.finished, false)
        XCTAssertEqual(StreamLayout.recordingID("r.mp4")?.finished, true)
        XCTAssertNil(StreamLayout.recordingID("r.json"))
        XCTAssertEqual(StreamLayout.carriedMap(from: "v1"), "../v1/init.mp4")
        XCTAssertEqual(StreamLayout.folder(of: "v0/playlist.m3u8"), "v0")
        XCTAssertEqual(StreamLayout.folder(of: "playlist.m3u8"), "")
        XCTAssertEqual(StreamLayout.name(of: "v0/seg/000001.m4s"), "000001.m4s")
    }
}
