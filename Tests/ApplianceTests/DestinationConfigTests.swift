import XCTest
@testable import Appliance
import Destinations

/// `[destination.NAME]` sections: any number, each named by its section, the key a secret.
final class DestinationConfigTests: XCTestCase {
    func settings(_ text: String, overrides: [String] = []) throws -> Settings {
        var s = Settings()
        try ConfigFile.apply(try ConfigFile.parse(text, file: "onair.conf") + overrides.map(ConfigFile.override), to: &s)
        return s
    }

    func testEachSectionIsADestinationAndSetOverridesOne() throws {
        let s = try settings("""
            [destination.youtube]
            preset = youtube
            key = abcd-efgh
            rung = 2
            [destination.studio]
            url = rtmps://studio.example:8443/live
            key = camera1
            enabled = false
            """, overrides: ["destination.studio.enabled=true", "destination.extra.url=rtmp://10.0.0.2/live/cam"])
        XCTAssertEqual(s.destinations.keys.sorted(), ["extra", "studio", "youtube"])
        XCTAssertEqual(s.destinations["youtube"]?.preset, .youtube)
        XCTAssertEqual(s.destinations["youtube"]?.key, "abcd-efgh")
        XCTAssertEqual(s.destinations["youtube"]?.rung, 1, "counted from 1 in onair.conf, the top")
        XCTAssertEqual(s.destinations["studio"]?.rung, 0, "the top rung unless asked")
        XCTAssertEqual(try s.destinations["youtube"]?.target().url.host, "a.rtmps.youtube.com")
        XCTAssertEqual(s.destinations["studio"]?.url, "rtmps://studio.example:8443/live")
        XCTAssertEqual(s.destinations["studio"]?.enabled, true, "--set wins")
        XCTAssertEqual(try s.destinations["extra"]?.target().key, "cam")
    }

    func testMistakesNameTheLineAndKeyAndNeverShowTheKey() {
        func error(_ text: String) -> String {
            do { _ = try settings(text); return "no error" } catch { return "\(error)" }
        }
        XCTAssertEqual(error("[destination.YouTube]\nkey = x"), "onair.conf:1: unknown section ['destination.…']", "names are lower case")
        XCTAssertEqual(error("[destination.yt]\nstream = x"), "onair.conf:2: unknown key 'destination.yt.stream'")
        XCTAssertEqual(error("[destination.yt]\npreset = myspace"), "onair.conf:2: destination.yt.preset: expected one of youtube, twitch, facebook, kick, got 'myspace'")
        XCTAssertEqual(error("[destination.yt]\nurl = http://example/live"), "onair.conf:2: destination.yt.url: not an rtmp://, rtmps:// or srt:// URL")
        XCTAssertEqual(error("[destination.yt]\nurl = rtmp://host:99999/live/abcdefgh"), "onair.conf:2: destination.yt.url: the port is not a number from 1 to 65535",
                       "nothing of the URL, where a key may be written")
        XCTAssertEqual(error("[destination.yt]\nurl = srt://host:9000?passphrase=abcdefghijk&latency=5"),
                       "onair.conf:2: destination.yt.url: latency is milliseconds from 20 to 8000")
        XCTAssertEqual(error("[destination.yt]\nrung = 0"), "onair.conf:2: destination.yt.rung: expected an integer in 1…6, got '0'")
        XCTAssertEqual(error("[destination.yt]\nrung = 99999999999999999999"),
                       "onair.conf:2: destination.yt.rung: expected an integer in 1…6, got '99999999999999999999'")
        XCTAssertEqual(error("[destination.yt]\nkey = a\nkey = b"), "onair.conf:3: (not shown: it names a secret) is set again (first at line 2)")
        XCTAssertTrue(ConfigFile.isSecret("destination.yt.key"))
        XCTAssertFalse(ConfigFile.isSecret("destination.yt.url"))
    }
}
