import Foundation
import XCTest
@testable import Appliance
import Access
import Drawing
import Files
import Logging
import Server
import System
import Threading
import Basics
import Network

/// The settings page's write-back, without a server: onair.conf edited as its owner
/// would, checked by onair's own rules, refused when it changed meanwhile.
final class SettingsPageTests: XCTestCase {
    var directory = ""
    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "onair-settings-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    // MARK: ConfigEdit

    func testAValueIsReplacedOnItsLineAndEverythingElseStays() throws {
        let original = "# the owner's file\n[video]\n  fps = 25   # smooth\nmystery = 1\n\n; a note\n[publish]\nurl = off\n"
        var edit = ConfigEdit(original)
        edit.set("video.fps", "30")
        XCTAssertEqual(edit.text, "# the owner's file\n[video]\n  fps = 30  # smooth\nmystery = 1\n\n; a note\n[publish]\nurl = off\n")
        edit.set("publish.url", nil)
        XCTAssertEqual(edit.text, "# the owner's file\n[video]\n  fps = 30  # smooth\nmystery = 1\n\n; a note\n[publish]\n")
    }

    func testAKeyGoesAtTheEndOfItsSectionOrUnderANewHeader() throws {
        var edit = ConfigEdit("[video]\nfps = 25\n\n[audio]\nchannels = 1\n")
        edit.set("video.rotation", "180")
        edit.set("publish.s3.region", "eu-west-1")
        edit.set("destination.yt.key", "abc")
        edit.set("device.name", "cam1")
        XCTAssertEqual(edit.text, "[video]\nfps = 25\nrotation = 180\n\n[audio]\nchannels = 1\n\n[publish.s3]\nregion = eu-west-1\n\n"
                       + "[destination.yt]\nkey = abc\n\n[device]\nname = cam1\n")
        // A section that repeats: the key's last line is the one that counts, and stays alone.
        var twice = ConfigEdit("[video]\nfps = 25\n[audio]\nchannels = 1\n[video]\nfps = 20\n")
        twice.set("video.fps", "15")
        XCTAssertEqual(twice.text, "[video]\n[audio]\nchannels = 1\n[video]\nfps = 15\n")
    }

    /// Whatever is written reads back as it was typed: edge spaces, '#', quotes.
    func testValuesReadBackExactly() throws {
        for value in ["plain", " leading", "trailing ", "with # hash", "a#b", "\"quoted\"", "in\"side", "two  spaces", "x = y"] {
            var edit = ConfigEdit("# mine\n[wifi]\nssid = old  # the router\n")
            edit.set("wifi.ssid", value)
            let entries = try ConfigFile.parse(edit.text, file: "onair.conf")
            XCTAssertEqual(entries.first { $0.key == "wifi.ssid" }?.value, value, edit.text)
        }
    }

    // MARK: FormBody

    func testAFormIsDecodedInOnePass() throws {
        let fields = try XCTUnwrap(FormBody.decode(Array("a=1&b=two+words&c=%C3%A9%26%3D&d=&e&remove.viewer=x&remove.viewer=y".utf8)))
        XCTAssertEqual(fields.map(\.name), ["a", "b", "c", "d", "e", "remove.viewer", "remove.viewer"])
        XCTAssertEqual(fields.map(\.value), ["1", "two words", "é&=", "", "", "x", "y"])
        XCTAssertNil(FormBody.decode(Array("a=%4".utf8)), "a cut escape")
        XCTAssertNil(FormBody.decode(Array("a=%zz".utf8)))
        XCTAssertNil(FormBody.decode(Array("a=%FF".utf8)), "not UTF-8")
        XCTAssertNil(FormBody.decode(Array(repeating: "a=1&", count: FormBody.maximumFields + 1).joined().utf8.map { $0 }))
        XCTAssertEqual(FormBody.decode([])?.count, 0)
    }

    // MARK: SettingsService

    private func service(_ text: String?, restarts: Locked<[String]> = Locked([])) throws -> SettingsService {
        if let text { try text.write(toFile: directory + "/onair.conf", atomically: true, encoding: .utf8) }
        try "[server]\nlisten = 127.0.0.1:8080\n".write(toFile: directory + "/board.conf", atomically: true, encoding: .utf8)
        return SettingsService(files: [directory + "/board.conf", directory + "/onair.conf"], log: .silent()) { keys in
            restarts.withLock { $0 += keys }
        }
    }

