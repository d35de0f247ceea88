import XCTest
@testable import Appliance

/// Issue 13, part 4 and 6: what a config file or the command line can hold that used to
/// print a secret, hide a mistake, or name the wrong origin.
final class ConfigHardeningTests: XCTestCase {
    func parse(_ text: String) throws -> Settings {
        var settings = Settings()
        try ConfigFile.apply(try ConfigFile.parse(Array(text.utf8), file: "onair.conf"), to: &settings)
        return settings
    }

    func error(_ text: String) -> String {
        do { _ = try parse(text); return "no error" } catch { return "\(error)" }
    }

    /// Issue 29: numbers at the edge of an Int, and digits that are not ASCII, are one
    /// line each; they trapped (an overflowing sum, a force-unwrap) or became 0.
    func testDecimalsPastAnIntAreErrorsNotTrapsOrZero() throws {
        XCTAssertNil(try ConfigFile.decimal("9223372036854775.808", scale: 1000))
        XCTAssertEqual(try ConfigFile.decimal("9223372036854775.807", scale: 1000), .max)
        XCTAssertNil(try ConfigFile.decimal("99999999999999999999", scale: 1))
        XCTAssertNil(try ConfigFile.decimal("0.1\u{20E3}", scale: 1000), "a keycap digit")
        XCTAssertTrue(error("[session]\nduration = 9223372036854775.808\n").hasPrefix("onair.conf:2: session.duration"))
        XCTAssertTrue(error("[record]\npreroll_seconds = 1\u{20E3}\n").hasPrefix("onair.conf:2:"))
    }

    func testCRLFLinesAreLines() throws {
        let settings = try parse("[video]\r\nfps = 25\r\n[publish.s3]\r\nsecret_key = hunter2hunter2\r\n")
        XCTAssertEqual(settings.fps, 25)
        XCTAssertEqual(settings.publish.s3SecretKey, "hunter2hunter2", "no \\r kept on the value")
    }

    func testNoMessageQuotesASecret() {
        let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        for text in ["[publish]\r\ns3.secret_key: \(secret)\r\n",        // malformed line, CRLF
                     "s3.secret_key: \(secret)\n",
                     "publish.s3.secret_key = \(secret)\npublish.s3.secret_key = \(secret)\n",
                     "server.token = \(secret.prefix(8))\n",
                     "[server]\ntoken = \(secret)\nlisten = nowhere\n",
                     "publish.header = Authorization \(secret)\n"] {
            let message = error(text)
            XCTAssertNotEqual(message, "no error", text)
            XCTAssertFalse(message.contains(secret) || message.contains(secret.prefix(8)), message)
            XCTAssertFalse(message.contains("\n") || message.contains("\r"), "one line: \(message)")
            XCTAssertTrue(message.hasPrefix("onair.conf:"), message)
        }
        XCTAssertEqual(error("[publish]\ns3.secret_key: \(secret)\n"), "onair.conf:2: expected 'key = value' in the line starting 's3.secret_key'")
    }

    func testControlCharactersAndInvalidUTF8NameTheLine() throws {
        XCTAssertEqual(error("[video]\nfps = 2\u{0}5\n"), "onair.conf:2: control character U+0000 in the line")
        var settings = Settings()
        XCTAssertThrowsError(try ConfigFile.parse(Array("[video]\n".utf8) + Array("fps = ".utf8) + [0xC3, 0x28, 0x0A], file: "b.conf")) {
            XCTAssertEqual("\($0)", "b.conf:2: not valid UTF-8")
        }
        XCTAssertThrowsError(try ConfigFile.apply([.init(key: "video.fps", value: "2\u{1b}[2J", origin: "--set")], to: &settings)) {
            XCTAssertFalse("\($0)".contains("\u{1b}"), "escaped when quoted: \($0)")
            XCTAssertTrue("\($0)".contains("\\u{1b}"), "\($0)")
        }
    }

    func testAKeyTwiceInOneFileIsAnErrorNamingBothLines() {
        XCTAssertEqual(error("[video]\nfps = 25\nwidth = 640\nfps = 30\n"), "onair.conf:4: 'video.fps' is set again (first at line 2)")
        XCTAssertEqual(error("video.fps = 25\n[video]\nfps = 30\n"), "onair.conf:3: 'video.fps' is set again (first at line 1)")
        XCTAssertEqual(error("[publish]\nheader = A: 1\nheader = B: 2\n[video]\nfps = 25\n[video]\nwidth = 640\n"), "no error",
                       "publish.header repeats; a section header may repeat")
    }

    func testUnknownSectionsAreErrorsEvenWhenEmpty() {
        XCTAssertEqual(error("[bogus]\n"), "onair.conf:1: unknown section ['bogus']")
        XCTAssertEqual(error("[publish.s3]\n[performance.capacity]\n"), "no error")
    }

    func testListenIsCheckedWhereItIsWritten() {
        XCTAssertTrue(error("[server]\nlisten = :18099\n").hasPrefix("onair.conf:2: server.listen: expected ADDR:PORT"))
        XCTAssertTrue(error("[server]\nlisten = localhost:8080\n").hasPrefix("onair.conf:2: server.listen: expected ADDR:PORT"))
        XCTAssertEqual(error("[server]\nlisten = [::1]:8080\n"), "no error")
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--listen", ":18099"])) {
            XCTAssertTrue("\($0)".hasPrefix("--listen: expected ADDR:PORT"), "\($0)")
        }
    }
}
