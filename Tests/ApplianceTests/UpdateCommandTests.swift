import Updates
import XCTest
@testable import Appliance

/// `onair update`'s command line (Updates' tests cover what it does).
final class UpdateCommandTests: XCTestCase {
    func rebooting(_ options: UpdateOptions) -> UpdateOptions {
        var options = options
        options.reboot = true
        return options
    }

    func testTheCommandLine() throws {
        XCTAssertEqual(try CommandLineParser.parse(["update", "/data/b.raucb"]), .update(UpdateOptions(source: "/data/b.raucb")))
        XCTAssertEqual(try CommandLineParser.parse(["update", "--reboot", "http://h/b.raucb"]),
                       .update(rebooting(UpdateOptions(source: "http://h/b.raucb"))))
        guard case .help(let text) = try CommandLineParser.parse(["update", "--help"]) else { return XCTFail("no help") }
        XCTAssertTrue(text.hasPrefix("Usage: onair update FILE|URL [--reboot]"))
        for (words, message) in [([], "update: expected a bundle's file or URL (see 'onair update --help')"),
                                 (["a", "b"], "update: unexpected 'b' (see 'onair update --help')"),
                                 (["--now", "a"], "update: unexpected '--now' (see 'onair update --help')")] {
            XCTAssertThrowsError(try CommandLineParser.parse(["update"] + words)) { XCTAssertEqual("\($0)", message) }
        }
    }
}
