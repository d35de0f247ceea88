#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import Files
import Media

extension WebServer {
    /// A file made on request from the URL's arguments: what to send and its name, or why
    /// not (a status and one line, answered as JSON).
    public struct Download: Sendable {
        public enum Answer {
            case file(JoinedFile, name: String, contentType: String)
            case refused(UInt32, String)
        }
        public var make: @Sendable (_ argument: (String) -> String?) -> Answer
        public init(_ make: @escaping @Sendable (_ argument: (String) -> String?) -> Answer) { self.make = make }
    }

    /// A URL argument (`?stream=…`) by name, decoded by libmicrohttpd.
    func argumentReader(_ connection: OpaquePointer) -> (String) -> String? {
        { name in MHD_lookup_connection_value(connection, .GET_ARGUMENT_KIND, name).map { String(cString: $0) } }
    }

    /// The whole file, or the one byte range asked for (RFC 9110 §14), as an attachment
    /// named after what it holds; an ETag of its size and name, so a resumed download of a
    /// live stream that has grown since can tell (If-Range, §13.1.5).
    func download(_ url: String, _ download: Download, header: (String) -> String?, argument: (String) -> String?) -> Reply {
        switch download.make(argument) {
        case .refused(let status, let message):
            return Reply(status: status, body: .bytes(JSON.fields(["error": message]).bytes),
                         headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")])
        case .file(let file, let name, let type):
            let size = file.size
            let etag = "\"\(String(UInt64(size), radix: 16))-\(String(UInt64(truncatingIfNeeded: Self.hash(name)), radix: 16))\""
            var headers = [("Content-Type", type), ("Cache-Control", "no-store"), ("ETag", etag), ("Accept-Ranges", "bytes"),
                           ("Content-Disposition", "attachment; filename=\"\(name)\"")]
            let ranged = header("If-Range").map { $0 == etag } ?? true
            switch ranged ? ByteRange.parse(header("Range"), size: size) : .none {
            case .none:
                return Reply(status: 200, body: .joined(file, offset: 0, length: size), headers: headers)
            case .unsatisfiable:
                headers.append(("Content-Range", "bytes */\(size)"))
                return Reply(status: 416, body: .bytes([]), headers: headers)
            case .range(let first, let last):
                headers.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
                return Reply(status: 206, body: .joined(file, offset: first, length: last - first + 1), headers: headers)
            }
        }
    }

    /// FNV-1a, for the ETag: which file this is, not a secret.
    static func hash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    /// A response that reads `length` bytes of `file` from `offset` as libmicrohttpd asks
    /// for them (64 KiB at a time): the file is never in memory. A read that fails (a
    /// segment deleted for space mid-download) ends the response with an error, so the
    /// client sees a short transfer, not wrong bytes.
    static func response(_ file: JoinedFile, offset: Int64, length: Int64) -> OpaquePointer? {
        final class Reading { let file: JoinedFile; let offset: Int64; init(_ file: JoinedFile, _ offset: Int64) { self.file = file; self.offset = offset } }
        let context = Unmanaged.passRetained(Reading(file, offset)).toOpaque()
        return MHD_create_response_from_callback(UInt64(length), 64 * 1024, { context, position, buffer, max in
            let reading = Unmanaged<Reading>.fromOpaque(context!).takeUnretainedValue()
            guard let buffer, let count = try? reading.file.read(at: reading.offset + Int64(position), into: buffer, count: max),
                  count > 0 else { return -2 }  // MHD_CONTENT_READER_END_WITH_ERROR
            return count
        }, context, { context in Unmanaged<AnyObject>.fromOpaque(context!).release() })
    }
}
