import Basics
import Files
import HLS
import Layout
import System

/// The stream files and finished recordings, straight from the data directory: only what
/// lies inside it, as a regular file, with the validators and ranges players and caches
/// use (RFC 9110 §13, §14).
extension WebServer {
    /// The file for a URL path, only if it lies inside the data directory: no `..` or `.`
    /// components, no NUL or backslash, and no symbolic link that leads outside. `staged`:
    /// the same file of a stream still in its hidden staging directory (`.<id>.tmp`).
    func resolve(_ url: String, staged: Bool = false) -> String? {
        var components = url.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard !components.isEmpty, components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.hasPrefix(".")
            && !$0.contains("\0") && !$0.contains("\\") }) else { return nil }
        if staged {
            guard components.count >= 3, components[0] == StreamLayout.streamsFolder else { return nil }
            components[1] = StreamLayout.temporary(components[1])
        }
        let path = root + "/" + components.joined(separator: "/")
        guard let resolved = try? Path.resolved(path) else { return nil }
        return [StreamLayout.streamsURL, StreamLayout.recordingsURL].contains { resolved.hasPrefix(canonicalRoot + $0) } ? resolved : nil
    }

    /// A live stream's init.mp4 and index.m3u8 before its first segment is stored: they are
    /// still in its staging directory (StreamWriter), and a low-latency player asks for its
    /// init as soon as the first parts are listed.
    fileprivate func stagedFile(_ url: String) -> String? {
        let components = url.split(separator: "/", omittingEmptySubsequences: false)
        guard components.count >= 4, components[1] == StreamLayout.streamsFolder, liveEdge?.isLive(String(components[2])) ?? false else { return nil }
        return resolve(url, staged: true)
    }

    func serveFile(_ url: String, header: (String) -> String?) -> Reply {
        let notFound = Reply(status: 404, body: .bytes(Array("not found\n".utf8)), headers: [("Content-Type", "text/plain")])
        guard let path = resolve(url) ?? stagedFile(url) else { return notFound }
        // O_NONBLOCK: a FIFO planted in the data directory must not hold a server thread.
        guard let fd = try? FileDescriptor.open(path, .readOnly, options: .nonBlocking),
              let status = try? fd.status(), status.kind == .regular else { return notFound }
        let size = status.size
        let modified = Int64(status.modifiedSeconds)
        let etag = "\"\(String(UInt64(size), radix: 16))-\(String(UInt64(modified) &* 1_000_000_000 &+ UInt64(status.modifiedNanoseconds), radix: 16))\""
        let (type, cache) = MediaType.of(path)
        var headers = [("Content-Type", type), ("Cache-Control", cache), ("ETag", etag),
                       ("Last-Modified", UTCDate.httpDate(seconds: modified)), ("Accept-Ranges", "bytes")]
        if let match = header("If-None-Match"), match.split(separator: ",").contains(where: { $0.trimmingWhitespace() == etag || $0 == "*" }) {
            return Reply(status: 304, body: .bytes([]), headers: headers.filter { $0.0 != "Content-Type" })
        }
        switch ByteRange.parse(header("Range"), size: size) {
        case .none:
            return Reply(status: 200, body: .file(fd, offset: 0, length: size), headers: headers)
        case .unsatisfiable:
            headers.append(("Content-Range", "bytes */\(size)"))
            return Reply(status: 416, body: .bytes([]), headers: headers)
        case .range(let first, let last):
            headers.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
            return Reply(status: 206, body: .file(fd, offset: first, length: last - first + 1), headers: headers)
        }
    }
}
