import XCTest
@testable import Network

/// The setup network's pieces that need no radio: its name and password rules, the access
/// point's configuration, the networks a scan saw, and the DNS answer every name gets.
final class SetupNetworkTests: XCTestCase {
    func testTheNetworkIsNamedByTheBoardAndGuardedByTheOperatorsPassword() {
        XCTAssertEqual(SetupAccessPoint.ssid(deviceLabel: "onair-3fa2c1"), "onair-3fa2c1")
        XCTAssertEqual(SetupAccessPoint.ssid(deviceLabel: "kitchen"), "onair-kitchen")
        XCTAssertEqual(SetupAccessPoint.ssid(deviceLabel: "cam-0123456789abcdef"), "onair-abcdef")
        XCTAssertEqual(SetupAccessPoint.password(operatorToken: "kitchen-operator-0123"), "kitchen-operator-0123")
        XCTAssertNil(SetupAccessPoint.password(operatorToken: nil), "a board never set up: an open network (for its first minutes)")
        XCTAssertNil(SetupAccessPoint.password(operatorToken: String(repeating: "x", count: 64)), "longer than WPA2 takes")
        let open = SetupAccessPoint.supplicantConfig(ssid: "onair-3fa2c1", password: nil, country: "GB")
        XCTAssertEqual(open, "# onair: the setup network (onair-setup-ap@.service)\nctrl_interface=/run/wpa_supplicant\ncountry=GB\n"
                       + "network={\n\tssid=6f6e6169722d336661326331\n\tmode=2\n\tfrequency=2437\n\tkey_mgmt=NONE\n}\n")
        let guarded = SetupAccessPoint.supplicantConfig(ssid: "onair-3fa2c1", password: "kitchen-operator-0123", country: nil, frequency: 2412)
        XCTAssertTrue(guarded.contains("\tfrequency=2412\n\tkey_mgmt=WPA-PSK\n\tproto=RSN\n\tpairwise=CCMP\n\tgroup=CCMP\n\tpsk="), guarded)
        XCTAssertFalse(guarded.contains("kitchen-operator"), "the password only as the key derived from it")
    }

    func testThePhonesJoinCodeNamesTheNetworkAndNeverItsPassword() {
        XCTAssertEqual(SetupAccessPoint.joinCode(ssid: "onair-3fa2c1", secured: true), "WIFI:T:WPA;S:onair-3fa2c1;;")
        XCTAssertEqual(SetupAccessPoint.joinCode(ssid: "onair-3fa2c1", secured: false), "WIFI:T:nopass;S:onair-3fa2c1;;")
        XCTAssertEqual(SetupAccessPoint.joinCode(ssid: #"a;b,c"d:e\f"#, secured: true), #"WIFI:T:WPA;S:a\;b\,c\"d\:e\\f;;"#)
    }

    func testTheAccessPointHasItsOwnMACAddress() {
        XCTAssertEqual(SetupAccessPoint.macAddress(station: "b8:27:eb:12:34:56\n"), "ba:27:eb:12:34:57", "a Pi 3's, locally administered")
        XCTAssertEqual(SetupAccessPoint.macAddress(station: "02:00:00:00:00:00"), "02:00:00:00:00:01", "mac80211_hwsim's")
        XCTAssertEqual(SetupAccessPoint.macAddress(station: "03:00:00:00:00:01"), "02:00:00:00:00:00", "never a multicast address")
        XCTAssertNil(SetupAccessPoint.macAddress(station: "zz:00:00:00:00:00"))
        XCTAssertNil(SetupAccessPoint.macAddress(station: "00:00:00:00:00"))
    }

    func testAScanListsEachNameOnceStrongestFirst() {
        let results = "bssid / frequency / signal level / flags / ssid\n"
            + "02:00:00:00:01:00\t2437\t-30\t[WPA2-PSK-CCMP][SAE-CCMP][ESS]\thome\n"
            + "02:00:00:00:02:00\t2412\t-70\t[ESS]\tcaf\\xc3\\xa9 \\\"free\\\"\n"
            + "02:00:00:00:03:00\t5180\t-20\t[WPA2-PSK-CCMP][ESS]\thome\n"
            + "02:00:00:00:04:00\t2437\t-50\t[ESS]\t\n"
            + "02:00:00:00:05:00\t2437\t-40\t[ESS]\tonair-3fa2c1\n"
            + "02:00:00:00:06:00\t2437\tloud\t[ESS]\tbroken\n"
            + "02:00:00:00:07:00\t2437\t-60\t[ESS]\tbad\\x0a name\n"
        let seen = WiFiScan.parse(results, leaving: "onair-3fa2c1")
        XCTAssertEqual(seen, [SeenNetwork(ssid: "home", frequency: 5180, signal: -20, secured: true),
                              SeenNetwork(ssid: "café \"free\"", frequency: 2412, signal: -70, secured: false)])
    }

    private func query(_ name: String, type: UInt16, id: UInt16 = 0xBEEF, edns: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, edns ? 1 : 0]
        for label in name.split(separator: ".") { bytes += [UInt8(label.utf8.count)] + Array(label.utf8) }
        bytes += [0, UInt8(type >> 8), UInt8(type & 0xFF), 0, 1]
        if edns { bytes += [0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0] }
        return bytes
    }

    func testEveryNameIsTheBoard() throws {
        let board: [UInt8] = [192, 168, 4, 1]
        let asked = query("connectivitycheck.gstatic.com", type: 1, edns: true)
        let reply = try XCTUnwrap(SetupDNS.answer(asked, address: board))
        XCTAssertEqual(Array(reply[0..<4]), [0xBE, 0xEF, 0x85, 0x00], "the id, a response, authoritative, recursion asked as asked")
        XCTAssertEqual(Array(reply[4..<12]), [0, 1, 0, 1, 0, 0, 0, 0], "the question and one answer")
        XCTAssertEqual(Array(reply.suffix(16)), [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 192, 168, 4, 1])
        let aaaa = try XCTUnwrap(SetupDNS.answer(query("captive.apple.com", type: 28), address: board))
        XCTAssertEqual(Array(aaaa[4..<12]), [0, 1, 0, 0, 0, 0, 0, 0], "AAAA: no record, no error")
        XCTAssertEqual(aaaa[3] & 0x0F, 0)
        // Malformed questions: FORMERR; another opcode: NOTIMP; a response: nothing.
        var pointer = query("a.b", type: 1)
        pointer[12] = 0xC0
        XCTAssertEqual(try XCTUnwrap(SetupDNS.answer(pointer, address: board))[3] & 0x0F, 1)
        XCTAssertEqual(try XCTUnwrap(SetupDNS.answer(Array(query("a.b", type: 1).dropLast(3)), address: board))[3] & 0x0F, 1)
        var notify = query("a.b", type: 1)
        notify[2] = 0x20
        XCTAssertEqual(try XCTUnwrap(SetupDNS.answer(notify, address: board))[3] & 0x0F, 4)
        var response = query("a.b", type: 1)
        response[2] |= 0x80
        XCTAssertNil(SetupDNS.answer(response, address: board))
        XCTAssertNil(SetupDNS.answer([1, 2, 3], address: board))
        let long = query(Array(repeating: String(repeating: "x", count: 63), count: 5).joined(separator: "."), type: 1)
        XCTAssertEqual(try XCTUnwrap(SetupDNS.answer(long, address: board))[3] & 0x0F, 1, "a name past 255 bytes")
    }
}
