import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for tests: records every request (method, path,
/// headers, body) and answers with the status `respond` chooses. Keep-alive is honoured
/// so a client's connection reuse is exercised.
public final class RecordingServer: @unchecked Sendable {
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [String: String]   // lower-cased names
        public var body: [UInt8]
    }

    public private(set) var port: UInt16 = 0
    private let listener: Int32
    private let lock = NSLock()
    private var recorded: [Request] = []
    public var connections = 0
    public var respond: @Sendable (Request) -> Int

    public init(respond: @escaping @Sendable (Request) -> Int = { _ in 201 }) throws {
        self.respond = respond
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(listener, pointer, length) == 0, listen(listener, 16) == 0 else { return -1 }
                return getsockname(listener, pointer, &length)
            }
        }
        guard bound == 0 else { throw HTTPClient.Failure(description: "cannot listen: errno \(errno)") }
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in acceptLoop() }.start()
    }

    public var requests: [Request] { lock.withLock { recorded } }

    public func stop() { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            lock.withLock { connections += 1 }
            Thread { [self] in serve(client) }.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        func fill() -> Bool {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return false }
            buffer += chunk[0..<n]
            return true
        }
        while true {
            var headerEnd: Int?
            while headerEnd == nil {
                headerEnd = buffer.indices.dropLast(3).first { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }
                if headerEnd == nil && !fill() { return }
            }
            let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self).components(separatedBy: "\r\n")
            let parts = head[0].split(separator: " ")
            guard parts.count >= 2 else { return }
            var headers: [String: String] = [:]
            for line in head.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            buffer.removeFirst(headerEnd! + 4)
            while buffer.count < length { if !fill() { return } }
            let request = Request(method: String(parts[0]), path: String(parts[1]), headers: headers, body: Array(buffer.prefix(length)))
            buffer.removeFirst(length)
            lock.withLock { recorded.append(request) }
            let status = respond(request)
            let reply = Array("HTTP/1.1 \(status) Status\r\nContent-Length: 0\r\n\r\n".utf8)
            guard send(fd, reply, reply.count, Int32(MSG_NOSIGNAL)) == reply.count else { return }
        }
    }
}

/// Debian's nginx as a WebDAV origin on a free loopback port, rooted in a temporary
/// directory: the kind of HTTP origin onair publishes to in the field.
public final class NginxOrigin {
    public let root: String
    public let port: UInt16
    private let process = Process()
    private let work: String

    /// A free loopback port (bound, read back and released).
    public static func freePort() throws -> UInt16 {
        let probe = try RecordingServer()
        defer { probe.stop() }
        return probe.port
    }

    public init(port requested: UInt16? = nil) throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("onair-nginx-\(UUID().uuidString)").path
        root = work + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        port = try requested ?? Self.freePort()
        let config = """
            daemon off;
            master_process off;
            user root;
            pid \(work)/nginx.pid;
            error_log \(work)/error.log;
            events { worker_connections 64; }
            http {
                access_log \(work)/access.log;
                client_body_temp_path \(work)/body;
                types { application/vnd.apple.mpegurl m3u8; video/mp4 mp4 m4s; application/json json; }
                server {
                    listen 127.0.0.1:\(port);
                    root \(root);
                    client_max_body_size 0;
                    location / {
                        dav_methods PUT;
                        create_full_put_path on;
                        dav_access user:rw group:r all:r;
                    }
                }
            }
            """
        try config.write(toFile: work + "/nginx.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", work + "/nginx.conf", "-e", work + "/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready once it answers.
        for _ in 0..<100 {
            if (try? HTTPClient.request(port: port, "/")) != nil { return }
            usleep(50_000)
        }
        throw HTTPClient.Failure(description: "nginx did not start: \((try? String(contentsOfFile: work + "/error.log", encoding: .utf8)) ?? "")")
    }

    public func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: work)
    }
}
