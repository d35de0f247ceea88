import XCTest
@testable import Network

/// The board's name on its LAN: device.name as a DNS label, and its services as
/// systemd.dnssd(5) files.
final class NamesTests: XCTestCase {
    func testDeviceNamesBecomeDNSLabels() {
        XCTAssertEqual(NetworkNames.label("onair-b1e949"), "onair-b1e949")
        XCTAssertEqual(NetworkNames.label("Cam_1.Stage"), "cam-1-stage", "RFC 1123: letters, digits, hyphens")
        XCTAssertEqual(NetworkNames.label("-cam--1-"), "cam-1", "no hyphen at either end, none doubled")
        XCTAssertEqual(NetworkNames.label("___"), "onair", "never empty")
        XCTAssertEqual(NetworkNames.label(String(repeating: "a", count: 80)).count, 63)
    }

    func testAServiceIsAnnouncedUnderTheHostsName() {
        XCTAssertEqual(NetworkNames.serviceFile(type: "_http._tcp", port: 8080, path: "/"), """
            # Made by onair names at boot from onair.conf; changes here are lost.
            [Service]
            Name=%H
            Type=_http._tcp
            Port=8080
            TxtText=path=/

            """)
    }
}
