import Foundation
import XCTest
@testable import Appliance
import Devices
import Publishing
import HLS
import Codecs
import Fetch

final class CommandLineTests: XCTestCase {
    func testFlagsOverrideConfigAndSet() throws {
        let config = "[video]\nfps = 25\n[server]\nlisten = 0.0.0.0:9000\n"
        let invocation = try CommandLineParser.parse(
            ["run", "--config", "a.conf", "--set", "video.fps=50", "--listen", "off", "--duration=12", "--pace", "fast", "--out", "/tmp/x"],
            readFile: { _ in Array(config.utf8) })
        guard case .run(let s, let files) = invocation else { return XCTFail("\(invocation)") }
        XCTAssertEqual(files, ["a.conf"])
        XCTAssertEqual(s.fps, 50)
        XCTAssertNil(s.listen)
        XCTAssertEqual(s.durationMilliseconds, 12_000)
        XCTAssertEqual(s.pace, .fast)
        XCTAssertEqual(s.dataDirectory, "/tmp/x")
    }

    /// A board's defaults, then the owner's file: later files win, key by key.
    func testEncoderCapacityIsAPixelRateBeyondAnyBitRate() throws {
        var settings = Settings()
        try ConfigFile.apply(try ConfigFile.parse("[performance]\ncapacity.vaapi = 500M\n", file: "b.conf"), to: &settings)
        XCTAssertEqual(settings.performance.capacity[.vaapi], 500_000_000)
        XCTAssertThrowsError(try ConfigFile.apply(try ConfigFile.parse("[performance]\ncapacity.x264 = fast\n", file: "b.conf"), to: &settings)) {
            XCTAssertEqual("\($0)", "b.conf:2: performance.capacity.x264: expected pixels per second like 62208000 or 120M, got 'fast'")
            // The error says where, which key and what was wrong as cases, not only as text.
            XCTAssertEqual($0 as? ConfigError, .at(origin: "b.conf:2", key: "performance.capacity.x264",
                                                  .expected("pixels per second like 62208000 or 120M", got: "'fast'")))
        }
    }

