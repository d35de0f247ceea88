import CMicroHTTPD
import Foundation
import HLS
import Media

public struct ServerError: Error, CustomStringConvertible {
    public var description: String
}

/// The built-in web server: the viewer page, /api/*, the stream files and the finished
/// recordings (Range requests for downloads), with the
/// headers HLS players and caches expect. libmicrohttpd runs its own threads; the handler
/// only reads files, so it shares nothing mutable with the media plane.
public final class WebServer: @unchecked Sendable {
    public let root: String
    private let canonicalRoot: String
    private let catalog: StreamCatalog
    private var daemon: OpaquePointer?
    public private(set) var port: UInt16 = 0

    /// A document composed by whoever runs the server, fresh at each request.
    public struct Endpoint: Sendable {
        public var contentType: String
        public var body: @Sendable () -> [UInt8]
        public init(contentType: String, body: @escaping @Sendable () -> [UInt8]) {
            self.contentType = contentType
            self.body = body
        }
        public static func json(_ body: @escaping @Sendable () -> [UInt8]) -> Endpoint {
            Endpoint(contentType: "application/json", body: body)
        }
    }

    /// GET documents by path (`/api/status`, `/api/recordings`, `/metrics`).
    private let api: [String: Endpoint]
    /// POST actions by path (`/api/record/start`), each answering with a JSON body; only
    /// with `Authorization: Bearer <token>`, and not at all without a token.
    private let control: [String: @Sendable () -> [UInt8]]
    private let token: String?

