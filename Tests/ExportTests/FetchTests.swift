import Foundation
#if canImport(Glibc)
import Glibc
#endif
import XCTest
@testable import Export
@testable import Fetch
import Files
import HLS
import Layout
import Server
import TestSupport
import Threading

/// `onair fetch`: a copy of a stream over HTTP, checked, resumable, in media time.
final class FetchTests: XCTestCase {
    /// Serves a stream directory as a web server would, counting requests; `fault` may
    /// fail or corrupt a request before it is answered.
    final class DirectoryGetter: Getter {
        let root: String
        var requests: [String: Int] = [:]
        var fault: (String, Int) throws -> [UInt8]? = { _, _ in nil }
        var playlist: ((String) -> String)?
        init(root: String) { self.root = root }
        /// Every request for a path ending in `suffix` fails, as a refused connection does.
        func refuse(_ suffix: String) {
            fault = { path, _ in
                if path.hasSuffix(suffix) { throw FetchError("http://device\(path): connection refused") }
                return nil
            }
        }
        func get(_ url: String) throws -> [UInt8] {
            let path = String(url.dropFirst("http://device".count))
            requests[path, default: 0] += 1
            if let replaced = try fault(path, requests[path]!) { return replaced }
            guard var bytes = FileSystem.read(root + path) else { throw FetchError("\(url): HTTP 404", status: 404) }
            if path.hasSuffix("playlist.m3u8"), let playlist { bytes = Array(playlist(String(decoding: bytes, as: UTF8.self)).utf8) }
            return bytes
        }
    }

    func fetcher(_ options: FetchOptions, _ http: Getter) -> Fetcher {
        Fetcher(options, http: http, clock: ManualClock(), say: { _ in })
    }

    func testACopyIsTheSameMovieAsTheDevicesExportAndEveryFrameIsThere() throws {
        let (root, id) = try storedStream()
        let server = try WebServer(listen: "127.0.0.1:0", root: root)
        defer { server.stop() }
        var options = FetchOptions(url: "http://127.0.0.1:\(server.port)/streams/\(id)/index.m3u8")
        options.dataDirectory = root + "/copies"
        var lines: [String] = []
        let result = try Fetcher(options, clock: ManualClock(), say: { lines.append($0) }).run()
        XCTAssertEqual(result.path, root + "/copies/offline/\(id).mp4", "without --out: the data directory's offline/, named after the stream")
        XCTAssertEqual(result.fetched, 6)
        XCTAssertEqual(result.seconds, 12, accuracy: 0.001)
        XCTAssertTrue(lines.contains { $0.hasPrefix("fetch: variant 320x192 at ") && $0.contains("the highest bit rate, of 1") }, "\(lines)")
        XCTAssertTrue(lines.contains("fetch: 0:12 of 0:12  -  0:00 left") || lines.contains { $0.hasPrefix("fetch: 0:12 of 0:12") }, "\(lines)")
        XCTAssertEqual(try Array(Data(contentsOf: URL(fileURLWithPath: result.path))),
                       try StreamExport.make(root: root, ExportRequest(stream: id)).file.readAll(), "the same bytes as GET /api/export")
        XCTAssertEqual(try Probe(result.path).indices, (0..<360).map { UInt32($0) })
        XCTAssertFalse(FileManager.default.fileExists(atPath: root + "/copies/offline/.\(id).mp4.fetch"), "the pieces are gone")
        let listed = OfflineStore.list(dataDirectory: root + "/copies")
        XCTAssertEqual(listed.map(\.source), [options.url])
        XCTAssertEqual(listed.first?.seconds ?? 0, 12, accuracy: 0.001)
    }