    /// A flag's error names the flag, not the key behind it; a secret's value is never shown.
    func testFlagAndSecretErrorsSayWhereAndHideSecrets() throws {
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--pace", "warp"], readFile: { _ in [] })) {
            guard case .at(origin: "--pace", key: nil, .expected)? = $0 as? ConfigError else { return XCTFail("\($0)") }
        }
        var settings = Settings()
        XCTAssertThrowsError(try ConfigFile.apply([.init(key: "server.token", value: "short", origin: "--set")], to: &settings)) {
            XCTAssertEqual($0 as? ConfigError, .at(origin: "--set", key: "server.token", .invalid("a token needs at least 16 characters")),
                           "a secret key's own rule, said without its value")
            XCTAssertFalse("\($0)".contains("short"), "\($0)")
        }
        XCTAssertThrowsError(try ConfigFile.apply([.init(key: "publish.header", value: "no colon here", origin: "--set")], to: &settings)) {
            XCTAssertEqual($0 as? ConfigError, .at(origin: "--set", key: "publish.header", .secret))
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["nonsense"], readFile: { _ in [] })) {
            XCTAssertEqual($0 as? ConfigError, .usage("unknown command 'nonsense' (try 'onair help')"))
        }
    }

    func testConfigFilesApplyInOrder() throws {
        let files = ["/usr/share/onair/board.conf": "[video]\nfps = 15\nwidth = 320\nheight = 180\n",
                     "/boot/firmware/onair.conf": "[video]\nfps = 25\n[publish]\nurl = http://10.0.2.2:8081/live/\n"]
        let invocation = try CommandLineParser.parse(["run", "--config", "/usr/share/onair/board.conf", "--config", "/boot/firmware/onair.conf"],
                                                     readFile: { Array((files[$0] ?? "").utf8) })
        guard case .run(let s, let names) = invocation else { return XCTFail("\(invocation)") }
        XCTAssertEqual(names.count, 2)
        XCTAssertEqual(s.fps, 25, "the owner's file wins")
        XCTAssertEqual(s.width, 320, "the board's value stays where the owner says nothing")
        XCTAssertEqual(s.publish.url, "http://10.0.2.2:8081/live/")
    }

    func testErrorsNameTheFlag() {
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--duraton", "5"])) { XCTAssertEqual("\($0)", "unknown flag '--duraton' (see 'onair run --help')") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--duration", "soon"])) { XCTAssertTrue("\($0)".hasPrefix("--duration: expected seconds"), "\($0)") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--pace"])) { XCTAssertEqual("\($0)", "--pace: missing value") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--listen", "8080"])) { XCTAssertTrue("\($0)".hasPrefix("--listen: expected ADDR:PORT"), "\($0)") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--set", "nokey"])) { XCTAssertEqual("\($0)", "--set nokey: expected KEY=VALUE") }
        XCTAssertThrowsError(try CommandLineParser.parse(["run", "--config", "/nonexistent/onair.conf"])) {
            XCTAssertEqual("\($0)", "--config /nonexistent/onair.conf: cannot read the file (No such file or directory)")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["frobnicate"]))
    }

    func testHelpEverywhere() throws {
        XCTAssertEqual(try CommandLineParser.parse(["run", "--help"]), .help(CommandLineParser.runUsage))
        XCTAssertEqual(try CommandLineParser.parse(["validate", "--help"]), .help(CommandLineParser.validateUsage))
        XCTAssertEqual(try CommandLineParser.parse(["--help"]), .help(CommandLineParser.usage))
        XCTAssertEqual(try CommandLineParser.parse([]), .usage(CommandLineParser.usage), "asked for nothing: usage on stderr, exit 2")
        XCTAssertEqual(try CommandLineParser.parse(["version"]), .version)
    }

    func testFetchTakesItsOptionsAndSaysWhatIsWrongInOneLine() throws {
        guard case .fetch(let options) = try CommandLineParser.parse(["fetch", "https://h/live/index.m3u8", "--out", "a.mp4", "--max-bitrate",
                                                                      "2.5M", "--max-size", "1280x720", "--follow", "--format", "hls",
                                                                      "--keep-days", "7", "--priority", "keep"]) else { return XCTFail() }
        XCTAssertEqual(options.url, "https://h/live/index.m3u8")
        XCTAssertEqual(options.out, "a.mp4")
        XCTAssertEqual(options.maxBitrate, 2_500_000)
        XCTAssertEqual(options.maxSize, PictureSize(width: 1280, height: 720))
        XCTAssertTrue(options.follow)
        XCTAssertEqual(options.format, .hls)
        XCTAssertEqual(options.keepDays, 7)
        XCTAssertEqual(options.priority, "keep")
        XCTAssertEqual(try CommandLineParser.parse(["fetch", "--list", "--dir", "/data"]), .fetchList(dataDirectory: "/data"))
        for (arguments, message) in [
            (["fetch"], "fetch: expected the URL of an HLS playlist (see 'onair fetch --help')"),
            (["fetch", "h/x.m3u8"], "fetch: 'h/x.m3u8' is not an http(s) URL"),
            (["fetch", "http://h/x.m3u8", "--max-size", "big"], "fetch: --max-size: expected WIDTHxHEIGHT such as 1280x720, got 'big'"),
            (["fetch", "http://h/x.m3u8", "--format", "ts"], "fetch: --format: expected mp4 or hls, got 'ts'"),
            (["fetch", "http://h/x.m3u8", "--out"], "fetch: --out needs a value"),
            (["fetch", "http://h/x.m3u8", "--bogus"], "fetch: unexpected '--bogus' (see 'onair fetch --help')"),
        ] {
            XCTAssertThrowsError(try CommandLineParser.parse(arguments)) { XCTAssertEqual("\($0)", message) }
        }
    }
}

/// `onair version` on an image: what make image wrote (image/manifest.sh) in one line.
final class VersionReportTests: XCTestCase {
    func testTheImageLineNamesTheArchiveDateAndTheKernel() {
        let written = "board=qemu-x86_64\nsuite=bookworm\narchive=2026-12-04T03:54:28Z\nkernel=6.1.0-57-amd64\n"
        XCTAssertEqual(VersionReport.imageLine(written, running: "6.1.0-57-amd64\n"),
                       "image: board qemu-x86_64, Debian bookworm packages as of 2026-12-04T03:54:28Z (with its updates and security archive), kernel 6.1.0-57-amd64")
        XCTAssertEqual(VersionReport.imageLine(written, running: "7.3.4+deb13-arm64"),
                       "image: board qemu-x86_64, Debian bookworm packages as of 2026-12-04T03:54:28Z (with its updates and security archive), kernel 6.1.0-57-amd64 (running 7.3.4+deb13-arm64)")
        XCTAssertNil(VersionReport.imageLine(nil, running: "6.1"), "not on an image: no line")
        XCTAssertNil(VersionReport.imageLine("garbage\n=\nboard=\n", running: nil), "a file without board and archive says nothing")
    }
}
