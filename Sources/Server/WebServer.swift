import Access
import Basics
import CMicroHTTPD
import Files
import HLS
import Layout
import Logging
import System
import Threading

/// Why the built-in web server cannot start.
public enum ServerError: Error, CustomStringConvertible {
    case dataDirectoryMissing(String)
    case cannotListen(address: String, reason: String)

    public var description: String {
        switch self {
        case .dataDirectoryMissing(let path): return "data directory \(path) does not exist"
        case .cannotListen(let address, let reason): return "cannot listen on \(address): \(reason)"
        }
    }
}

/// The built-in web server: the viewer page, /api/*, the stream files and the finished
/// recordings (Range requests for downloads), with the
/// headers HLS players and caches expect. libmicrohttpd runs its own threads; the handler
/// only reads files, so it shares nothing mutable with the media plane.
public final class WebServer: @unchecked Sendable {  // libmicrohttpd's `daemon`: set in init, cleared by stop() once its threads end
    public let root: String
    let canonicalRoot: String
    private let catalog: StreamCatalog
    private var daemon: OpaquePointer?
    public private(set) var port: UInt16 = 0

    /// A document composed by whoever runs the server, fresh at each request; one that
    /// may not exist yet (a snapshot before the first frame) answers 503 until it does.
    public struct Endpoint: Sendable {
        public var contentType: String
        public var body: @Sendable () -> [UInt8]?
        public init(contentType: String, body: @escaping @Sendable () -> [UInt8]) {
            self.contentType = contentType
            self.body = { body() }
        }
        public init(contentType: String, whenReady body: @escaping @Sendable () -> [UInt8]?) {
            self.contentType = contentType
            self.body = body
        }
        public static func json(_ body: @escaping @Sendable () -> [UInt8]) -> Endpoint {
            Endpoint(contentType: "application/json", body: body)
        }
    }

    /// `device.name`, which titles the viewer page.
    private let device: String?
    /// A POST action (`/api/record/start`): its JSON answer from the request's query
    /// arguments, or a `ControlRefusal`.
    public typealias Control = @Sendable (_ argument: (String) -> String?) throws -> [UInt8]
    /// A control call refused for what it asked (a 4xx), with why in one line.
    public struct ControlRefusal: Error {
        public var status: UInt32
        public var message: String
        public init(_ status: UInt32, _ message: String) {
            self.status = status
            self.message = message
        }
    }
    /// GET documents by path (`/api/status`, `/api/recordings`, `/metrics`).
    let api: [String: Endpoint]
    /// POST actions by path (`/api/record/start`), each answering with a JSON body; only
    /// with `Authorization: Bearer <token>`, and not at all without a token.
    let control: [String: Control]
    /// GET files made on request from the URL's arguments (`/api/export`), with ranges.
    let downloads: [String: Download]
    /// How many of them at once, and the thread that makes them.
    let downloadGate: DownloadGate
    let token: String?
    /// The operator's login (`operatorRefusal`); nil without a token.
    let operatorGate: AccessGate?
    /// Who may watch; nil: anyone who reaches the server (`ViewerAccess`).
    let access: AccessGate?
    /// The live streams' parts, for low-latency playlists; nil: regular HLS only.
    let liveEdge: LiveEdge?
    /// Requests with a body for another module (WHEP).
    let bodyRoutes: [BodyRoute]
    /// The setup network's port 80: every request is sent on to this URL (302), so a
    /// phone's captive-portal check (Android's generate_204, Apple's hotspot-detect.html,
    /// Windows' connecttest.txt) opens the setup page; nil for a server of the stream.
    let captive: String?
    /// Where the viewer page offers live streams over WebRTC (`/whep`); nil: it does not.
    let whep: String?
    /// The newest picture the viewer shows before a live stream plays; nil: none.
    let poster: String?
    /// Ends the requests held for a part that has not come in time.
    let heldTimer = Scheduler(name: "onair-http-held")
    /// Requests suspended now, and whether `stop` has begun (no more are held then);
    /// signalled when one is resumed, for `stop` to wait on.
    private let held = Condition((count: 0, stopping: false))

    private let log: Log
    private let guard_: ConnectionGuard
    private let logger = UnsafeMutablePointer<onair_mhd_logger>.allocate(capacity: 1)

    /// What the server is bound to (the port asked for: `port` is the one it got).
    public let listenAddress: ListenAddress

