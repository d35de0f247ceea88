import XCTest
@testable import Appliance
import Network

/// `[wifi]` and `[wifi.NAME]`: the networks, checked as they are read; the password a
/// secret; a value in quotes taken as written.
final class WiFiConfigTests: XCTestCase {
    func settings(_ text: String, overrides: [String] = []) throws -> Settings {
        let files = ["onair.conf": Array(text.utf8)]
        let arguments = ["run", "--config", "onair.conf"] + overrides.flatMap { ["--set", $0] }
        guard case .run(let settings, _) = try CommandLineParser.parse(arguments, readFile: { files[$0] ?? [] }) else {
            throw ConfigError.usage("not a run")
        }
        return settings
    }

    func error(_ text: String) -> String {
        do { _ = try settings(text); return "no error" } catch { return "\(error)" }
    }

    func testTheSectionsNetworkAndOthersWithTheirKeys() throws {
        let s = try settings("""
            [wifi]
            ssid = Home Net   # the router's name
            password = " pass # word "
            country = gb
            [wifi.office]
            ssid = "Office"
            password = 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
            security = wpa2
            hidden = true
            priority = 10
            [wifi.cafe]
            ssid = Café ☕
            security = open
            """, overrides: ["wifi.interface=wlx001122334455"])
        XCTAssertEqual(s.wifi.country, "GB")
        XCTAssertEqual(s.wifi.interface, "wlx001122334455")
        XCTAssertEqual(s.wifi.networks[""]?.ssid, "Home Net", "a comment after a value needs a space before '#'")
        XCTAssertEqual(s.wifi.networks[""]?.password, " pass # word ", "in quotes: as written, spaces and '#' too")
        XCTAssertEqual(s.wifi.networks["office"]?.ssid, "Office")
        XCTAssertEqual(s.wifi.networks["office"]?.security, .wpa2)
        XCTAssertEqual(s.wifi.networks["office"]?.hidden, true)
        XCTAssertEqual(s.wifi.joinable.map(\.name), ["office", "", "cafe"])
        XCTAssertTrue(ConfigFile.isSecret("wifi.password"))
        XCTAssertTrue(ConfigFile.isSecret("wifi.office.password"))
        XCTAssertFalse(ConfigFile.isSecret("wifi.ssid"))
    }

    func testMistakesNameTheLineAndKeyAndNeverShowThePassword() {
        XCTAssertEqual(error("[wifi]\nssid = \(String(repeating: "x", count: 33))"),
                       "onair.conf:2: wifi.ssid: 33 bytes; a network's name has at most 32")
        XCTAssertEqual(error("[wifi]\nssid = ☕☕☕☕☕☕☕☕☕☕☕"), "onair.conf:2: wifi.ssid: 33 bytes; a network's name has at most 32",
                       "bytes, as the radio counts them")
        XCTAssertEqual(error("[wifi]\nssid = \"\""), "onair.conf:2: wifi.ssid: empty (the network's name)")
        XCTAssertEqual(error("[wifi]\nssid = home\npassword = seven77"),
                       "onair.conf:3: wifi.password: 7 characters; a Wi-Fi password has 8 to 63 (not shown)")
        XCTAssertEqual(error("[wifi]\nssid = home\npassword = pässwörd1"),
                       "onair.conf:3: wifi.password: only printable ASCII characters (letters, digits, punctuation, space) (not shown)")
        XCTAssertEqual(error("[wifi]\nssid = home\npassword = pass\u{07}word"), "onair.conf:3: control character U+0007 in the line")
        XCTAssertEqual(error("[wifi]\nssid = home"), "onair.conf: wifi.password: missing (or security = open, for a network without one)")
        XCTAssertEqual(error("[wifi]\nssid = home\nsecurity = open\npassword = something"),
                       "onair.conf: wifi.password: set, but security = open (a network without a password)")
        XCTAssertEqual(error("[wifi.office]\npassword = something1"), "onair.conf: wifi.office: no ssid (the network's name)")
        XCTAssertEqual(error("[wifi]\ncountry = Britain"), "onair.conf:2: wifi.country: expected a country's two letters, such as GB or US, got 'Britain'")
        XCTAssertEqual(error("[wifi]\nsecurity = wep"), "onair.conf:2: wifi.security: expected one of auto, wpa2, wpa3, open, got 'wep'")
        XCTAssertEqual(error("[wifi]\ninterface = wlan0/../x"), "onair.conf:2: wifi.interface: expected an interface name of 1 to 15 letters, digits, '-' or '_', got 'wlan0/../x'")
        XCTAssertEqual(error("[wifi.Office]\nssid = x"), "onair.conf:1: unknown section ['wifi.…']", "names are lower case")
        XCTAssertEqual(error("[wifi.office]\ncountry = GB"), "onair.conf:2: unknown key 'wifi.office.country'")
        XCTAssertEqual(error("[wifi]\npassword = a\npassword = b"), "onair.conf:3: (not shown: it names a secret) is set again (first at line 2)")
        XCTAssertEqual(error("[wifi]\nhunter2hunter2"), "onair.conf:2: expected 'key = value'", "a line that may be a password is not quoted")
        for text in ["[wifi]\nssid = home\npassword = seven77", "[wifi]\nssid = home\npassword = pässwörd1"] {
            XCTAssertFalse(error(text).contains("seven77") || error(text).contains("pässwörd1"))
        }
    }

