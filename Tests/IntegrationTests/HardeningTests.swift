import Basics
import Foundation
import XCTest
import HLS
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 13 through the onair binary: a data directory full of what crashes, power cuts
/// and hostile hands leave, and a card that fills up.
final class HardeningTests: XCTestCase {
    let fast = ["--source", "synthetic", "--pace", "fast", "--set", "video.quality=low"]

    func streams(_ out: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: out + "/streams")) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    func validate(_ directory: String) throws -> (Int32, String) {
        let result = try runTool(onairBinary(), ["validate", directory])
        return (result.status, String(decoding: result.stdout, as: UTF8.self))
    }

    /// A stream as a crash leaves it: the last segment stored but not listed, no ENDLIST.
    func interrupt(_ directory: String) throws {
        let path = directory + "/playlist.m3u8"
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.removeAll { $0 == "#EXT-X-ENDLIST" }
        lines.removeLast(3)  // PROGRAM-DATE-TIME, EXTINF, URI of the last segment
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    func lastSegment(_ directory: String) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory + "/seg").sorted()
        return directory + "/seg/" + names.last!
    }

    func overwrite(_ path: String, with bytes: [UInt8], at offset: UInt64 = 0) throws {
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: offset)
        handle.write(Data(bytes))
        try handle.close()
    }

    func copy(_ from: String, _ to: String) throws { try FileManager.default.copyItem(atPath: from, toPath: to) }

    func testAStartAmongCorruptLeftoversComesUpAndServesTheGoodStreams() throws {
        let out = try temporaryDirectory("leftovers")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let first = try Child(onairBinary(), ["run"] + fast + ["--duration", "6", "--listen", "off", "--out", out])
        XCTAssertEqual(first.wait().status, 0, first.stderr)
        let good = try XCTUnwrap(streams(out).first)
        let base = out + "/streams/"
        let largesize: [UInt8] = [0, 0, 0, 1] + Array("moof".utf8) + [0x80, 0, 0, 0, 0, 0, 0, 0]
        // A: an unlisted segment with a 64-bit size of 2^63 (the boot loop).
        try copy(base + good, base + "a-largesize")
        try interrupt(base + "a-largesize")
        try overwrite(try lastSegment(base + "a-largesize"), with: largesize)
        // B: 200,000 nested boxes as the unlisted segment.
        try copy(base + good, base + "b-nested")
        try interrupt(base + "b-nested")
        var nested = [UInt8]()
        for level in 0..<200_000 { nested += withUnsafeBytes(of: UInt32(8 * (200_000 - level)).bigEndian, Array.init) + Array("moof".utf8) }
        try Data(nested).write(to: URL(fileURLWithPath: try lastSegment(base + "b-nested")))
        // C: a playlist with EXTINF:NaN; D: one that is not UTF-8; E: a corrupt init.mp4.
        try copy(base + good, base + "c-nan")
        try interrupt(base + "c-nan")
        let text = try String(contentsOfFile: base + "c-nan/playlist.m3u8", encoding: .utf8)
        try text.replacingOccurrences(of: "#EXTINF:2.000,", with: "#EXTINF:NaN,").write(toFile: base + "c-nan/playlist.m3u8", atomically: true, encoding: .utf8)
        try copy(base + good, base + "d-utf8")
        try Data([0x23, 0x45, 0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: base + "d-utf8/playlist.m3u8"))
        try copy(base + good, base + "e-init")
        try interrupt(base + "e-init")
        try overwrite(base + "e-init/init.mp4", with: largesize)
        // F: a stream directory half made when the power went; G: a link out of the data
        // directory; H: a stray file where stream directories live.
        try FileManager.default.createDirectory(atPath: base + ".f-staging.tmp/seg", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: base + "g-link", withDestinationPath: "/etc")
        try Data("junk".utf8).write(to: URL(fileURLWithPath: base + "h-file"))
        // Issue 29: I: a FIFO as the unlisted segment (the start hung for good); J: a link
        // to /dev/zero (it grew past 5.7 GB); K: a sparse 4 GiB one (4 GB and 11 s); L: what
        // a kill -9 in a stream's first moments leaves (init.mp4 and index.m3u8 only).
        for (name, make) in [("i-fifo", { (path: String) in XCTAssertEqual(mkfifo(path, 0o644), 0) }),
                             ("j-zero", { (path: String) in try? FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/dev/zero") }),
                             ("k-sparse", { (path: String) in
                                 XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
                                 XCTAssertEqual(truncate(path, 4 << 30), 0)
                             })] {
            try copy(base + good, base + name)
            try interrupt(base + name)
            let segment = try lastSegment(base + name)
            try FileManager.default.removeItem(atPath: segment)
            make(segment)
        }
        try FileManager.default.createDirectory(atPath: base + "l-early", withIntermediateDirectories: true)
        try copy(base + good + "/init.mp4", base + "l-early/init.mp4")
        try copy(base + good + "/index.m3u8", base + "l-early/index.m3u8")
        // Recordings: a .part with a 2^63 box, one of zeros, one truncated mid-header.
        let recordings = out + "/recordings/"
        try FileManager.default.createDirectory(atPath: recordings, withIntermediateDirectories: true)
        try Data(largesize + [UInt8](repeating: 0, count: 64)).write(to: URL(fileURLWithPath: recordings + "20260101T000000Z-aaaa.mp4.part"))
        try Data([UInt8](repeating: 0, count: 4096)).write(to: URL(fileURLWithPath: recordings + "20260101T000000Z-bbbb.mp4.part"))
        try Data([0, 0]).write(to: URL(fileURLWithPath: recordings + "20260101T000000Z-cccc.mp4.part"))

        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--set", "video.quality=low", "--duration", "4",
                                              "--listen", "127.0.0.1:0", "--out", out])
        let listening = try XCTUnwrap(onair.waitForLog("event=server.listening"), onair.stderr)
        let port = try XCTUnwrap(logValue(listening, "url").flatMap { URLComponents(string: $0)?.port }.map(UInt16.init))
        let list = try HTTPClient.request(port: port, "/api/streams")
        XCTAssertEqual(list.status, 200)
        XCTAssertTrue(list.text.contains("\"id\":\"\(good)\""), list.text)
        XCTAssertFalse(list.text.contains("g-link"), "nothing outside the data directory")
        XCTAssertEqual(try HTTPClient.request(port: port, "/streams/\(good)/index.m3u8").status, 200)
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let log = onair.stderr
        for path in ["a-largesize/seg", "b-nested/seg", "c-nan/playlist.m3u8", "d-utf8/playlist.m3u8", "e-init/init.mp4",
                     "i-fifo/seg", "j-zero/seg", "k-sparse/seg",
                     "20260101T000000Z-aaaa.mp4.part", "20260101T000000Z-bbbb.mp4.part", "20260101T000000Z-cccc.mp4.part"] {
            XCTAssertTrue(log.split(separator: "\n").contains { $0.contains("event=recovery.skipped") && $0.contains(path) },
                          "\(path) skipped and said: \(log)")
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: base + "c-nan/playlist.m3u8.corrupt"), "set aside, not deleted")
        XCTAssertTrue(FileManager.default.fileExists(atPath: recordings + "20260101T000000Z-aaaa.mp4.part.corrupt"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: base + ".f-staging.tmp"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: base + "e-init/init.mp4.corrupt"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: base + "l-early"), "a stream without a segment is removed")
        XCTAssertTrue(log.contains("event=recovery.removed_empty path=\(base)l-early"), log)
        for stream in [good, "a-largesize", "b-nested", "i-fifo", "j-zero", "k-sparse"] {
            let (status, report) = try validate(base + stream)
            XCTAssertEqual(status, 0, "\(stream): \(report)")
        }
        // The second start finds nothing left to skip: no boot loop, no repeated reports.
        let again = try Child(onairBinary(), ["run"] + fast + ["--duration", "2", "--listen", "off", "--out", out])
        XCTAssertEqual(again.wait().status, 0, again.stderr)
        XCTAssertFalse(again.stderr.contains("recovery.skipped"), again.stderr)
    }

    // MARK: A full card

    /// A small tmpfs of the test's own (CI runs as root).
    func smallDisk(megabytes: Int) throws -> String {
        guard getuid() == 0 else { throw XCTSkip("mounting a tmpfs needs root (CI runs as root)") }
        let mount = try temporaryDirectory("full")
        let result = try runTool("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", mount])
        guard result.status == 0 else { throw XCTSkip("cannot mount a tmpfs here: \(result.stderr)") }
        addTeardownBlock {
            _ = try? runTool("/bin/umount", [mount])
            try? FileManager.default.removeItem(atPath: mount)
        }
        return mount
    }

    /// Old, ended streams that fill the disk: what eviction may delete.
    func fill(_ out: String, streams count: Int, megabytes: Int) throws {
        for index in 0..<count {
            let directory = out + "/streams/20250101T00000\(index)Z-old\(index)"
            try FileManager.default.createDirectory(atPath: directory + "/seg", withIntermediateDirectories: true)
            try "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:2.000,\nseg/000001.m4s\n#EXT-X-ENDLIST\n"
                .write(toFile: directory + "/playlist.m3u8", atomically: true, encoding: .utf8)
            // Written until the disk says no: the last stream takes what is left.
            let handle = try XCTUnwrap(FileHandle(forWritingAtPath: { FileManager.default.createFile(atPath: directory + "/seg/000001.m4s", contents: nil); return directory + "/seg/000001.m4s" }()))
            let chunk = Data(repeating: 0x5A, count: 1 << 20)
            for _ in 0..<megabytes { do { try handle.write(contentsOf: chunk) } catch { break } }
            try? handle.close()
        }
    }

    func testAFullCardEvictsOldStreamsAndTheSessionGoesOn() throws {
        let out = try smallDisk(megabytes: 24)
        try fill(out, streams: 4, megabytes: 6)  // the last one stops where the disk is full
        let onair = try Child(onairBinary(), ["run"] + fast + ["--duration", "20", "--listen", "off", "--out", out,
                                                              "--set", "storage.min_free=1M", "--set", "record.preallocate_mb=64",
                                                              "--set", "video.bitrate=2M", "--set", "record.bitrate=2M"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        let log = onair.stderr
        XCTAssertFalse(log.contains("session.failed"), log)
        XCTAssertTrue(log.contains("event=storage.deleted_unpublished"), "old streams evicted: \(log)")
        XCTAssertTrue(log.contains("event=recording.reserve_off"), "less room than record.preallocate_mb: no reservation, recording goes on")
        let fresh = try XCTUnwrap(streams(out).last)
        XCTAssertFalse(fresh.contains("old"))
        let (status, report) = try validate(out + "/streams/" + fresh)
        XCTAssertEqual(status, 0, report)
        XCTAssertTrue(try String(contentsOfFile: out + "/streams/\(fresh)/playlist.m3u8", encoding: .utf8).contains("#EXT-X-ENDLIST"))
    }

    func testARestartOnAFullCardRecovers() throws {
        let out = try smallDisk(megabytes: 16)
        try fill(out, streams: 2, megabytes: 9)  // not a byte free
        var info = statvfs()
        statvfs(out, &info)
        XCTAssertLessThan(Int(info.f_bavail) * Int(info.f_frsize), 1 << 20, "the disk is full before the start")
        let onair = try Child(onairBinary(), ["run"] + fast + ["--duration", "4", "--listen", "off", "--out", out,
                                                              "--set", "storage.min_free=1M"])
        XCTAssertEqual(onair.wait().status, 0, onair.stderr)
        XCTAssertTrue(onair.stderr.contains("event=storage.deleted_unpublished"), onair.stderr)
        let fresh = try XCTUnwrap(streams(out).last { !$0.contains("old") }, onair.stderr)
        XCTAssertEqual(try validate(out + "/streams/" + fresh).0, 0)
        XCTAssertEqual(streams(out).filter { !$0.contains("old") }.count, 1, "no half-made stream directory is left")
    }

    // MARK: The command line

    func testBadInvocationsAreOneLineAndExit2() throws {
        let bare = try runTool(onairBinary(), [])
        XCTAssertEqual(bare.status, 2, "asked for nothing")
        XCTAssertTrue(bare.stderr.contains("Usage:"), bare.stderr)
        let folder = try temporaryDirectory("out-file")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/not-a-dir"
        FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        let out = try runTool(onairBinary(), ["run", "--source", "synthetic", "--listen", "off", "--out", file])
        XCTAssertEqual(out.status, 2, out.stderr)
        XCTAssertEqual(out.stderr, "onair: storage.dir (--out) \(file): not a directory\n")
        // A CRLF config whose secret would once have been printed with the whole file.
        let config = folder + "/onair.conf"
        try Data("[publish.s3]\r\nsecret_key = hunter2hunter2hunter2\r\n[server]\r\nlisten = :18099\r\n".utf8).write(to: URL(fileURLWithPath: config))
        let bad = try runTool(onairBinary(), ["run", "--config", config])
        XCTAssertEqual(bad.status, 2)
        XCTAssertFalse(bad.stderr.contains("hunter2"), bad.stderr)
        XCTAssertTrue(bad.stderr.hasPrefix("onair: \(config):4: server.listen: expected ADDR:PORT"), bad.stderr)
        XCTAssertEqual(bad.stderr.filter { $0 == "\n" }.count, 1, "one line")
        // Issue 29: a config that is a FIFO hung the start; /dev/zero grew to 2.7 GB.
        let fifo = folder + "/fifo.conf"
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        for (path, kind) in [(fifo, "a FIFO"), ("/dev/zero", "a device")] {
            let refused = try runTool(onairBinary(), ["run", "--config", path])
            XCTAssertEqual(refused.status, 2, refused.stderr)
            XCTAssertEqual(refused.stderr, "onair: --config \(path): cannot read the file (\(kind), not a regular file)\n")
        }
        // A device name that cannot be a folder at the destination.
        for name in ["a/b", "two words", "", String(repeating: "x", count: 200)] {
            let refused = try runTool(onairBinary(), ["run", "--source", "synthetic", "--listen", "off", "--out", folder,
                                                      "--set", "device.name=\(name)"])
            XCTAssertEqual(refused.status, 2, name)
            XCTAssertTrue(refused.stderr.hasPrefix("onair: --set: device.name: expected 1 to 63 letters"), refused.stderr)
            XCTAssertEqual(refused.stderr.filter { $0 == "\n" }.count, 1, "one line: \(refused.stderr)")
        }
    }

    /// Issue 29, point 7: a kill -9 in the first moments of a stream left a directory of
    /// init.mp4 and index.m3u8 that survived every later start and failed validate. The
    /// directory now appears only with its first segment in it: killed before, the stream
    /// is a hidden staging directory no reader lists, which the next start removes.
    func testAKillInAStreamsFirstMomentsLeavesNoDebris() throws {
        let out = try temporaryDirectory("early-kill")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run", "--source", "synthetic", "--set", "video.quality=low", "--listen", "off", "--out", out])
        func staged() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: out + "/streams")) ?? []).filter { $0.hasSuffix(".tmp") } }
        for _ in 0..<2000 where staged().isEmpty { usleep(5000) }
        onair.signal(SIGKILL)
        _ = onair.wait()
        XCTAssertEqual(staged().count, 1, "killed while the stream was staged")
        XCTAssertEqual(streams(out), [], "no stream directory before its first segment")
        let again = try Child(onairBinary(), ["run"] + fast + ["--duration", "2", "--listen", "off", "--out", out])
        XCTAssertEqual(again.wait().status, 0, again.stderr)
        XCTAssertEqual(staged(), [], again.stderr)
        XCTAssertEqual(again.stderr.components(separatedBy: "event=recovery.removed_empty").count, 2, "said once: \(again.stderr)")
        XCTAssertEqual(streams(out).count, 1)
        for stream in streams(out) {
            let (status, report) = try validate(out + "/streams/" + stream)
            XCTAssertEqual(status, 0, "\(stream): \(report)")
        }
    }

    /// libmicrohttpd's own messages go through the logger: every stderr line stays JSON.
    func testServerMessagesKeepTheJSONLog() throws {
        let out = try temporaryDirectory("json")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let onair = try Child(onairBinary(), ["run"] + fast + ["--duration", "30", "--pace", "realtime", "--listen", "127.0.0.1:0",
                                                              "--out", out, "--log-format", "json"])
        let listening = try XCTUnwrap(onair.waitForLog("server.listening"), onair.stderr)
        let url = try XCTUnwrap(listening.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression).map { String(listening[$0]) })
        let port = try XCTUnwrap(UInt16(url.split(separator: ":").last!))
        for request in ["GET / HTTP/1.1\r\nHost: x\r\n" + String(repeating: "X-Big: " + String(repeating: "a", count: 4000) + "\r\n", count: 40) + "\r\n",
                        "BREW /pot HTCPCP/1.0\r\n\r\n", "\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03}"] {
            if let socket = RawSocket(port: port) { socket.send(request); _ = socket.response() }
        }
        onair.signal(SIGTERM)
        XCTAssertEqual(onair.wait().status, 0)
        XCTAssertTrue(onair.stderr.contains("\"event\":\"server.message\""), "libmicrohttpd spoke, through the logger: \(onair.stderr)")
        for line in onair.stderr.split(separator: "\n") {
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(line.utf8)), "not JSON: \(line)")
        }
    }
}