    /// Listens on `address` ("127.0.0.1:8080", "[::1]:8080", "0.0.0.0:0" for any port).
    public init(listen address: String, root: String, api: [String: Endpoint] = [:],
                control: [String: Control] = [:], downloads: [String: Download] = [:], token: String? = nil,
                liveEdge: LiveEdge? = nil, bodyRoutes: [BodyRoute] = [], whep: String? = nil, poster: String? = nil,
                device: String? = nil, access: AccessGate? = nil, captive: String? = nil, limits: Limits = .forThisProcess,
                log: Log = .silent()) throws {
        self.captive = captive
        self.bodyRoutes = bodyRoutes
        self.whep = whep
        self.poster = poster
        self.root = root
        self.device = device
        self.log = log
        self.api = api
        self.downloads = downloads
        downloadGate = DownloadGate(slots: limits.downloads)
        self.control = control
        self.token = token
        operatorGate = Self.operatorGate(token: token, log: log)
        self.access = access
        self.liveEdge = liveEdge
        catalog = StreamCatalog(root: root)
        try? AtomicFile.makeDirectories(StreamLayout(root: root).streams)
        guard let real = try? Path.resolved(root) else { throw ServerError.dataDirectoryMissing(root) }
        canonicalRoot = real
        let listen = try ListenAddress(address)
        listenAddress = listen
        guard_ = ConnectionGuard(requestSeconds: limits.requestSeconds, limit: limits.connections)
        heldBudget = limits.heldRequests
        logger.pointee = onair_mhd_logger(log: { context, message in
            let server = Unmanaged<WebServer>.fromOpaque(context!).takeUnretainedValue()
            server.libraryMessage(String(cString: message!))
        }, context: Unmanaged.passUnretained(self).toOpaque())
        daemon = listen.socketAddress.withRawPointer { address in
            onair_mhd_start(address, 4, Self.accessHandler, Unmanaged.passUnretained(self).toOpaque(),
                            onair_mhd_limits(connections: UInt32(limits.connections + ConnectionGuard.reserve(for: limits.connections)),
                                             per_ip: UInt32(limits.perAddress),
                                             idle_seconds: UInt32(limits.idleSeconds)),
                            Self.connectionNotice, Self.completionNotice, Self.uriNotice, logger)
        }
        guard let daemon else {
            logger.deallocate()
            throw ServerError.cannotListen(address: "\(listen)", reason: Errno.current.description)
        }
        port = onair_mhd_port(daemon)
        guard_.start()
        heldTimer.start()
    }