    /// `onair wifi-config`: its flags, and a network that is not whole refused as `run` refuses it.
    func testTheWiFiConfigCommand() throws {
        let files = ["onair.conf": Array("[wifi]\nssid = home\npassword = correct horse\n".utf8)]
        let invocation = try CommandLineParser.parse(["wifi-config", "--config", "onair.conf", "--interface", "wlan0", "--write", "/run/x.conf"],
                                                     readFile: { files[$0] ?? [] })
        guard case .wifiConfig(let wifi, let interface, let output) = invocation else { return XCTFail("\(invocation)") }
        XCTAssertEqual(wifi.joinable.map(\.ssid), ["home"])
        XCTAssertEqual(interface, "wlan0")
        XCTAssertEqual(output, "/run/x.conf")
        XCTAssertThrowsError(try CommandLineParser.parse(["wifi-config", "--bogus"])) { XCTAssertEqual("\($0)", "wifi-config: unexpected '--bogus' (see 'onair wifi-config --help')") }
        XCTAssertThrowsError(try CommandLineParser.parse(["wifi-config", "--write"])) { XCTAssertEqual("\($0)", "wifi-config: --write needs a value (see 'onair wifi-config --help')") }
    }
}

/// `onair names`: its flags, and the ports it announces.
final class NamesCommandTests: XCTestCase {
    func testTheNamesCommand() throws {
        let files = ["onair.conf": Array("[device]\nname = Cam_1\n[server]\nlisten = 0.0.0.0:8081\n".utf8)]
        let invocation = try CommandLineParser.parse(["names", "--config", "onair.conf", "--out", "/data", "--set-hostname", "--dnssd", "/run/x"],
                                                     readFile: { files[$0] ?? [] })
        guard case .names(let settings, let setHostname, let dnssd) = invocation else { return XCTFail("\(invocation)") }
        XCTAssertEqual(settings.deviceName, "Cam_1")
        XCTAssertEqual(settings.dataDirectory, "/data")
        XCTAssertTrue(setHostname)
        XCTAssertEqual(dnssd, "/run/x")
        XCTAssertEqual(Runner.port(settings.listen ?? ""), 8081)
        XCTAssertEqual(Runner.port("[::]:8080"), 8080)
        XCTAssertNil(Runner.port("0.0.0.0:0"), "any port: nothing to announce")
        XCTAssertThrowsError(try CommandLineParser.parse(["names", "--hostname"])) {
            XCTAssertEqual("\($0)", "names: unexpected '--hostname' (see 'onair names --help')")
        }
    }
}
