import Basics
import Foundation
import TestSupport
import XCTest
@testable import Network

/// [wifi] as wpa_supplicant's configuration, read back by Debian's wpa_supplicant itself:
/// names and passwords with quotes, '#', spaces and non-ASCII never break a line.
final class SupplicantConfigTests: XCTestCase {
    static let supplicant = "/usr/sbin/wpa_supplicant"

    func settings() -> WiFiSettings {
        var settings = WiFiSettings()
        settings.country = "GB"
        var home = WiFiNetwork(name: "")
        home.ssid = "My \"home\" # net ☕"
        home.password = "a\"b # c\"\" "
        var office = WiFiNetwork(name: "office")
        office.ssid = "Office"
        office.password = String(repeating: "0123456789ABCDEF", count: 4)
        office.security = .wpa2
        office.hidden = true
        office.priority = 5
        var lab = WiFiNetwork(name: "lab")
        lab.ssid = "Lab"
        lab.password = "correct horse"
        lab.security = .wpa3
        var cafe = WiFiNetwork(name: "cafe")
        cafe.ssid = "Cafe"
        cafe.security = .open
        settings.networks = ["": home, "office": office, "lab": lab, "cafe": cafe]
        return settings
    }

    /// IEEE 802.11-2020 §J.4.2's test vector: "password" on the SSID "IEEE".
    func testTheKeyIsWPA2sDerivation() {
        XCTAssertEqual(Hex.lower(SupplicantConfig.psk(password: "password", ssid: "IEEE")),
                       "f42c6fc52df0ebef9ebb4b90b38a5f902e83fe1b135a70e23aed762e9710a12e")
    }

    func testEveryNetworkIsWrittenWithoutAnyTextAPersonTyped() throws {
        let text = SupplicantConfig.render(settings())
        XCTAssertTrue(text.contains("country=GB\n"))
        XCTAssertTrue(text.contains("ctrl_interface=/run/wpa_supplicant\n"))
        let order = text.components(separatedBy: "id_str=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        XCTAssertEqual(order, ["office", "wifi", "cafe", "lab"], "the most wanted first, then [wifi] itself, then by name")
        XCTAssertFalse(text.contains("home"), "no SSID as text")
        XCTAssertFalse(text.contains("horse"), "no password as text")
        XCTAssertTrue(text.contains("ssid=" + Hex.lower(Array("My \"home\" # net ☕".utf8))))
        XCTAssertTrue(text.contains("\tscan_ssid=1\n\tpriority=5\n"), "the hidden network is asked for by name")
        XCTAssertTrue(text.contains("psk=" + String(repeating: "0123456789abcdef", count: 4)), "a 64-digit key as it is")
        XCTAssertTrue(text.contains("key_mgmt=SAE\n\tieee80211w=2\n\tsae_password=" + Hex.lower(Array("correct horse".utf8))),
                      "WPA3: the password itself, as hex, with protected management frames")
        XCTAssertTrue(text.contains("key_mgmt=NONE\n}"), "the open network has no key")
        XCTAssertTrue(text.contains("key_mgmt=WPA-PSK WPA-PSK-SHA256 SAE\n\tieee80211w=1\n\tpsk="
                                    + Hex.lower(SupplicantConfig.psk(password: "a\"b # c\"\" ", ssid: "My \"home\" # net ☕"))),
                      "auto: WPA2's derived key and WPA3's password, both")
    }

    /// Debian's wpa_supplicant reads the file (it then stops at the driver: this machine
    /// has no radio), and refuses one that is broken, so the check can fail.
    func testWpaSupplicantReadsIt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onair-supplicant-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func read(_ text: String) throws -> String {
            let path = directory + "/wpa_supplicant.conf"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let run = try toolOutput("/bin/sh", ["-c", "exec timeout 20 \(Self.supplicant) -c '\(path)' -i onairnone0 -D nl80211 2>&1"])
            return String(decoding: run.stdout, as: UTF8.self)
        }
        let good = try read(SupplicantConfig.render(settings()))
        XCTAssertFalse(good.contains("Failed to read or parse configuration"), good)
        XCTAssertFalse(good.contains("Line "), good)
        let broken = try read(SupplicantConfig.render(settings()).replacingOccurrences(of: "key_mgmt=NONE", with: "key_mgmt=NONE\n\tpsk=\"short\""))
        XCTAssertTrue(broken.contains("Failed to read or parse configuration"), broken)
    }
}