    /// Listens on `address` ("127.0.0.1:8080", "[::1]:8080", "0.0.0.0:0" for any port).
    public init(listen address: String, root: String, api: [String: Endpoint] = [:],
                control: [String: @Sendable () -> [UInt8]] = [:], token: String? = nil) throws {
        self.root = root
        self.api = api
        self.control = control
        self.token = token
        catalog = StreamCatalog(root: root)
        try? FileManager.default.createDirectory(atPath: root + "/streams", withIntermediateDirectories: true)
        guard let real = realpath(root, nil) else { throw ServerError(description: "data directory \(root) does not exist") }
        canonicalRoot = String(cString: real)
        free(real)
        var storage = sockaddr_storage()
        try Self.parse(address, into: &storage)
        let handler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, _, uploadSize, state in
            let server = Unmanaged<WebServer>.fromOpaque(cls!).takeUnretainedValue()
            let method = String(cString: method!)
            // A POST arrives in several calls (headers, then body pieces, then the end);
            // libmicrohttpd wants the answer only at the end. Control bodies are ignored.
            if method == "POST" {
                if state?.pointee == nil { state?.pointee = UnsafeMutableRawPointer(bitPattern: 1); return .YES }
                if let uploadSize, uploadSize.pointee != 0 { uploadSize.pointee = 0; return .YES }
            }
            return server.handle(connection!, url: String(cString: url!), method: method)
        }
        daemon = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                onair_mhd_start(address, 4, handler, Unmanaged.passUnretained(self).toOpaque())
            }
        }
        guard let daemon else { throw ServerError(description: "cannot listen on \(address): \(String(cString: strerror(errno)))") }
        port = onair_mhd_port(daemon)
    }

    deinit { stop() }

    public func stop() {
        if let daemon { MHD_stop_daemon(daemon) }
        daemon = nil
    }

    static func parse(_ address: String, into storage: inout sockaddr_storage) throws {
        let bad = ServerError(description: "--listen \(address): expected ADDR:PORT, e.g. 127.0.0.1:8080")
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else { throw bad }
        var host = String(address[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "0.0.0.0" }
        try withUnsafeMutablePointer(to: &storage) { pointer in
            if host.contains(":") {
                try pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    a.pointee.sin6_family = sa_family_t(AF_INET6)
                    a.pointee.sin6_port = port.bigEndian
                    guard inet_pton(AF_INET6, host, &a.pointee.sin6_addr) == 1 else { throw bad }
                }
            } else {
                try pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                    a.pointee.sin_family = sa_family_t(AF_INET)
                    a.pointee.sin_port = port.bigEndian
                    guard inet_pton(AF_INET, host, &a.pointee.sin_addr) == 1 else { throw bad }
                }
            }
        }
    }

    // MARK: Requests

    struct Reply {
        var status: UInt32
        var body: Body
        var headers: [(String, String)] = []
        enum Body { case bytes([UInt8]), file(fd: Int32, offset: Int64, length: Int64) }
    }

    private func handle(_ connection: OpaquePointer, url: String, method: String) -> MHD_Result {
        let header = { (name: String) -> String? in
            MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
        }
        let reply: Reply
        if method == "POST" {
            reply = command(url, header: header)
        } else if method != "GET" && method != "HEAD" {
            reply = Reply(status: 405, body: .bytes(Array("method not allowed\n".utf8)), headers: [("Allow", "GET, HEAD")])
        } else {
            reply = route(url, header: header)
        }
        return send(reply, on: connection)
    }

    /// A control call: refused without a configured token (403) or with the wrong one (401).
    func command(_ url: String, header: (String) -> String?) -> Reply {
        let text = { (status: UInt32, message: String) in
            Reply(status: status, body: .bytes(Array((message + "\n").utf8)), headers: [("Content-Type", "text/plain")])
        }
        guard let action = control[url] else {
            return api[url] != nil || url.hasPrefix("/streams/") ? Reply(status: 405, body: .bytes([]), headers: [("Allow", "GET, HEAD")])
                : text(404, "not found")
        }
        guard let token, !token.isEmpty else { return text(403, "control is off: set server.token to enable it") }
        let given = header("Authorization") ?? ""
        guard Self.constantTimeEqual(Array(given.utf8), Array("Bearer \(token)".utf8)) else {
            var reply = text(401, "a bearer token is required")
            reply.headers.append(("WWW-Authenticate", "Bearer"))
            return reply
        }
        return Reply(status: 200, body: .bytes(action()), headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")])
    }

    /// Compares without stopping at the first difference, so timing says nothing of the token.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) { difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0) }
        return difference == 0
    }

    func route(_ url: String, header: (String) -> String?) -> Reply {
        if url == "/" || url == "/index.html" {
            return Reply(status: 200, body: .bytes(Array(Viewer.page(streams: "/api/streams").utf8)),
                         headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-cache")])
        }
        if url == "/api/streams" {
            return Reply(status: 200, body: .bytes(catalog.json()),
                         headers: [("Content-Type", "application/json"), ("Cache-Control", "no-cache")])
        }
        if let endpoint = api[url] {
            return Reply(status: 200, body: .bytes(endpoint.body()), headers: [("Content-Type", endpoint.contentType), ("Cache-Control", "no-cache")])
        }
        // Finished recordings only: a `.part` is still being written.
        if url.hasPrefix("/streams/") || url.hasPrefix("/recordings/") && url.hasSuffix(".mp4") { return serveFile(url, header: header) }
        return Reply(status: 404, body: .bytes(Array("not found\n".utf8)), headers: [("Content-Type", "text/plain")])
    }

    /// The file for a URL path, only if it lies inside the data directory: no `..` or `.`
    /// components, no NUL or backslash, and no symbolic link that leads outside.
    func resolve(_ url: String) -> String? {
        let components = url.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard !components.isEmpty, components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.hasPrefix(".")
            && !$0.contains("\0") && !$0.contains("\\") }) else { return nil }
        let path = root + "/" + components.joined(separator: "/")
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        let resolved = String(cString: real)
        return ["/streams/", "/recordings/"].contains { resolved.hasPrefix(canonicalRoot + $0) } ? resolved : nil
    }

    private func serveFile(_ url: String, header: (String) -> String?) -> Reply {
        let notFound = Reply(status: 404, body: .bytes(Array("not found\n".utf8)), headers: [("Content-Type", "text/plain")])
        guard let path = resolve(url) else { return notFound }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return notFound }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { close(fd); return notFound }
        let size = Int64(info.st_size)
        let modified = Int64(info.st_mtim.tv_sec)
        let etag = "\"\(String(UInt64(size), radix: 16))-\(String(UInt64(modified) &* 1_000_000_000 &+ UInt64(info.st_mtim.tv_nsec), radix: 16))\""
        let (type, cache) = MediaType.of(path)
        var headers = [("Content-Type", type), ("Cache-Control", cache), ("ETag", etag),
                       ("Last-Modified", UTCDate.httpDate(seconds: modified)), ("Accept-Ranges", "bytes")]
        if let match = header("If-None-Match"), match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag || $0 == "*" }) {
            close(fd)
            return Reply(status: 304, body: .bytes([]), headers: headers.filter { $0.0 != "Content-Type" })
        }
        switch ByteRange.parse(header("Range"), size: size) {
        case .none:
            return Reply(status: 200, body: .file(fd: fd, offset: 0, length: size), headers: headers)
        case .unsatisfiable:
            close(fd)
            headers.append(("Content-Range", "bytes */\(size)"))
            return Reply(status: 416, body: .bytes([]), headers: headers)
        case .range(let first, let last):
            headers.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
            return Reply(status: 206, body: .file(fd: fd, offset: first, length: last - first + 1), headers: headers)
        }
    }

    private func send(_ reply: Reply, on connection: OpaquePointer) -> MHD_Result {
        let response: OpaquePointer?
        switch reply.body {
        case .bytes(let bytes):
            response = bytes.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .file(let fd, let offset, let length):
            // MHD owns the descriptor from here and sends it with sendfile where it can.
            response = MHD_create_response_from_fd_at_offset64(UInt64(length), fd, UInt64(offset))
        }
        guard let response else { return .NO }
        for (name, value) in reply.headers { MHD_add_response_header(response, name, value) }
        let result = MHD_queue_response(connection, reply.status, response)
        MHD_destroy_response(response)
        return result
    }
}

/// A single HTTP byte range (RFC 9110 §14.1.2); several ranges are answered in full.
enum ByteRange: Equatable {
    case none
    case unsatisfiable
    case range(Int64, Int64)

    static func parse(_ header: String?, size: Int64) -> ByteRange {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return .none }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .none }
        if parts[0].isEmpty {
            guard let suffix = Int64(parts[1]) else { return .none }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .range(max(0, size - suffix), size - 1)
        }
        guard let first = Int64(parts[0]) else { return .none }
        let last = parts[1].isEmpty ? size - 1 : (Int64(parts[1]) ?? -1)
        if parts[1].isEmpty == false && last < first { return .none }
        guard first < size else { return .unsatisfiable }
        return .range(first, min(last, size - 1))
    }
}
