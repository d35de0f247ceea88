import Foundation
import XCTest
@testable import Appliance
import Access

final class PasswdTests: XCTestCase {
    var directory = ""
    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "onair-passwd-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    struct NotARun: Error {}

    /// The settings `onair run --config path` reads; a parse that is not a run fails the
    /// test (a regression in the parser is a failure, not a reason to skip).
    func settings(_ path: String) throws -> Settings {
        let parsed = try CommandLineParser.parse(["run", "--config", path])
        guard case .run(let settings, _) = parsed else {
            XCTFail("'onair run --config \(path)' parsed as \(parsed)")
            throw NotARun()
        }
        return settings
    }

    func testViewersAndDevicesGoIntoAccessAndEverythingElseStays() throws {
        let path = directory + "/onair.conf"
        let original = "# the owner's file\n[video]\nfps = 25  # smooth\n\n[publish]\nurl = off\n"
        try original.write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(Passwd.run(PasswdOptions(action: .viewer, user: "alice", config: path), readPassword: { "correct horse" }), 0)
        XCTAssertEqual(Passwd.run(PasswdOptions(action: .device, user: "frigate", config: path)), 0)
        var text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.hasPrefix(original + "\n[access]\nrealm = onair-"), text)
        XCTAssertFalse(text.contains("correct horse"), "the password is not written")
        var access = try settings(path).access
        XCTAssertTrue(access.accepts("alice", password: "correct horse"))
        let secret = try XCTUnwrap(access.secret("frigate"))
        XCTAssertEqual(secret.count, 24)
        XCTAssertTrue(access.accepts("frigate", password: secret))
        let realm = access.realm

        // A new password replaces the line; the realm stays, so other viewers still work.
        XCTAssertEqual(Passwd.run(PasswdOptions(action: .viewer, user: "bob", config: path), readPassword: { "bobs password" }), 0)
        XCTAssertEqual(Passwd.run(PasswdOptions(action: .viewer, user: "alice", config: path), readPassword: { "battery staple" }), 0)
        access = try settings(path).access
        XCTAssertEqual(access.realm, realm)
        XCTAssertEqual(access.viewers.map(\.name).sorted(), ["alice", "bob"])
        XCTAssertFalse(access.accepts("alice", password: "correct horse"))
        XCTAssertTrue(access.accepts("alice", password: "battery staple"))
        XCTAssertTrue(access.accepts("bob", password: "bobs password"))

        XCTAssertEqual(Passwd.run(PasswdOptions(action: .remove, user: "frigate", config: path)), 0)
        XCTAssertEqual(Passwd.run(PasswdOptions(action: .remove, user: "frigate", config: path)), 2, "no such user")
        text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertFalse(text.contains("frigate"))
        XCTAssertTrue(text.hasPrefix(original))
        XCTAssertNil(try settings(path).access.secret("frigate"))
    }

    func testANewFileAndABrokenOne() throws {
        let path = directory + "/new.conf"
        XCTAssertEqual(Passwd.run(PasswdOptions(action: .viewer, user: "alice", config: path), readPassword: { "correct horse" }), 0)
        XCTAssertTrue(try settings(path).access.accepts("alice", password: "correct horse"))
        let broken = directory + "/broken.conf"
        try "[video]\nfps 25\n".write(toFile: broken, atomically: true, encoding: .utf8)
        XCTAssertEqual(Passwd.run(PasswdOptions(action: .viewer, user: "alice", config: broken), readPassword: { "correct horse" }), 2)
        XCTAssertEqual(try String(contentsOfFile: broken, encoding: .utf8), "[video]\nfps 25\n", "a file it cannot read is left alone")
        XCTAssertEqual(Passwd.run(PasswdOptions(action: .viewer, user: "alice", config: path), readPassword: { throw PasswdError.length }), 2)
    }

    func testTheCommandLine() throws {
        XCTAssertEqual(try CommandLineParser.parse(["passwd", "alice"]), .passwd(PasswdOptions(action: .viewer, user: "alice")))
        XCTAssertEqual(try CommandLineParser.parse(["passwd", "--device", "nvr", "--config", "x.conf"]),
                       .passwd(PasswdOptions(action: .device, user: "nvr", config: "x.conf")))
        XCTAssertEqual(try CommandLineParser.parse(["passwd", "--remove", "nvr"]), .passwd(PasswdOptions(action: .remove, user: "nvr")))
        for bad in [["passwd"], ["passwd", "al:ice"], ["passwd", "a", "b"], ["passwd", "--what", "a"], ["passwd", "a", "--config"]] {
            XCTAssertThrowsError(try CommandLineParser.parse(bad), "\(bad)")
        }
    }

    func testAccessKeysInTheConfig() throws {
        let realm = "onair-00112233"
        let viewer = AccessList.viewerValue(name: "alice", password: "pw", realm: realm)
        var s = Settings()
        try ConfigFile.apply(try ConfigFile.parse("[access]\nrealm = \(realm)\nviewer = \(viewer)\ndevice = nvr 0123456789abcdefXYZ\n", file: "c"), to: &s)
        XCTAssertEqual(s.access.viewers.count, 1)
        XCTAssertEqual(s.access.devices.count, 1)
        XCTAssertFalse(s.access.isOpen)
        for (text, expected) in [
            ("[access]\nviewer = alice md5:zz sha-256:00\n", "c:2: access.viewer: not a viewer line"),
            ("[access]\ndevice = nvr short\n", "c:2: access.device: not a device line"),
            ("[access]\nviewer = \(viewer)\ndevice = alice 0123456789abcdefXYZ\n", "c:3: access.device: alice is already a user"),
            ("[access]\nrealm = a\"b\n", "c:2: access.realm: expected the realm")
        ] {
            var settings = Settings()
            XCTAssertThrowsError(try ConfigFile.apply(try ConfigFile.parse(text, file: "c"), to: &settings)) { error in
                XCTAssertTrue("\(error)".hasPrefix(expected), "\(error)")
                XCTAssertFalse("\(error)".contains("0123456789abcdef") || "\(error)".contains("short"), "a secret is not shown: \(error)")
            }
        }
        let path = directory + "/norealm.conf"
        try "[access]\nviewer = \(viewer)\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try settings(path)) { XCTAssertTrue("\($0)".contains("access.realm"), "\($0)") }
    }
}
