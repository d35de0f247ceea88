import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Threading

/// A tiny HTTP/1.1 server on 127.0.0.1 for tests: records every request (method, path,
/// headers, body) and answers as `respond` chooses — a status, a TCP reset, or a stall.
/// Keep-alive is honoured so a client's connection reuse is exercised. With a reply that
/// forwards (see FaultProxy) it is a fault-injecting proxy.
public final class RecordingServer: @unchecked Sendable {
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [String: String]   // lower-cased names
        public var body: [UInt8]
    }

    /// How to answer one request.
    public enum Reply: Sendable {
        case status(Int)
        /// A whole answer: status, headers, body.
        case answer(Int, headers: [String: String], body: [UInt8])
        /// Drop the connection with a TCP reset, answering nothing.
        case reset
        /// Say nothing for this long, then drop the connection.
        case stall(seconds: Double)
        /// A head that promises `declared` bytes, `body` (fewer), then nothing for
        /// `seconds` before the connection drops: a server that lies about its length
        /// (0 s) or stalls mid-body.
        case partial(declared: Int, body: [UInt8], thenWait: Double)
    }

    public private(set) var port: UInt16 = 0
    private let listener: Int32
    /// What the server's threads share: a stop wakes every stall and throttled transfer.
    private struct State {
        var recorded: [Request] = []
        var connections = 0
        var readRate: Int?
        var replyRate: Int?
        var clients: Set<Int32> = []
        var threads: [Int: WorkerThread] = [:]
        /// Connections whose thread has returned (or is returning): joined by the next accept.
        var finished: [Int] = []
        var stopped = false
    }
    private let state = Condition(State())
    public let respond: @Sendable (Request) -> Reply
    public var connections: Int { state.withLock { $0.connections } }
    /// Reads request bodies no faster than this many bytes per second (a slow uplink).
    public var throttle: Int? {
        get { state.withLock { $0.readRate } }
        set { state.withLock { $0.readRate = newValue } }
    }
    /// Sends answers' bodies no faster than this many bytes per second, from any thread
    /// (a weak downlink, for a player choosing among rungs).
    public var replyThrottle: Int? {
        get { state.withLock { $0.replyRate } }
        set { state.withLock { $0.replyRate = newValue } }
    }

    public convenience init(status: @escaping @Sendable (Request) -> Int = { _ in 201 }) throws {
        try self.init(reply: { .status(status($0)) })
    }

    public init(reply: @escaping @Sendable (Request) -> Reply) throws {
        self.respond = reply
        (listener, port) = try Self.listen()
        let acceptor = WorkerThread(name: "test-origin") { [self] in acceptLoop() }
        state.withLock { $0.threads[-1] = acceptor }
    }

    public var requests: [Request] { state.withLock { $0.recorded } }

    /// A TCP socket listening on a free loopback port, and the port; `receiveBuffer`: its
    /// SO_RCVBUF, which the connections it accepts inherit.
    static func listen(receiveBuffer: Int32? = nil) throws -> (Int32, UInt16) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if var size = receiveBuffer { setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(listener, pointer, length) == 0, Glibc.listen(listener, 16) == 0 else { return -1 }
                return getsockname(listener, pointer, &length)
            }
        }
        guard bound == 0 else { close(listener); throw HTTPClient.Failure(description: "cannot listen: errno \(errno)") }
        return (listener, UInt16(bigEndian: address.sin_port))
    }

    /// Stops listening, ends every connection (a stall or a throttled transfer at once)
    /// and joins the server's threads.
    public func stop() {
        let threads = state.withLock { state -> [WorkerThread] in
            guard !state.stopped else { return [] }
            state.stopped = true
            for client in state.clients { shutdown(client, Int32(SHUT_RDWR)) }
            return Array(state.threads.values)
        }
        guard !threads.isEmpty else { return }
        state.broadcast()
        shutdown(listener, Int32(SHUT_RDWR))
        for thread in threads { thread.join() }
        close(listener)
    }

    /// Waits `seconds`, or until the server stops: a slow link, a stalled answer.
    private func pause(_ seconds: Double) {
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        _ = state.withLock(until: deadline) { $0.stopped ? true : nil }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            let (admitted, done) = state.withLock { state -> (Bool, [WorkerThread]) in
                let done = state.finished.compactMap { state.threads.removeValue(forKey: $0) }
                state.finished = []
                guard !state.stopped else { return (false, done) }
                state.connections += 1
                state.clients.insert(client)
                let id = state.connections
                state.threads[id] = WorkerThread(name: "test-origin-conn") { [self] in serve(client, id: id) }
                return (true, done)
            }
            for thread in done { thread.join() }
            if !admitted { close(client); return }
        }
    }

    private func serve(_ fd: Int32, id: Int) {
        defer {
            state.withLock { state in
                state.clients.remove(fd)
                state.finished.append(id)
            }
            close(fd)
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        func fill() -> Bool {
            let throttle = self.throttle
            let n = recv(fd, &chunk, throttle.map { min(chunk.count, max(1, $0 / 20)) } ?? chunk.count, 0)
            if n <= 0 { return false }
            buffer += chunk[0..<n]
            if let throttle { pause(Double(n) / Double(throttle)) }
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
            state.withLock { $0.recorded.append(request) }
            switch respond(request) {
            case .status(let status):
                let reply = Array("HTTP/1.1 \(status) Status\r\nContent-Length: 0\r\n\r\n".utf8)
                guard send(fd, reply, reply.count, Int32(MSG_NOSIGNAL)) == reply.count else { return }
            case .answer(let status, let headers, let body):
                let head = headers.map { "\($0.key): \($0.value)\r\n" }.joined()
                let reply = Array("HTTP/1.1 \(status) Status\r\n\(head)Content-Length: \(body.count)\r\n\r\n".utf8) + body
                // A twentieth of a second's worth at a time, at the rate asked for.
                var sent = 0
                while sent < reply.count {
                    let rate = replyThrottle
                    let size = min(reply.count - sent, rate.map { max(1, $0 / 20) } ?? reply.count)
                    let n = reply[sent..<(sent + size)].withUnsafeBytes { send(fd, $0.baseAddress, size, Int32(MSG_NOSIGNAL)) }
                    guard n > 0 else { return }
                    sent += n
                    if let rate { pause(Double(n) / Double(rate)) }
                }
            case .reset:
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)  // close() then sends RST
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                return
            case .stall(let seconds):
                pause(seconds)
                return
            case .partial(let declared, let body, let seconds):
                let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: \(declared)\r\n\r\n".utf8) + body
                guard send(fd, reply, reply.count, Int32(MSG_NOSIGNAL)) == reply.count else { return }
                pause(seconds)
                return
            }
            // HTTP/1.0, or a client that says so, reads the answer to the connection's end
            // (nginx-rtmp's on_publish).
            if parts.last == "HTTP/1.0" || headers["connection"]?.lowercased() == "close" { return }
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
        let probe = try RecordingServer(status: { _ in 200 })
        defer { probe.stop() }
        return probe.port
    }

    /// Serving HTTPS with a self-signed certificate made for the test.
    public let tls: Bool

    public init(port requested: UInt16? = nil, tls: Bool = false) throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("onair-nginx-\(UUID().uuidString)").path
        root = work + "/root"
        self.tls = tls
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        if tls {
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            openssl.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                                 "-keyout", work + "/key.pem", "-out", work + "/cert.pem"]
            openssl.standardOutput = FileHandle.nullDevice
            openssl.standardError = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
        }
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
                types { application/vnd.apple.mpegurl m3u8; video/mp4 mp4 m4s; application/json json; text/html html; }
                server {
                    listen 127.0.0.1:\(port)\(tls ? " ssl" : "");
                    \(tls ? "ssl_certificate \(work)/cert.pem; ssl_certificate_key \(work)/key.pem;" : "")
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
        try Self.launch(process, config: config, work: work) { [port] in tls ? Self.accepts(port) : (try? HTTPClient.request(port: port, "/")) != nil }
    }

    public func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: work)
    }

    /// Debian's nginx on `config` (written into `work`, its log there), returning once
    /// `ready` says so (within five seconds).
    static func launch(_ process: Process, config: String, work: String, ready: () -> Bool) throws {
        try config.write(toFile: work + "/nginx.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", work + "/nginx.conf", "-e", work + "/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<100 {
            if ready() { return }
            usleep(50_000)
        }
        throw HTTPClient.Failure(description: "nginx did not start: \((try? String(contentsOfFile: work + "/error.log", encoding: .utf8)) ?? "")")
    }

    static func accepts(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// A fault-injecting HTTP proxy between onair and an origin: each request is forwarded to
/// the origin, or failed, reset or stalled, as `fault` decides from its number (from 1)
/// and the time since the proxy started.
public final class FaultProxy: @unchecked Sendable {
    public enum Fault: Sendable { case pass, status(Int), reset, stall(seconds: Double) }
    public let server: RecordingServer
    public var port: UInt16 { server.port }
    private let counts = Locked((requests: 0, faults: 0))
    public var faults: Int { counts.withLock { $0.faults } }

    public init(upstream: UInt16, fault: @escaping @Sendable (_ number: Int, _ elapsed: Double) -> Fault) throws {
        let started = Date()
        let box = Box()
        server = try RecordingServer(reply: { request in
            let proxy = box.proxy!
            let number = proxy.counts.withLock { counts -> Int in counts.requests += 1; return counts.requests }
            let decision = fault(number, Date().timeIntervalSince(started))
            if case .pass = decision {
                // Every header but the connection's own (S3's signature covers x-amz-*, and
                // If-Match must reach the origin); the origin's body and ETag come back.
                let headers = request.headers.filter { !["connection", "content-length", "expect", "transfer-encoding"].contains($0.key) }
                guard let answer = try? HTTPClient.request(port: upstream, request.path, method: request.method, headers: headers, body: request.body) else {
                    return .status(502)
                }
                return .answer(answer.status, headers: answer.headers.filter { ["etag", "content-type", "content-range", "accept-ranges", "cache-control", "last-modified"].contains($0.key) },
                               body: answer.body)
            }
            proxy.counts.withLock { $0.faults += 1 }
            switch decision {
            case .status(let code): return .status(code)
            case .reset: return .reset
            case .stall(let seconds): return .stall(seconds: seconds)
            case .pass: return .status(500)
            }
        })
        box.proxy = self
    }

    public func stop() { server.stop() }

    private final class Box: @unchecked Sendable { weak var proxy: FaultProxy? }
}

/// Debian's Apache (prefork) with mod_dav as a WebDAV origin, in the foreground on a free port. Unlike
/// nginx's create_full_put_path it refuses a PUT into a missing collection (409), as
/// RFC 4918 says, so a client must MKCOL the parents first.
public final class ApacheOrigin {
    public let root: String
    public let port: UInt16
    private let process = Process()
    private let work: String

    public init() throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("onair-apache-\(UUID().uuidString)").path
        root = work + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        // Apache will not serve as root: the files are written by www-data.
        for path in [work, root] { chmod(path, 0o777) }
        port = try NginxOrigin.freePort()
        let modules = "/usr/lib/apache2/modules"
        let config = """
            ServerRoot \(work)
            ServerName 127.0.0.1
            Listen 127.0.0.1:\(port)
            LoadModule mpm_prefork_module \(modules)/mod_mpm_prefork.so
            LoadModule authz_core_module \(modules)/mod_authz_core.so
            LoadModule dav_module \(modules)/mod_dav.so
            LoadModule dav_fs_module \(modules)/mod_dav_fs.so
            User www-data
            Group www-data
            PidFile \(work)/apache.pid
            ErrorLog \(work)/error.log
            DavLockDB \(work)/davlock
            DocumentRoot \(root)
            <Directory \(root)>
                Dav On
                Require all granted
            </Directory>
            """
        try config.write(toFile: work + "/apache.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/apache2")
        process.arguments = ["-DFOREGROUND", "-f", work + "/apache.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<100 {
            if NginxOrigin.accepts(port) { return }
            usleep(50_000)
        }
        throw HTTPClient.Failure(description: "apache did not start: \((try? String(contentsOfFile: work + "/error.log", encoding: .utf8)) ?? "")")
    }

    public func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: work)
    }
}
