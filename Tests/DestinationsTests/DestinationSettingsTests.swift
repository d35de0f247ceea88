import Destinations
import RTMP
import XCTest

final class DestinationSettingsTests: XCTestCase {
    func testAPresetGivesTheIngestAndTheKeyIsKept() throws {
        var settings = DestinationSettings(name: "yt")
        settings.preset = .youtube
        settings.key = "abcd-efgh-ijkl-mnop"
        let (url, key) = try settings.target()
        XCTAssertEqual(url, try RTMPURL("rtmps://a.rtmps.youtube.com:443/live2"))
        XCTAssertEqual(key, "abcd-efgh-ijkl-mnop")
    }

    func testAWholeURLWithoutAKeyEndsInTheStreamName() throws {
        var settings = DestinationSettings(name: "own")
        settings.url = "rtmp://127.0.0.1:1935/live/camera"
        let (url, key) = try settings.target()
        XCTAssertEqual(url.app, "live")
        XCTAssertEqual(key, "camera")
        XCTAssertEqual(url.tcURL, "rtmp://127.0.0.1/live")
        settings.key = "camera"
        XCTAssertEqual(try settings.target().url.app, "live", "the whole URL pasted beside its key: the key is not the app's")
    }

    func testSRTTakesItsOptionsFromTheURLAndItsOwnKeys() throws {
        var settings = DestinationSettings(name: "truck")
        settings.url = "srt://truck.example:9000?streamid=%23!::r=live/cam&passphrase=correct-horse&latency=500"
        XCTAssertTrue(settings.isSRT)
        var target = try settings.srtTarget()
        XCTAssertEqual([target.host, "\(target.port)", target.streamID, target.passphrase, "\(target.latencyMs)"],
                       ["truck.example", "9000", "#!::r=live/cam", "correct-horse", "500"])
        settings.key = "other"
        settings.latencyMs = 2000
        target = try settings.srtTarget()
        XCTAssertEqual(target.streamID, "other")
        XCTAssertEqual(target.latencyMs, 2000)
        XCTAssertEqual(target.shown, "srt://truck.example:9000", "never the options")
        settings.passphrase = "short"
        XCTAssertThrowsError(try settings.srtTarget()) { XCTAssertEqual("\($0)", "destination.truck: an SRT passphrase has 10 to 79 characters (not shown)") }
        for bad in ["srt://host", "srt://host:0", "srt://:9000", "srt://host:9000?mode=push", "srt://host:9000?foo=1", "srt://host:123456"] {
            XCTAssertThrowsError(try SRTURL(bad), bad)
        }
        let listening = try SRTURL("srt://:9000?mode=listener")
        XCTAssertTrue(listening.listener)
        XCTAssertEqual(listening.shown, "srt://:9000 (listening)")
    }

    func testWhatCannotWorkIsSaidWithoutTheKey() {
        var settings = DestinationSettings(name: "tw")
        XCTAssertThrowsError(try settings.target()) { XCTAssertEqual("\($0)", "destination.tw: no url (set url, or a preset such as youtube)") }
        settings.url = "rtmp://host/app"
        XCTAssertThrowsError(try settings.target()) { XCTAssertTrue("\($0)".contains("no key"), "\($0)") }
        settings.key = "secret key with spaces"
        XCTAssertThrowsError(try settings.target()) { error in
            XCTAssertTrue("\(error)".contains("not shown"), "\(error)")
            XCTAssertFalse("\(error)".contains("secret key"), "\(error)")
        }
        settings.url = "http://host/app"
        settings.key = "k"
        XCTAssertThrowsError(try settings.target()) { XCTAssertTrue("\($0)".hasPrefix("destination.tw: url: "), "\($0)") }
    }

    func testNames() {
        XCTAssertTrue(DestinationSettings.validName("youtube"))
        XCTAssertTrue(DestinationSettings.validName("my_server-2"))
        XCTAssertFalse(DestinationSettings.validName(""))
        XCTAssertFalse(DestinationSettings.validName("YouTube"))
        XCTAssertFalse(DestinationSettings.validName("a.b"))
        XCTAssertFalse(DestinationSettings.validName(String(repeating: "a", count: 33)))
    }

    func testAPlatformSaysWhichOfItsLimitsAStreamBreaks() {
        XCTAssertEqual(Platform.twitch.problems(keyframeSeconds: 2, videoBitrate: 4_000_000, audioBitrate: 128_000, sampleRate: 48_000), [])
        let problems = Platform.twitch.problems(keyframeSeconds: 4, videoBitrate: 8_000_000, audioBitrate: 192_000, sampleRate: 32_000)
        XCTAssertEqual(problems.count, 4, "\(problems)")
        XCTAssertTrue(problems[0].contains("a keyframe every 4 s") && problems[0].contains("hls.segment_seconds"), problems[0])
        XCTAssertTrue(problems[1].contains("8000 kbit/s"), problems[1])
        XCTAssertTrue(problems[3].contains("32000 Hz"), problems[3])
        XCTAssertEqual(Platform.facebook.problems(keyframeSeconds: 2, videoBitrate: 1_000_000, audioBitrate: nil, sampleRate: nil), [])
        XCTAssertEqual(Platform.named("kick"), .kick)
        XCTAssertNil(Platform.named("myspace"))
    }
}