    private func form(_ fields: [(String, String)]) -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._")
        return Array(fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&").utf8)
    }

    private func version(_ service: SettingsService) -> String {
        let page = String(decoding: service.page().body, as: UTF8.self)
        let marker = "name=\"version\" value=\""
        guard let start = page.range(of: marker) else { return "" }
        return String(page[start.upperBound...].prefix(64))
    }

    private func message(_ reply: WebServer.BodyReply) -> String {
        let page = String(decoding: reply.body, as: UTF8.self)
        guard let start = page.range(of: "role=\"status\">"), let end = page[start.upperBound...].range(of: "</p>") else { return "" }
        return String(page[start.upperBound..<end.lowerBound])
    }

    func testASaveWritesOnlyWhatChangedAndAsksForARestart() throws {
        let restarts = Locked<[String]>([])
        let original = "# kitchen camera\n[device]\nname = cam1\n\n[video]\nfps = 30  # smooth\nrotation = 0\n\n[wifi]\nssid = Home\npassword = correct horse\n"
        let settings = try service(original, restarts: restarts)
        let page = String(decoding: settings.page().body, as: UTF8.self)
        XCTAssertFalse(page.contains("correct horse"), "a secret is never shown")
        XCTAssertTrue(page.contains("value=\"cam1\""))
        let reply = settings.save(form([("version", version(settings)), ("device.name", "cam1"), ("video.fps", "25"), ("video.rotation", ""),
                                        ("wifi.ssid", "Home"), ("wifi.password", ""), ("wifi.country", "GB")]), client: "127.0.0.1")
        XCTAssertEqual(reply.status, 200, message(reply))
        let text = try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8)
        XCTAssertEqual(text, "# kitchen camera\n[device]\nname = cam1\n\n[video]\nfps = 25  # smooth\n\n[wifi]\nssid = Home\npassword = correct horse\ncountry = GB\n")
        XCTAssertEqual(restarts.withLock { $0 }, ["video.fps", "video.rotation", "wifi.country"])
        // The same form again: nothing to do.
        XCTAssertEqual(message(settings.save(form([("version", version(settings)), ("video.fps", "25")]), client: "127.0.0.1")), "nothing changed")
    }

    func testTheSameRulesAndMessagesAsAtStartAndNothingWritten() throws {
        let original = "[wifi]\nssid = Home\npassword = correct horse\n"
        let settings = try service(original)
        let cases: [([(String, String)], String)] = [
            ([("wifi.password", "7 chars")], "wifi.password"),
            ([("wifi.ssid", String(repeating: "x", count: 33))], "wifi.ssid"),
            ([("video.fps", "0")], "video.fps"),
            ([("video.fps", "25\u{1}")], "control character"),
            ([("device.name", "a b")], "device.name"),
            ([("new.destination", "Bad Name")], "a destination's name"),
            ([("new.viewer", "bob"), ("new.viewer.password", "short")], "8 to 128 characters"),
        ]
        for (fields, expected) in cases {
            let reply = settings.save(form([("version", version(settings))] + fields), client: "127.0.0.1")
            XCTAssertEqual(reply.status, 400, "\(fields)")
            XCTAssertTrue(message(reply).contains(expected), "\(fields): \(message(reply))")
            XCTAssertTrue(message(reply).hasSuffix("nothing was saved"), message(reply))
            XCTAssertFalse(message(reply).contains("7 chars"), "a secret is not shown back")
            XCTAssertEqual(try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8), original)
        }
        XCTAssertEqual(settings.save(Array("version=%zz".utf8), client: "127.0.0.1").status, 400)
    }

    func testAFormFromAnOlderFileIsRefusedAndShownAsItIsNow() throws {
        let settings = try service("[video]\nfps = 30\n")
        let first = version(settings), second = version(settings)
        XCTAssertEqual(settings.save(form([("version", first), ("video.fps", "25")]), client: "a").status, 200)
        let late = settings.save(form([("version", second), ("video.fps", "20")]), client: "b")
        XCTAssertEqual(late.status, 409)
        XCTAssertTrue(message(late).contains("changed since this page was opened"), message(late))
        XCTAssertTrue(String(decoding: late.body, as: UTF8.self).contains("value=\"25\""), "the page as the file is now")
        XCTAssertEqual(try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8), "[video]\nfps = 25\n")
    }

    func testAFileThatNoLongerParsesIsSaidByLineAndNotTouched() throws {
        let broken = "[video]\nfps = 30\nthis line is wrong\n"
        let settings = try service(broken)
        let page = settings.page()
        XCTAssertEqual(page.status, 409)
        XCTAssertTrue(message(page).contains("onair.conf:3: expected 'key = value'"), message(page))
        XCTAssertEqual(settings.save(form([("version", ""), ("video.fps", "25")]), client: "a").status, 409)
        XCTAssertEqual(try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8), broken)
    }

    func testViewersAreAddedAndRemovedAsPasswdDoes() throws {
        let settings = try service("# mine\n")
        XCTAssertEqual(settings.save(form([("version", version(settings)), ("new.viewer", "grandma"), ("new.viewer.password", "long enough")]),
                                     client: "a").status, 200)
        let text = try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8)
        XCTAssertFalse(text.contains("long enough"))
        guard case .run(let run, _) = try CommandLineParser.parse(["run", "--config", directory + "/onair.conf"]) else { return XCTFail() }
        XCTAssertTrue(run.access.accepts("grandma", password: "long enough"))
        XCTAssertTrue(String(decoding: settings.page().body, as: UTF8.self).contains("remove grandma"))
        XCTAssertEqual(settings.save(form([("version", version(settings)), ("remove.viewer", "grandma")]), client: "a").status, 200)
        XCTAssertFalse(try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8).contains("viewer ="))
    }

    func testMoreWiFiNetworksAreAddedAndEditedOnThePage() throws {
        let original = "[wifi]\nssid = home\npassword = home password\n\n# at work\n[wifi.office]\nssid = Office\npassword = office password\n"
        let settings = try service(original)
        let page = String(decoding: settings.page().body, as: UTF8.self)
        XCTAssertTrue(page.contains("<legend>Wi-Fi: office</legend>") && page.contains("id=\"wifi.office.ssid\" name=\"wifi.office.ssid\" list=\"seen\" value=\"Office\""), page)
        XCTAssertFalse(page.contains("office password"), "a network's password is write-only")
        // A bad name, a short password: said, nothing written.
        let badName = settings.save(form([("version", version(settings)), ("new.wifi", "Phone Hotspot"), ("new.wifi.ssid", "x")]), client: "a")
        XCTAssertEqual(badName.status, 400)
        XCTAssertTrue(message(badName).hasPrefix("a Wi-Fi network's name is 1 to 32 of a-z"), message(badName))
        let short = settings.save(form([("version", version(settings)), ("new.wifi", "phone"), ("new.wifi.ssid", "Pixel"),
                                        ("new.wifi.password", "7 chars")]), client: "a")
        XCTAssertEqual(short.status, 400)
        XCTAssertTrue(message(short).contains("wifi.phone.password"), message(short))
        XCTAssertEqual(try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8), original)
        // A network added, another's priority set; its password kept (left empty).
        let saved = settings.save(form([("version", version(settings)), ("wifi.office.priority", "5"), ("wifi.office.password", ""), ("wifi.office.hidden", ""),
                                        ("new.wifi", "phone"), ("new.wifi.ssid", "Pixel"), ("new.wifi.password", "hotspot password")]), client: "a")
        XCTAssertEqual(saved.status, 200, message(saved))
        XCTAssertEqual(try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8),
                       original + "priority = 5\n\n[wifi.phone]\nssid = Pixel\npassword = hotspot password\n")
        XCTAssertEqual(settings.save(form([("version", version(settings)), ("new.wifi", "office"), ("new.wifi.ssid", "y")]), client: "a").status, 400,
                       "a name the file has already")
        let hidden = settings.save(form([("version", version(settings)), ("wifi.phone.hidden", "true")]), client: "a")
        XCTAssertEqual(hidden.status, 200, message(hidden))
        XCTAssertTrue(try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8).hasSuffix("password = hotspot password\nhidden = true\n"))
    }

    func testAWriteThatFailsIsSaidInTheOwnersWords() {
        XCTAssertEqual(SettingsService.writeProblem(FileError(path: "x", operation: "create", code: .readOnlyFileSystem), file: "/boot/firmware/onair.conf"),
                       "the card is read-only (/boot/firmware/onair.conf): nothing was saved")
        XCTAssertEqual(SettingsService.writeProblem(FileError(path: "x", operation: "write", code: .noSpace), file: "onair.conf"),
                       "the card is full (onair.conf): nothing was saved")
    }

    func testTheBoardsUnitsThatReadASavedKeyStartAgain() {
        XCTAssertEqual(BoardUnits.units(for: ["video.fps"], wifiInterface: "wlan0"), [])
        XCTAssertEqual(BoardUnits.units(for: ["wifi.ssid", "wifi.password"], wifiInterface: "wlan1"), ["onair-wifi@wlan1.service"])
        XCTAssertEqual(BoardUnits.units(for: ["device.name", "time.servers"], wifiInterface: "wlan0"),
                       ["onair-names.service", "systemd-resolved.service", "onair-time.service", "systemd-timesyncd.service"])
        XCTAssertEqual(BoardUnits.units(for: ["network.address"], wifiInterface: "wlan0"), ["onair-network.service", "systemd-networkd.service"])
        XCTAssertFalse(BoardUnits.onTheBoard, "a test is not the board's service")
    }

    // MARK: The setup network

    func testWhenTheSetupNetworkOpens() {
        func reason(wifi: Bool = true, state: WiFiStatus.State? = .joining, refused: Double = 0, running: Double = 10,
                    uptime: Double = 100, address: Bool = false, operator: Bool = true, saved: Bool = false) -> String? {
            SetupNetwork.reason(.init(wifiConfigured: wifi, wifi: wifi ? state : nil, wifiProblem: "wrong password for 'home'",
                                      wrongPasswordFor: refused, secondsRunning: running, uptime: uptime, hasAddress: address,
                                      hasOperator: `operator`, saved: saved))
        }
        XCTAssertNil(reason(), "joining, for less than three minutes")
        XCTAssertEqual(reason(running: 180), "no network of onair.conf's [wifi] joined in 3 minutes")
        XCTAssertNil(reason(state: .failed, refused: 59), "a refused password: wpa_supplicant's retries first (a router changed back)")
        XCTAssertEqual(reason(state: .failed, refused: 60), "the Wi-Fi of onair.conf cannot be joined: wrong password for 'home'")
        XCTAssertEqual(reason(state: .failed, refused: 60, address: true), "the Wi-Fi of onair.conf cannot be joined: wrong password for 'home'",
                       "the owner asked for Wi-Fi: a cable does not mend it")
        XCTAssertNil(reason(state: .failed, running: 100), "a network not in range yet may come: it waits")
        XCTAssertNil(reason(state: .joined, running: 1000))
        XCTAssertNil(reason(wifi: false, running: 59))
        XCTAssertEqual(reason(wifi: false, running: 60), "no network: no cable with an address and no [wifi] in onair.conf")
        XCTAssertNil(reason(wifi: false, running: 600, address: true), "on the cable: reachable")
        XCTAssertNil(reason(state: .failed, refused: 600, saved: true), "saved: closed for this run")
        XCTAssertNotNil(reason(wifi: false, running: 60, uptime: 899, operator: false))
        XCTAssertNil(reason(wifi: false, running: 600, uptime: 901, operator: false),
                     "a board never set up opens its open network only in its first 15 minutes")
        XCTAssertNotNil(reason(wifi: false, running: 600, uptime: 90_000, operator: true), "with an operator: WPA2 with the password, any time")
    }

    func testTheSetupPageAsksForAnOperatorAndSaysWhereTheCameraGoes() throws {
        try "# mine\n".write(toFile: directory + "/onair.conf", atomically: true, encoding: .utf8)
        let saved = Locked<[String]>([])
        let setup = SettingsService(files: [directory + "/onair.conf"], kind: .setup(askOperator: true),
                                    setup: .init(isOpen: { true }, seen: { ["home", "café"] }),
                                    log: .silent()) { keys in saved.withLock { $0 = keys } }
        let page = String(decoding: setup.page().body, as: UTF8.self)
        XCTAssertTrue(page.contains("<datalist id=\"seen\"><option value=\"home\"><option value=\"café\"></datalist>"), page)
        XCTAssertTrue(page.contains("action=\"/setup\"") && page.contains("id=\"server.token\""))
        XCTAssertFalse(page.contains("video.fps"), "the few fields a board needs")
        let version = SHA256.hex(Array("# mine\n".utf8))
        let without = setup.save(form([("version", version), ("wifi.ssid", "home"), ("wifi.password", "correct horse")]), client: "192.168.4.10")
        XCTAssertEqual(without.status, 400)
        XCTAssertTrue(message(without).hasPrefix("choose an operator password"), message(without))
        XCTAssertEqual(saved.withLock { $0 }, [])
        let done = setup.save(form([("version", version), ("wifi.ssid", "home"), ("wifi.password", "correct horse"),
                                    ("server.token", "kitchen-operator-0123"), ("device.name", "kitchen")]), client: "192.168.4.10")
        XCTAssertEqual(done.status, 200, message(done))
        XCTAssertTrue(message(done).hasPrefix("Saved. The camera now joins 'home' and closes this one"), message(done))
        XCTAssertEqual(saved.withLock { $0 }, ["device.name", "server.token", "wifi.password", "wifi.ssid"])
        XCTAssertEqual(BoardUnits.units(for: saved.withLock { $0 }, wifiInterface: "wlan0"),
                       ["onair-wifi@wlan0.service", "onair-names.service", "systemd-resolved.service"])
        XCTAssertEqual(try String(contentsOfFile: directory + "/onair.conf", encoding: .utf8),
                       "# mine\n\n[wifi]\nssid = home\npassword = correct horse\n\n[device]\nname = kitchen\n\n[server]\ntoken = kitchen-operator-0123\n")
        XCTAssertTrue(SettingsService.onSetupNetwork("192.168.4.10"))
        XCTAssertFalse(SettingsService.onSetupNetwork("192.168.4.1"), "the board itself")
        XCTAssertFalse(SettingsService.onSetupNetwork("192.168.1.10"))
        XCTAssertFalse(SettingsService.onSetupNetwork("::1"))
    }

    func testTheScreenShowsTheSetupNetworkButNeverItsPassword() throws {
        XCTAssertEqual(SetupNetwork.pageURL(listen: "0.0.0.0:8080"), "http://192.168.4.1:8080/setup")
        XCTAssertEqual(SetupNetwork.pageURL(listen: "[::]:80"), "http://192.168.4.1:80/setup", "the server's own port")
        let card = SetupNetwork.card(ssid: "onair-3fa2c1", secured: true, page: SetupNetwork.pageURL(listen: "0.0.0.0:8080"))
        XCTAssertEqual(card.code, QRCode(text: "WIFI:T:WPA;S:onair-3fa2c1;;"))
        XCTAssertEqual(card.lines, ["Wi-Fi: onair-3fa2c1", "Password: the operator's", "Page: 192.168.4.1:8080/setup"])
        XCTAssertEqual(SetupNetwork.card(ssid: "onair-3fa2c1", secured: false, page: "http://192.168.4.1:8080/setup").code, QRCode(text: "WIFI:T:nopass;S:onair-3fa2c1;;"))
    }

    func testTheBoardsFATIsWrittenBetweenRemounts() throws {
        let mounts = "sysfs /sys sysfs rw 0 0\n/dev/vda1 /boot/firmware vfat ro,relatime,fmask=0133,dmask=0022 0 0\n"
        XCTAssertTrue(BootPartition.isReadOnly(mounts))
        XCTAssertFalse(BootPartition.isReadOnly("/dev/vda1 /boot/firmware vfat rw,relatime 0 0\n"))
        XCTAssertFalse(BootPartition.isReadOnly("/dev/vda1 /boot/firmware2 vfat ro 0 0\n"))
        // Elsewhere the write is made as it is, nothing remounted.
        XCTAssertEqual(try BootPartition.writing(directory + "/onair.conf", mounts: mounts) { 7 }, 7)
    }
}