    func testAnInterruptedFetchResumesWithoutFetchingASegmentTwiceAndEndsWithTheSameBytes() throws {
        let (root, id) = try storedStream()
        let url = "http://device/streams/\(id)/index.m3u8"
        var whole = FetchOptions(url: url)
        whole.out = root + "/whole.mp4"
        _ = try fetcher(whole, DirectoryGetter(root: root)).run()

        var options = FetchOptions(url: url)
        options.out = root + "/resumed.mp4"
        let http = DirectoryGetter(root: root)
        // The network goes after the fourth segment (every attempt at the fifth fails).
        http.refuse("seg/000005.m4s")
        XCTAssertThrowsError(try fetcher(options, http).run()) { XCTAssertTrue("\($0)".contains("000005.m4s: connection refused (after 4 attempts)"), "\($0)") }
        XCTAssertFalse(FileManager.default.fileExists(atPath: options.out!), "nothing that looks complete")
        // A kill -9 mid-rename leaves a temporary file: never taken for a segment.
        let work = root + "/.resumed.mp4.fetch/seg"
        FileManager.default.createFile(atPath: work + "/" + StreamLayout.temporary("000005.m4s"), contents: Data([1, 2, 3]))
        http.fault = { _, _ in nil }
        let result = try fetcher(options, http).run()
        XCTAssertEqual(result.fetched, 2)
        XCTAssertEqual(result.resumed, 4)
        for number in 1...6 {
            let segment = "/streams/\(id)/seg/00000\(number).m4s"
            XCTAssertEqual(http.requests[segment], number == 5 ? Fetcher.attempts + 1 : 1, "\(segment) fetched once (the fifth: its failures, then once)")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: options.out!)), try Data(contentsOf: URL(fileURLWithPath: whole.out!)))
    }

    /// The real client against a real server that goes away after the third segment and
    /// comes back on the same port: libcurl's own failure, then a resume.
    func testAnOriginOutageEndsTheRunAndTheNextOneFinishesTheCopy() throws {
        let (root, id) = try storedStream()
        var server = try WebServer(listen: "127.0.0.1:0", root: root)
        let port = server.port
        final class Outage: Getter {
            let curl = CurlGetter()
            var segments = 0
            var down: () -> Void = {}
            func get(_ url: String) throws -> [UInt8] {
                if url.hasSuffix(".m4s") { segments += 1 }
                if segments == 4 { down() }
                return try curl.get(url)
            }
        }
        let http = Outage()
        http.down = { server.stop() }
        var options = FetchOptions(url: "http://127.0.0.1:\(port)/streams/\(id)/index.m3u8")
        options.out = root + "/copy.mp4"
        XCTAssertThrowsError(try fetcher(options, http).run()) { error in
            XCTAssertTrue("\(error)".contains("seg/000004.m4s"), "\(error)")
            XCTAssertTrue("\(error)".contains("after 4 attempts"), "\(error)")
        }
        server = try WebServer(listen: "127.0.0.1:\(port)", root: root)
        defer { server.stop() }
        http.down = {}
        let result = try fetcher(options, http).run()
        XCTAssertEqual(result.resumed, 3)
        XCTAssertEqual(result.fetched, 3)
        XCTAssertEqual(try Array(Data(contentsOf: URL(fileURLWithPath: options.out!))),
                       try StreamExport.make(root: root, ExportRequest(stream: id)).file.readAll())
    }

    /// A card that fills up while the movie is assembled: one line, no file under the
    /// copy's name, and the fetched segments kept for the run after space is freed.
    func testAFullDiskLeavesNothingThatLooksComplete() throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a tmpfs needs root (CI runs as root)") }
        let (root, id) = try storedStream()
        let mount = root + "/small"
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        func run(_ tool: String, _ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
            try process.run()
            process.waitUntilExit()
        }
        let segments = (FileSystem.filesBelow(root + "/streams/\(id)/seg")).reduce(Int64(0)) { $0 + (FileSystem.size(root + "/streams/\(id)/seg/" + $1) ?? 0) }
        // Room for the segments, not for the movie beside them as well.
        try run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(segments * 3 / 2)", "tmpfs", mount])
        defer { try? run("/bin/umount", [mount]) }
        var options = FetchOptions(url: "http://device/streams/\(id)/index.m3u8")
        options.out = mount + "/copy.mp4"
        XCTAssertThrowsError(try fetcher(options, DirectoryGetter(root: root)).run()) {
            XCTAssertTrue("\($0)".contains("No space left on device"), "\($0)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mount).filter { !$0.hasPrefix(".") }, [],
                       "nothing under a name that looks like a copy")
        XCTAssertEqual(FileSystem.names(in: mount + "/.copy.mp4.fetch/seg")?.filter { !$0.hasPrefix(".") }.count, 6, "the segments wait for the next run")
    }

    func testABadSegmentIsFetchedAgainAndOneThatStaysBadIsNamed() throws {
        let (root, id) = try storedStream()
        var options = FetchOptions(url: "http://device/streams/\(id)/index.m3u8")
        options.out = root + "/copy.mp4"
        let http = DirectoryGetter(root: root)
        http.fault = { path, count in path.hasSuffix("seg/000003.m4s") && count == 1 ? [0, 0, 0, 8] + Array("junk".utf8) : nil }
        XCTAssertEqual(try fetcher(options, http).run().fetched, 6)
        XCTAssertEqual(http.requests["/streams/\(id)/seg/000003.m4s"], 2)

        // One from elsewhere in the stream: its tfdt does not continue the one before.
        options.out = root + "/other.mp4"
        let swapped = DirectoryGetter(root: root)
        swapped.fault = { path, _ in path.hasSuffix("seg/000004.m4s") ? FileSystem.read(root + "/streams/\(id)/seg/000002.m4s") : nil }
        XCTAssertThrowsError(try fetcher(options, swapped).run()) { error in
            XCTAssertTrue("\(error)".contains("seg/000004.m4s: track 1 starts at tfdt"), "\(error)")
            XCTAssertTrue("\(error)".contains("after 4 attempts"), "\(error)")
        }
    }

    func testFollowKeepsFetchingALiveStreamUntilItsEnd() throws {
        let (root, id) = try storedStream()
        var options = FetchOptions(url: "http://device/streams/\(id)/playlist.m3u8")
        options.out = root + "/live.mp4"
        options.follow = true
        let http = DirectoryGetter(root: root)
        // The playlist as a live one shows it: two segments more at each reload, ENDLIST at the end.
        var polls = 0
        http.playlist = { text in
            polls += 1
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let uris = lines.indices.filter { lines[$0].hasPrefix("seg/") }
            let keep = min(uris.count, polls * 2)
            if keep == uris.count { return text }
            return lines[...uris[keep - 1]].joined(separator: "\n") + "\n"
        }
        let result = try fetcher(options, http).run()
        XCTAssertEqual(result.fetched, 6)
        XCTAssertEqual(polls, 3)
        XCTAssertEqual(result.seconds, 12, accuracy: 0.001)
        var once = FetchOptions(url: options.url)
        once.out = root + "/now.mp4"
        polls = 0
        XCTAssertEqual(try fetcher(once, http).run().fetched, 2, "without --follow: what is listed now")
    }

    /// RFC 8216bis §6.3.4 as issue 29 asks: a target duration after a playlist that grew,
    /// half of one after one that did not, and never faster than a second (TARGETDURATION:0
    /// reloaded 22 times a second).
    func testReloadsWaitATargetDurationOrHalfOneAndNeverLessThanASecond() {
        var rendition = Fetcher.Rendition(url: "u", copy: LocalCopy(work: "/nonexistent"))
        rendition.targetDuration = 6
        XCTAssertEqual(rendition.reloadMilliseconds, 6000)
        rendition.grew = false
        XCTAssertEqual(rendition.reloadMilliseconds, 3000)
        rendition.targetDuration = 0
        XCTAssertEqual(rendition.reloadMilliseconds, 1000)
        rendition.grew = true
        XCTAssertEqual(rendition.reloadMilliseconds, 1000)
    }

    /// Durations a playlist gives (0.000…1 s, a year) make rates and shares of any size:
    /// the progress line prints them without a trapping conversion.
    func testProgressPrintsAnyMediaTime() {
        let clock = ManualClock()
        var lines: [String] = []
        let progress = FetchProgress(clock: clock, write: { lines.append($0) }, terminal: true)
        progress.total = 1e-300
        clock.advance(by: 1)
        progress.advance(to: 3e13, fetchedNow: 3e13, resumed: false)
        progress.finish()
        XCTAssertTrue(lines.last?.contains("[##############################]") ?? false, lines.last ?? "")
        XCTAssertFalse(FetchProgress.clockTime(1e300).isEmpty)
    }

    /// Issue 29: what a followed stream keeps is bounded (`--max-bytes`): an endless one
    /// ends there, as if it had ended, with a playable copy of what was kept.
    func testFollowStopsAtMaxBytesAndFinishesTheCopy() throws {
        let (root, id) = try storedStream()
        let segment = try XCTUnwrap(FileSystem.size(root + "/streams/\(id)/seg/000001.m4s"))
        var options = FetchOptions(url: "http://device/streams/\(id)/playlist.m3u8")
        options.out = root + "/endless.mp4"
        options.follow = true
        options.maxBytes = 2 * segment + 1
        let http = DirectoryGetter(root: root)
        http.playlist = { $0.replacingOccurrences(of: "#EXT-X-ENDLIST\n", with: "") }  // it never ends
        let result = try fetcher(options, http).run()
        XCTAssertEqual(result.fetched, 3, "the segment that crossed the bound is the last")
        XCTAssertEqual(result.seconds, 6, accuracy: 0.001)
        XCTAssertEqual(http.requests["/streams/\(id)/playlist.m3u8"], 1, "no reload once full")
        XCTAssertTrue(FileManager.default.fileExists(atPath: options.out!))
    }

    /// Issue 29: a body larger than its bound is refused as it arrives (held in no more
    /// than the bound), and a server that trickles is given up on.
    func testAnEndlessBodyAndATricklingServerAreEachOneLine() throws {
        let endless = try RecordingServer(reply: { _ in .answer(200, headers: [:], body: [UInt8](repeating: 0x41, count: 80 << 20)) })
        let getter = CurlGetter()
        let big = "http://127.0.0.1:\(endless.port)/seg/000001.m4s"
        XCTAssertThrowsError(try getter.get(big, limit: FileSystem.segmentLimit)) { XCTAssertEqual("\($0)", "\(big): larger than 64 MiB") }
        let slow = try RecordingServer(reply: { _ in .answer(200, headers: [:], body: [UInt8](repeating: 0x41, count: 200_000)) })
        slow.replyThrottle = 1500
        let trickle = "http://127.0.0.1:\(slow.port)/seg/000001.m4s"
        XCTAssertThrowsError(try getter.get(trickle, limit: FileSystem.segmentLimit)) {
            XCTAssertEqual("\($0)", "\(trickle): slower than 8 kB/s for 15 s (the server is trickling)")
        }
    }

    func testHLSFormatKeepsAPlayableLocalCopy() throws {
        let (root, id) = try storedStream()
        var options = FetchOptions(url: "http://device/streams/\(id)/index.m3u8")
        options.out = root + "/copy"
        options.format = .hls
        let result = try fetcher(options, DirectoryGetter(root: root)).run()
        XCTAssertEqual(result.path, root + "/copy")
        let playlist = try String(contentsOfFile: root + "/copy/playlist.m3u8", encoding: .utf8)
        XCTAssertTrue(playlist.contains(StreamLayout.segment(1) + "\n") && playlist.hasSuffix("#EXT-X-ENDLIST\n"), playlist)
        XCTAssertEqual(try Probe(root + "/copy/playlist.m3u8").indices, (0..<360).map { UInt32($0) })
    }

    /// A quality ladder (the sound a rendition of its own): the rung the limits allow and
    /// its sound, fetched side by side, make the same movie as the device's own export of
    /// that rung; either may be the one an interruption stopped; `--format hls` keeps both
    /// under a multivariant playlist of their own.
    func testALadderIsFetchedAsOneRungWithItsSound() throws {
        let (root, id) = try storedStream(ladder: true)
        let url = "http://device/streams/\(id)/index.m3u8"
        var top = FetchOptions(url: url)
        top.out = root + "/top.mp4"
        var lines: [String] = []
        let result = try Fetcher(top, http: DirectoryGetter(root: root), clock: ManualClock(), say: { lines.append($0) }).run()
        XCTAssertEqual(result.fetched, 12, "six segments of pictures, six of sound")
        XCTAssertEqual(result.seconds, 12, accuracy: 0.001)
        XCTAssertTrue(lines.contains { $0.hasPrefix("fetch: variant 320x192 at ") && $0.contains("the highest bit rate, of 2") }, "\(lines)")
        XCTAssertTrue(lines.contains("fetch: sound Main, a rendition of its own"), "\(lines)")
        XCTAssertEqual(try Array(Data(contentsOf: URL(fileURLWithPath: top.out!))),
                       try StreamExport.make(root: root, ExportRequest(stream: id)).file.readAll(), "the same bytes as GET /api/export")
        let probe = try Probe(top.out!)
        XCTAssertEqual(probe.indices, (0..<360).map { UInt32($0) })
        XCTAssertEqual(probe.audioSeconds, 12, accuracy: 0.1, "the sound is in the copy")
        XCTAssertEqual(probe.errors, "")

        // --max-size: the lower rung, with the same sound. The network goes at the sound's
        // fourth segment; the next run fetches only what is missing.
        var small = FetchOptions(url: url)
        small.out = root + "/small.mp4"
        small.maxSize = PictureSize(width: 200, height: 200)
        let http = DirectoryGetter(root: root)
        http.refuse("audio/seg/000004.m4s")
        XCTAssertThrowsError(try fetcher(small, http).run()) { XCTAssertTrue("\($0)".contains("audio/seg/000004.m4s: connection refused"), "\($0)") }
        XCTAssertFalse(FileManager.default.fileExists(atPath: small.out!), "nothing that looks complete")
        http.fault = { _, _ in nil }
        // Another rung into the same interrupted copy would mix two rungs' segments.
        var other = small
        other.maxSize = nil
        XCTAssertThrowsError(try fetcher(other, http).run()) {
            XCTAssertEqual("\($0)", "\(root)/.small.mp4.fetch holds an interrupted copy of http://device/streams/\(id)/v1/playlist.m3u8; "
                           + "remove it, or give --out another name, to copy http://device/streams/\(id)/v0/playlist.m3u8")
        }
        let resumed = try fetcher(small, http).run()
        XCTAssertEqual(resumed.resumed, 9, "the rung's six segments and three of the sound were there")
        XCTAssertEqual(resumed.fetched, 3)
        for number in 1...6 {
            XCTAssertEqual(http.requests["/streams/\(id)/v1/seg/00000\(number).m4s"], 1, "the rung's segment \(number) fetched once")
            XCTAssertNil(http.requests["/streams/\(id)/v0/seg/00000\(number).m4s"], "the top rung is not fetched")
        }
        var request = ExportRequest(stream: id)
        request.maxSize = small.maxSize
        XCTAssertEqual(try Array(Data(contentsOf: URL(fileURLWithPath: small.out!))),
                       try StreamExport.make(root: root, request).file.readAll(), "the same bytes as GET /api/export?max_size=200x200")
        let streams = try toolOutput("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width,height", "-of", "csv=p=0", small.out!])
        XCTAssertEqual(String(decoding: streams.stdout, as: UTF8.self).split(separator: "\n").sorted(), ["audio", "video,160,96"])

        // --format hls: the rung and its sound, under an index.m3u8 that lists both.
        var copy = FetchOptions(url: url)
        copy.out = root + "/copy"
        copy.format = .hls
        _ = try fetcher(copy, DirectoryGetter(root: root)).run()
        let index = try String(contentsOfFile: root + "/copy/index.m3u8", encoding: .utf8)
        let local = try XCTUnwrap(MultivariantPlaylist(parsing: index), index)
        XCTAssertEqual(local.variants.map(\.uri), ["playlist.m3u8"])
        XCTAssertEqual(local.variants.map(\.audioGroup), ["audio"])
        XCTAssertEqual(local.audio.map(\.uri), ["audio/playlist.m3u8"])
        XCTAssertTrue(try String(contentsOfFile: root + "/copy/audio/playlist.m3u8", encoding: .utf8).hasSuffix("#EXT-X-ENDLIST\n"))
        let played = try Probe(root + "/copy/index.m3u8")
        XCTAssertEqual(played.indices, (0..<360).map { UInt32($0) })
        XCTAssertEqual(played.errors, "")
        let kinds = try toolOutput("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", root + "/copy/index.m3u8"])
        // ffprobe names each stream once per program too: the kinds are what counts.
        XCTAssertEqual(Set(String(decoding: kinds.stdout, as: UTF8.self).split(separator: "\n")), ["audio", "video"])
    }

    func testWhatCannotBeFetchedIsOneLine() throws {
        let (root, id) = try storedStream()
        let http = DirectoryGetter(root: root)
        func failure(_ url: String, _ change: ((String) -> String)? = nil) -> String {
            http.playlist = change
            var options = FetchOptions(url: url)
            options.out = root + "/x-\(UUID().uuidString).mp4"
            do { _ = try fetcher(options, http).run(); return "" } catch { return "\(error)" }
        }
        XCTAssertEqual(failure("http://device/streams/nope/index.m3u8"), "http://device/streams/nope/index.m3u8: HTTP 404")
        XCTAssertEqual(failure("http://device/streams/\(id)/init.mp4"), "http://device/streams/\(id)/init.mp4: not an HLS playlist (no #EXTM3U)")
        XCTAssertTrue(failure("http://device/streams/\(id)/playlist.m3u8") {
            $0.replacingOccurrences(of: "#EXT-X-MAP:URI=\"init.mp4\"\n", with: "").replacingOccurrences(of: ".m4s", with: ".ts")
        }.hasSuffix("MPEG-TS segments are not supported (onair fetches fragmented-MP4 HLS, which has EXT-X-MAP)"))
        // Issue 29: numbers at the edges of Int64 are one line each, never a trap.
        let url = "http://device/streams/\(id)/playlist.m3u8"
        XCTAssertEqual(failure(url) { $0.replacingOccurrences(of: "#EXT-X-TARGETDURATION:2", with: "#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:9223372036854775807") },
                       "\(url): EXT-X-MEDIA-SEQUENCE:9223372036854775807 is not a sequence number its 6 segments can follow")
        XCTAssertEqual(failure(url) { $0.replacingOccurrences(of: "#EXT-X-TARGETDURATION:2", with: "#EXT-X-TARGETDURATION:99999999999") },
                       "\(url): EXT-X-TARGETDURATION:99999999999 is not a number of seconds up to a year")
        try FileManager.default.removeItem(atPath: root + "/streams/\(id)/seg/000006.m4s")
        XCTAssertEqual(failure("http://device/streams/\(id)/playlist.m3u8"),
                       "http://device/streams/\(id)/seg/000006.m4s: HTTP 404", "a 404 is not retried")
    }

    func testOfflineCopiesExpireAndAreReclaimedByPriority() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-offline-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/offline/folder/seg", withIntermediateDirectories: true)
        let day: Int64 = 86_400_000
        let synced = SteppedWallClock(offsetMs: 1_796_000_000_000, synchronized: true, clock: ManualClock(now: 0))
        for (name, days, priority) in [("old.mp4", 7, "normal"), ("kept.mp4", 7, "keep"), ("folder", 30, "normal")] {
            let path = root + "/offline/" + name
            if name.hasSuffix(".mp4") { FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3])) } else {
                FileManager.default.createFile(atPath: path + "/seg/000000001.m4s", contents: Data([4]))
            }
            try OfflineStore.describe(path, source: "http://h/\(name)", seconds: 60, keepDays: days, priority: priority, clock: synced)
        }
        let unsynced = SteppedWallClock(offsetMs: 1_796_000_000_000, synchronized: false, clock: ManualClock(now: 0))
        try OfflineStore.describe(root + "/offline/undated.mp4", source: "http://h/u", seconds: 1, keepDays: 1, priority: "normal", clock: unsynced)
        XCTAssertEqual(OfflineStore.evictable(dataDirectory: root).map { $0.path.split(separator: "/").last! }, ["undated.mp4", "folder", "old.mp4"],
                       "what space may reclaim: never a kept copy")
        XCTAssertEqual(OfflineStore.expire(dataDirectory: root, nowMs: 1_796_000_000_000 + 8 * day).map(\.source), ["http://h/old.mp4"],
                       "past its --keep-days; not the kept one, not one without a trusted date")
        XCTAssertEqual(OfflineStore.expire(dataDirectory: root, nowMs: 1_796_000_000_000 + 31 * day).map(\.source), ["http://h/folder"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: root + "/offline/folder"))
        XCTAssertEqual(OfflineStore.list(dataDirectory: root).map(\.source), ["http://h/kept.mp4", "http://h/u"])
        XCTAssertTrue(OfflineStore.table(OfflineStore.list(dataDirectory: root)).contains("kept.mp4  1:00  0 MiB  kept  http://h/kept.mp4"))
    }

    func testTheVariantIsChosenAsAnOfflineDownloadChoosesIt() {
        let variants = ParsedPlaylist(text: """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360
            low.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=2500000,RESOLUTION=1280x720
            mid.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=6000000,RESOLUTION=1920x1080
            high.m3u8
            """).variants
        XCTAssertEqual(VariantChoice.choose(variants, maxBitrate: nil, maxSize: nil)?.variant.uri, "high.m3u8")
        XCTAssertEqual(VariantChoice.choose(variants, maxBitrate: 3_000_000, maxSize: nil)?.reason,
                       "1280x720 at 2500000 b/s: the highest bit rate at most 3000000 b/s, of 3")
        XCTAssertEqual(VariantChoice.choose(variants, maxBitrate: nil, maxSize: PictureSize(width: 1000, height: 600))?.variant.uri, "low.m3u8")
        XCTAssertEqual(VariantChoice.choose(variants, maxBitrate: 100_000, maxSize: nil)?.reason,
                       "640x360 at 800000 b/s: the lowest bit rate, as none is at most 100000 b/s")
    }

    func testURLsResolveAsPlaylistsUseThem() {
        XCTAssertEqual(Fetcher.resolve("seg/1.m4s", against: "http://h:8/live/x/playlist.m3u8?token=1"), "http://h:8/live/x/seg/1.m4s")
        XCTAssertEqual(Fetcher.resolve("/other/p.m3u8", against: "https://h/live/index.m3u8"), "https://h/other/p.m3u8")
        XCTAssertEqual(Fetcher.resolve("https://cdn/s.m4s", against: "http://h/x.m3u8"), "https://cdn/s.m4s")
        XCTAssertEqual(Fetcher.name(of: "http://h/live/20261202T164233Z-3f9a/index.m3u8"), "20261202T164233Z-3f9a")
        XCTAssertEqual(Fetcher.name(of: "http://h/show.m3u8?x=1"), "show")
        XCTAssertEqual(FetchProgress.clockTime(750), "12:30")
        XCTAssertEqual(FetchProgress.clockTime(3725), "1:02:05")
    }
}
