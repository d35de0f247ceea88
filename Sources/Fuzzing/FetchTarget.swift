import Fetch
import Foundation
import Layout
import System
import TestSupport
import Threading

extension FuzzTargets {
    /// `onair fetch --follow` of a playlist from an outside server (issue 29): sequence
    /// numbers, target durations, durations and byte ranges at the edges of Int64, with
    /// the segments onair's own packager made. The first reload serves the input; later
    /// ones add ENDLIST, so a follow ends. A thrown error is an answer; a trap is a find.
    public static let fetch = FuzzTarget(name: "fetch", seeds: [
        Array(stream[StreamLayout.playlist]!.utf8),
        Array(stream[StreamLayout.playlist]!.replacingOccurrences(of: "#EXT-X-ENDLIST\n", with: "").utf8),
        Array(stream[StreamLayout.playlist]!.replacingOccurrences(of: "#EXT-X-ENDLIST\n", with: "")
            .replacingOccurrences(of: "#EXT-X-TARGETDURATION:2", with: "#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:7").utf8),
        Array(stream[StreamLayout.index]!.utf8),
        Array(stream[StreamLayout.iFrames]!.replacingOccurrences(of: "#EXT-X-I-FRAMES-ONLY\n", with: "").utf8)
    ], textual: true) { bytes in
        let work = NSTemporaryDirectory() + "onair-fuzz-fetch-\(ThisProcess.id)"
        defer { try? FileManager.default.removeItem(atPath: work) }
        var options = FetchOptions(url: "http://origin.invalid/s/" + StreamLayout.playlist)
        options.follow = true
        options.format = .hls
        options.out = work
        _ = try? Fetcher(options, http: ServedStream(playlist: bytes), clock: ManualClock(), say: { _ in }).run()
    }
}

/// The fuzz stream's files at `http://origin.invalid/s/`, its playlist replaced.
final class ServedStream: Getter {
    let playlist: [UInt8]
    var reloads = 0
    init(playlist: [UInt8]) { self.playlist = playlist }

    func get(_ url: String) throws -> [UInt8] {
        let name = String(url.dropFirst("http://origin.invalid/s/".count))
        if name == StreamLayout.playlist {
            reloads += 1
            guard reloads < 50 else { throw FetchError("\(url): reloaded 50 times", status: 404) }
            return reloads == 1 ? playlist : playlist + Array("\n#EXT-X-ENDLIST\n".utf8)
        }
        guard url.hasPrefix("http://origin.invalid/s/"), let file = FuzzTargets.stream.files[name] else { throw FetchError("\(url): HTTP 404", status: 404) }
        return file
    }
}
