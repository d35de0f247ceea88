import XCTest
@testable import Appliance
import Network

/// The settings `onair run --config onair.conf` makes of `text`.
private func settingsOf(_ text: String, overrides: [String] = []) throws -> Settings {
    let files = ["onair.conf": Array(text.utf8)]
    let arguments = ["run", "--config", "onair.conf"] + overrides.flatMap { ["--set", $0] }
    guard case .run(let settings, _) = try CommandLineParser.parse(arguments, readFile: { files[$0] ?? [] }) else {
        throw ConfigError.usage("not a run")
    }
    return settings
}

/// What `onair run` says of `text`, or "no error".
private func errorOf(_ text: String) -> String {
    do { _ = try settingsOf(text); return "no error" } catch { return "\(error)" }
}

/// `[wifi]` and `[wifi.NAME]`: the networks, checked as they are read; the password a
/// secret; a value in quotes taken as written.
final class WiFiConfigTests: XCTestCase {
    func settings(_ text: String, overrides: [String] = []) throws -> Settings { try settingsOf(text, overrides: overrides) }
    func error(_ text: String) -> String { errorOf(text) }

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

/// `[network]`: a fixed address instead of DHCP, checked as it is read, and the
/// `.network` file that gives it to systemd-networkd.
final class StaticAddressConfigTests: XCTestCase {
    func settings(_ text: String) throws -> Settings { try settingsOf(text) }
    func error(_ text: String) -> String { errorOf(text) }

    func testAFixedAddressOnTheCableOrOnWiFi() throws {
        let wired = try settings("[network]\naddress = 192.168.1.50/24\ngateway = 192.168.1.1\ndns = 192.168.1.1, 1.1.1.1\n")
        XCTAssertEqual(wired.network.networkdFile(wifiInterface: wired.wifi.interface, wifiConfigured: wired.wifi.isConfigured),
                       "# onair network-config: onair.conf's [network], a fixed address instead of DHCP.\n[Match]\nName=en* eth*\n\n"
                       + "[Network]\nAddress=192.168.1.50/24\nDNS=192.168.1.1\nDNS=1.1.1.1\nMulticastDNS=yes\n\n[Route]\nGateway=192.168.1.1\nMetric=100\n")
        let wifi = try settings("[network]\naddress = 10.1.2.3/8\n[wifi]\nssid = home\npassword = correct horse\ninterface = wlan1\n")
        XCTAssertEqual(wifi.network.networkdFile(wifiInterface: wifi.wifi.interface, wifiConfigured: wifi.wifi.isConfigured),
                       "# onair network-config: onair.conf's [network], a fixed address instead of DHCP.\n[Match]\nName=wlan1\n\n"
                       + "[Network]\nAddress=10.1.2.3/8\nMulticastDNS=yes\n")
        let cable = try settings("[network]\naddress = 10.1.2.3/8\nlink = wired\n[wifi]\nssid = home\npassword = correct horse\n")
        XCTAssertTrue(cable.network.networkdFile(wifiInterface: "wlan0", wifiConfigured: true)?.contains("Name=en* eth*") == true)
        XCTAssertNil(try settings("[network]\naddress = dhcp\n").network.networkdFile(wifiInterface: "wlan0", wifiConfigured: false))
        let named = try settings("[network]\naddress = 10.1.2.3/8\ninterface = enp0s3\n")
        XCTAssertTrue(named.network.networkdFile(wifiInterface: "wlan0", wifiConfigured: false)?.contains("[Match]\nName=enp0s3\n") == true)
    }

    func testMistakesNameTheLineAndKey() {
        XCTAssertEqual(error("[network]\naddress = 192.168.1.50"),
                       "onair.conf:2: network.address: expected dhcp or an IPv4 address with its prefix length, such as 192.168.1.50/24, got '192.168.1.50'")
        for bad in ["192.168.1.256/24", "192.168.1.0/24", "192.168.1.255/24", "1.2.3/8", "01234.1.1.1/8", "1.2.3.4/33", "1.2.3.4/-1", "99999999999999999999.1.1.1/8"] {
            XCTAssertTrue(error("[network]\naddress = \(bad)").hasPrefix("onair.conf:2: network.address: expected"), bad)
        }
        XCTAssertEqual(error("[network]\naddress = 192.168.1.50/24\ngateway = 10.0.0.1"),
                       "onair.conf: network.gateway: 10.0.0.1 is not in 192.168.1.50/24's network")
        XCTAssertEqual(error("[network]\ngateway = 10.0.0.1"), "onair.conf: network.address: missing (network.gateway and network.dns go with a fixed address)")
        XCTAssertEqual(error("[network]\ndns = 1.1.1.1 one.one"), "onair.conf:2: network.dns: expected up to 8 IPv4 addresses such as 192.168.1.1 1.1.1.1, got '1.1.1.1 one.one'")
        XCTAssertEqual(error("[network]\ninterface = en p0"), "onair.conf:2: network.interface: expected auto or an interface name of 1 to 15 letters, digits, '-' or '_', got 'en p0'")
        XCTAssertEqual(error("[network]\nlink = cable"), "onair.conf:2: network.link: expected one of auto, wired, wifi, got 'cable'")
        XCTAssertEqual(error("[network]\naddress = 10.0.0.2/31\ngateway = 10.0.0.3"), "no error", "a /31 has no network or broadcast address")
    }

    func testTheNetworkConfigCommand() throws {
        let files = ["onair.conf": Array("[network]\naddress = 192.168.1.50/24\n".utf8)]
        let invocation = try CommandLineParser.parse(["network-config", "--config", "onair.conf", "--write", "/run/x.network"], readFile: { files[$0] ?? [] })
        guard case .networkConfig(let network, _, let output) = invocation else { return XCTFail("\(invocation)") }
        XCTAssertEqual(network.address?.prefix, 24)
        XCTAssertEqual(output, "/run/x.network")
        XCTAssertThrowsError(try CommandLineParser.parse(["network-config", "--bogus"])) {
            XCTAssertEqual("\($0)", "network-config: unexpected '--bogus' (see 'onair network-config --help')")
        }
    }
}
