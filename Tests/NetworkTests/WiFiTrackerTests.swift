import XCTest
@testable import Network

/// wpa_supplicant's events and STATUS replies (as wpa_supplicant 2.10 writes them,
/// wpa_supplicant/events.c and ctrl_iface.c) said in words.
final class WiFiTrackerTests: XCTestCase {
    func settings(country: String? = "GB") -> WiFiSettings {
        var settings = WiFiSettings()
        settings.country = country
        var home = WiFiNetwork(name: "")
        home.ssid = "home"
        home.password = "correct horse battery"
        var office = WiFiNetwork(name: "office")
        office.ssid = "Office 2"
        office.password = "staple staple"
        office.priority = 9
        settings.networks = ["": home, "office": office]
        return settings
    }

    func testAJoinAWrongPasswordAndANetworkNotFoundAreSaidInWords() {
        var tracker = WiFiTracker(settings: settings())
        XCTAssertEqual(tracker.status.state, .starting)
        XCTAssertNil(tracker.event("CTRL-EVENT-SCAN-STARTED "))
        XCTAssertEqual(tracker.status.state, .joining)
        // id 1: the second network of the file onair wrote (office, priority 9, is first).
        XCTAssertEqual(tracker.event("CTRL-EVENT-SSID-TEMP-DISABLED id=1 ssid=\"home\" auth_failures=1 duration=10 reason=WRONG_KEY"),
                       .failed(kind: "wrong-password", problem: "wrong password for 'home' (wifi.password)"))
        XCTAssertEqual(tracker.status.consoleWord, "wrong-password")
        XCTAssertNil(tracker.event("CTRL-EVENT-SSID-TEMP-DISABLED id=1 ssid=\"home\" auth_failures=2 duration=20 reason=WRONG_KEY"),
                     "said once")
        XCTAssertEqual(tracker.event("CTRL-EVENT-NETWORK-NOT-FOUND"),
                       .failed(kind: "not-found", problem: "no network of [wifi] in range ('Office 2', 'home')"))
        XCTAssertEqual(tracker.event("CTRL-EVENT-CONNECTED - Connection to 02:00:00:00:01:00 completed [id=1 id_str=wifi]"),
                       .joined(network: "", ssid: "home"))
        XCTAssertNil(tracker.status.problem)
        XCTAssertEqual(tracker.statusReply("bssid=02:00:00:00:01:00\nfreq=2412\nssid=home\nid=1\nid_str=wifi\nmode=station\n"
                                           + "key_mgmt=WPA2-PSK\nwpa_state=COMPLETED\nip_address=192.168.50.23\naddress=02:00:00:00:00:00\n"),
                       .address("192.168.50.23"))
        XCTAssertEqual(tracker.status.consoleWord, "joined")
        XCTAssertEqual(tracker.event("CTRL-EVENT-DISCONNECTED bssid=02:00:00:00:01:00 reason=15"), .left(reason: "the network's password changed"))
        XCTAssertNil(tracker.status.address)
        XCTAssertEqual(tracker.status.state, .joining)
    }

    /// WPA3 (SAE) with a password the network does not share: the network refuses the
    /// confirm, and wpa_supplicant calls it a failed connection (as it did in the VM test,
    /// hostapd 2.10 and wpa_supplicant 2.10 on mac80211_hwsim).
    func testAWrongWPA3PasswordIsAWrongPassword() {
        var tracker = WiFiTracker(settings: settings())
        XCTAssertNil(tracker.event("CTRL-EVENT-ASSOC-REJECT bssid=02:00:00:00:01:00 status_code=53"))
        XCTAssertNil(tracker.event("CTRL-EVENT-AUTH-REJECT 02:00:00:00:01:00 auth_type=3 auth_transaction=2 status_code=1"))
        XCTAssertEqual(tracker.event("CTRL-EVENT-SSID-TEMP-DISABLED id=1 ssid=\"home\" auth_failures=1 duration=10 reason=CONN_FAILED"),
                       .failed(kind: "wrong-password", problem: "wrong password for 'home' (wifi.password)"))
        // Joined since: a failed connection is only that.
        _ = tracker.event("CTRL-EVENT-CONNECTED - Connection to 02:00:00:00:01:00 completed [id=1 id_str=wifi]")
        XCTAssertEqual(tracker.event("CTRL-EVENT-SSID-TEMP-DISABLED id=1 ssid=\"home\" auth_failures=1 duration=10 reason=CONN_FAILED"),
                       .failed(kind: "no-connection", problem: "could not connect to 'home': out of reach, or the network is full"))
    }

    func testABoardWithoutTheRadioSaysSo() {
        var tracker = WiFiTracker(settings: settings())
        XCTAssertEqual(tracker.noRadio(), .failed(kind: "no-radio", problem: "no Wi-Fi interface wlan0 (wifi.interface): no radio, or none its kernel drives"))
        XCTAssertNil(tracker.noRadio(), "once")
        var off = WiFiTracker(settings: WiFiSettings())
        XCTAssertEqual(off.status.state, .off)
        XCTAssertNil(off.noRadio(), "nothing asked of it")
    }

    func testWithoutACountryANetworkNotFoundSaysWhatThatMeans() {
        var tracker = WiFiTracker(settings: settings(country: nil))
        guard case .failed(_, let problem) = tracker.event("CTRL-EVENT-NETWORK-NOT-FOUND") else { return XCTFail("not said") }
        XCTAssertTrue(problem.hasSuffix("without wifi.country the radio uses only the channels allowed everywhere"), problem)
    }

    /// A STATUS that joined without an event seen (onair started after wpa_supplicant).
    func testAStatusReplyAloneSaysTheBoardIsOnANetwork() {
        var tracker = WiFiTracker(settings: settings())
        XCTAssertEqual(tracker.statusReply("wpa_state=COMPLETED\nid_str=office\nip_address=10.0.0.7\n"), .joined(network: "office", ssid: "Office 2"))
        XCTAssertEqual(tracker.status.address, "10.0.0.7")
        XCTAssertEqual(tracker.statusReply("wpa_state=SCANNING\n"), .left(reason: "not on a network (SCANNING)"))
        XCTAssertNil(tracker.statusReply("wpa_state=COMPLETED\nid_str=office\nip_address=999.1.1.1\n").flatMap { change -> String? in
            if case .address = change { return "address" } else { return nil }
        }, "not an address")
    }

    /// Names that came over the air: escapes undone, control characters never printed,
    /// an id out of range falls back to the event's own name.
    func testNamesFromTheAirArePrintable() {
        XCTAssertEqual(WiFiTracker.unescape("caf\\xc3\\xa9 \\\"x\\\""), "café \"x\"")
        XCTAssertEqual(WiFiTracker.printable(WiFiTracker.unescape("a\\x1bb")), "a?b")
        var tracker = WiFiTracker(settings: settings())
        XCTAssertEqual(tracker.event("CTRL-EVENT-SSID-TEMP-DISABLED id=99999999999999999999 ssid=\"x\\x07y\" reason=CONN_FAILED"),
                       .failed(kind: "no-connection", problem: "could not connect to 'x?y': out of reach, or the network is full"))
        // Any text at all: no trap, bounded.
        for text in ["", "<3>", "CTRL-EVENT-CONNECTED", "CTRL-EVENT-SSID-TEMP-DISABLED \"\"\"", String(repeating: "x=\" ", count: 5000)] {
            _ = tracker.event(text)
            _ = tracker.statusReply(text)
        }
    }
}