    /// What a request is, carried in libmicrohttpd's per-request pointer (set by the URI
    /// callback): fresh, or with a NUL in its raw path.
    private static var freshRequest: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 1)! }
    private static var nulInPath: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 2)! }

    private static func server(_ cls: UnsafeMutableRawPointer?) -> WebServer {
        Unmanaged<WebServer>.fromOpaque(cls!).takeUnretainedValue()
    }

    /// The raw request target, before libmicrohttpd decodes it: `%00` would cut the
    /// decoded C string short (`playlist.m3u8%00.txt` read as `playlist.m3u8`).
    private static let uriNotice: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = { _, uri, _ in
        guard let uri else { return freshRequest }
        let raw = String(cString: uri).lowercased()
        return raw.contains("%00") ? nulInPath : freshRequest
    }

    private static let connectionNotice: MHD_NotifyConnectionCallback = { cls, connection, _, code in
        let server = server(cls)
        guard let connection else { return }
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        if code.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED
            server.guard_.opened(key, socket: FileDescriptor(borrowing: onair_mhd_connection_fd(connection)))
        } else {
            server.guard_.closed(key)
        }
    }

    private static let completionNotice: MHD_RequestCompletedCallback = { cls, connection, state, _ in
        guard let connection else { return }
        // A held request whose connection ended before it was answered, or a body that
        // was still coming.
        if let state, let pointer = state.pointee, let kept = request(pointer) {
            state.pointee = nil
            if let held = kept.takeRetainedValue() as? Held { server(cls).release(held) }
        }
        server(cls).guard_.responded(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))))
    }

    /// What the per-request pointer holds when it is not one of the markers: a `Held`
    /// request or an `Upload` (retained).
    private static func request(_ pointer: UnsafeMutableRawPointer) -> Unmanaged<AnyObject>? {
        [freshRequest, nulInPath, headAccepted].contains(pointer) ? nil : Unmanaged<AnyObject>.fromOpaque(pointer)
    }

    /// A held request is resumed (or its connection ended).
    private func release(_ held: Held) {
        self.held.withLock { $0.count -= 1 }
        self.held.broadcast()
    }

    /// Counts a request about to be suspended; false once `stop` has begun, or when
    /// `heldBudget` requests are held already.
    func holding(_ connection: OpaquePointer) -> Bool {
        let admitted = held.withLock { [heldBudget] held -> Bool in
            guard !held.stopping, held.count < heldBudget else { return false }
            held.count += 1
            return true
        }
        held.broadcast()
        if admitted { guard_.held(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))) }
        return admitted
    }

    /// How many requests may be held at once (`Limits.heldRequests`).
    private let heldBudget: Int

    public var heldRequests: Int { held.withLock { $0.count } }

    /// Waits until `count` requests are held (at most `seconds`); false if they never
    /// were. What a test waits for instead of sleeping.
    public func waitForHeldRequests(_ count: Int, seconds: Double = 10) -> Bool {
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        return held.withLock(until: deadline, waitingFor: { $0.count >= count ? true : nil }) ?? false
    }

    /// The second call of a request: its head was accepted at the first.
    private static var headAccepted: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 3)! }

    /// libmicrohttpd calls once when the head is in, then again (with any body, then
    /// empty). A response queued at the first call closes the connection, so answers are
    /// given at the second and players keep their connection; what is refused is refused
    /// at the first, before a body is read or `100 Continue` invites one (RFC 9110 §10.1.1).
    private static let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, version, uploadData, uploadSize, state in
        let server = server(cls)
        guard let connection, let state else { return .NO }
        let method = String(cString: method!)
        if let pointer = state.pointee, let kept = request(pointer) {
            if let upload = kept.takeUnretainedValue() as? Upload {
                // A body route's request: its body piece by piece, then its answer.
                if let uploadSize, uploadSize.pointee != 0 {
                    server.receive(upload, data: uploadData, size: uploadSize.pointee)
                    uploadSize.pointee = 0
                    return .YES
                }
                state.pointee = nil
                kept.release()
                return server.send(server.finish(upload, url: String(cString: url!), method: method, connection: connection), on: connection)
            }
            // A held request, resumed: answer it now, or hold it again.
            state.pointee = nil
            let held = kept.takeRetainedValue() as! Held
            server.release(held)
            return server.handle(connection, url: String(cString: url!), method: method, held: held, state: state)
        }
        if state.pointee != headAccepted {
            server.guard_.requestArrived(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))))
            if state.pointee == nulInPath {
                state.pointee = nil
                return server.send(Reply(status: 400, body: .bytes(Array("a NUL in the path\n".utf8)),
                                         headers: [("Content-Type", "text/plain")]), on: connection)
            }
            // RFC 9112 §3.2: an HTTP/1.1 request without Host is answered 400.
            if let version, String(cString: version) == "HTTP/1.1", server.headerReader(connection)("Host") == nil {
                state.pointee = nil
                return server.send(Reply(status: 400, body: .bytes(Array("an HTTP/1.1 request needs a Host header\n".utf8)),
                                         headers: [("Content-Type", "text/plain")]), on: connection)
            }
            // A request with a body is let in or not before the body is read; GET and HEAD
            // at the second call, so the connection is kept (a 401 at the first closes it).
            if method != "GET" && method != "HEAD", let refusal = server.viewerRefusal(String(cString: url!), method: method, connection: connection) {
                state.pointee = nil
                return server.send(refusal, on: connection)
            }
            switch server.bodyRoute(String(cString: url!), method: method, header: server.headerReader(connection), connection: connection) {
            case .take(let upload)?:
                state.pointee = Unmanaged<AnyObject>.passRetained(upload).toOpaque()
                return .YES
            case .refuse(let reply)?:
                state.pointee = nil
                return server.send(reply, on: connection)
            case nil:
                break
            }
            if method == "POST", let refusal = server.refusal(String(cString: url!), method: method, connection: connection) {
                state.pointee = nil
                return server.send(refusal, on: connection)
            }
            state.pointee = headAccepted
            return .YES
        }
        if let uploadSize, uploadSize.pointee != 0 { uploadSize.pointee = 0; return .YES }
        state.pointee = nil
        return server.handle(connection, url: String(cString: url!), method: method, state: state)
    }

    deinit { stop() }

    public func stop() {
        if let daemon {
            // libmicrohttpd must not be stopped with a connection suspended: answer the
            // held requests first (they see `stopping` and get a 503), at most until the
            // last deadline.
            held.withLock { $0.stopping = true }
            liveEdge?.wakeAll()
            let limit = monotonicNanoseconds() + 10_000_000_000
            _ = held.withLock(until: limit, waitingFor: { $0.count == 0 ? true : nil })
            MHD_stop_daemon(daemon)
            downloadGate.stop()
            heldTimer.stop()
            guard_.stop()
            logger.deallocate()
        }
        daemon = nil
    }

    /// libmicrohttpd's own messages ("Error processing request …"), as `server.message`
    /// events through the caller's log, at most `messagesPerMinute` a minute (a flood of
    /// bad requests must not flood the log); the rest are counted.
    private func libraryMessage(_ text: String) {
        let now = ConnectionGuard.now() / 1_000_000_000
        let line = text.hasSuffix("\n") ? String(text.dropLast()) : text
        let (emit, suppressed) = messages.withLock { messages -> (Bool, Int) in
            if now / 60 != messages.minute { messages = (now / 60, 0, messages.suppressed) }
            messages.count += 1
            guard messages.count <= Self.messagesPerMinute else { messages.suppressed += 1; return (false, 0) }
            defer { messages.suppressed = 0 }
            return (true, messages.suppressed)
        }
        if emit { log.emit(.serverMessage, level: .warn, [("message", line), ("suppressed_before", suppressed)]) }
    }

    static let messagesPerMinute = 20
    private let messages = Locked((minute: UInt64(0), count: 0, suppressed: 0))

    /// How many connections the deadline has ended (for tests and /metrics).
    public var expiredConnections: Int { guard_.expired }
    public var openConnections: Int { guard_.open }
    /// Connections that gave way to newcomers at the connection limit.
    public var displacedConnections: Int { guard_.displaced }

    // MARK: Requests

    private func handle(_ connection: OpaquePointer, url: String, method: String, held: Held? = nil,
                        state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        let header = headerReader(connection)
        let reply: Reply
        if let captive {
            return send(Reply(status: 302, body: .bytes(Array("the setup page: \(captive)\n".utf8)),
                              headers: [("Location", captive), ("Content-Type", "text/plain"), ("Cache-Control", "no-store")]), on: connection)
        }
        if held == nil, method == "GET" || method == "HEAD", let refusal = viewerRefusal(url, method: method, connection: connection) {
            return send(refusal, on: connection)
        }
        if method == "GET" || method == "HEAD" {
            switch lowLatency(connection, url: url, held: held, state: state) {
            case .held: return .YES
            case .reply(let answer): return send(answer, on: connection)
            case .notMine: break
            }
        }
        if method == "POST" {
            reply = command(url, argument: argumentReader(connection))
        } else if method != "GET" && method != "HEAD" {
            reply = Reply(status: 405, body: .bytes(Array("method not allowed\n".utf8)), headers: [("Allow", "GET, HEAD")])
        } else {
            reply = downloads[url].map { download(url, $0, header: header, arguments: arguments(connection)) }
                ?? route(url, header: header)
        }
        return send(reply, on: connection)
    }

    func route(_ url: String, header: (String) -> String?) -> Reply {
        if url == "/" || url == "/index.html" {
            return Reply(status: 200, body: .bytes(Array(Viewer.page(streams: "/api/streams", device: device, whep: whep, poster: poster).utf8)),
                         headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-cache")])
        }
        if url == "/api/streams" {
            return Reply(status: 200, body: .bytes(catalog.json()),
                         headers: [("Content-Type", "application/json"), ("Cache-Control", "no-cache")])
        }
        if let endpoint = api[url] {
            guard let body = endpoint.body() else {
                return Reply(status: 503, body: .bytes(Array("not ready yet\n".utf8)), headers: [("Content-Type", "text/plain"), ("Retry-After", "1")])
            }
            return Reply(status: 200, body: .bytes(body), headers: [("Content-Type", endpoint.contentType), ("Cache-Control", "no-cache")])
        }
        // Finished recordings only: a `.part` is still being written.
        if url.hasPrefix(StreamLayout.streamsURL) || url.hasPrefix(StreamLayout.recordingsURL) && url.hasSuffix(StreamLayout.recordingSuffix) {
            return serveFile(url, header: header)
        }
        return Reply(status: 404, body: .bytes(Array("not found\n".utf8)), headers: [("Content-Type", "text/plain")])
    }
}

extension WebServer {
    /// libmicrohttpd, for `onair version`.
    public static var libraryVersion: LibraryVersion {
        LibraryVersion("libmicrohttpd", MHD_get_version().map { String(cString: $0) } ?? "",
                       debianSource: debianSource("libmicrohttpd", onair_debian_libmicrohttpd()))
    }
}
