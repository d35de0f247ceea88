import CMicroHTTPD

/// Requests that carry a body to someone else's handler: WHEP's offers (`POST /whep`),
/// and the session resource's `DELETE`, `OPTIONS` and `PATCH`. The body is read into
/// memory up to the route's bound (an SDP offer is a few KB); a longer one is refused
/// with 413 before it is read, from its Content-Length, or once it passes the bound.
extension WebServer {
    public struct BodyRequest: Sendable {
        public var method: String
        /// The path below the route's prefix: "" for the prefix itself, "/abc" below it.
        public var path: String
        public var contentType: String?
        public var body: [UInt8]
        /// The client's address, as text.
        public var client: String
        /// The Host header: the address the client reached the board at (URIs given back
        /// to it, ONVIF's, must use it).
        public var host: String?
        /// The port the web server listens on.
        public var port: UInt16
    }

    public struct BodyReply: Sendable {
        public var status: UInt32
        public var headers: [(String, String)]
        public var body: [UInt8]
        public init(status: UInt32, headers: [(String, String)] = [], body: [UInt8] = []) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    public struct BodyRoute: Sendable {
        /// `/whep`: the route takes it and every path below it.
        public var prefix: String
        public var maximumBody: Int
        public var methods: [String]
        public var handle: @Sendable (BodyRequest) -> BodyReply
        public init(prefix: String, maximumBody: Int, methods: [String], handle: @escaping @Sendable (BodyRequest) -> BodyReply) {
            self.prefix = prefix
            self.maximumBody = maximumBody
            self.methods = methods
            self.handle = handle
        }

        func takes(_ url: String) -> Bool { url == prefix || url.hasPrefix(prefix + "/") }
    }

    /// A body being read, in libmicrohttpd's per-request pointer between calls.
    final class Upload {
        let route: BodyRoute
        var body: [UInt8] = []
        var tooLarge = false
        init(route: BodyRoute) { self.route = route }
    }

    /// What a body route makes of a request's head.
    enum BodyHead {
        case take(Upload)
        /// Refused at once: a method the route does not take, a body announced too large.
        case refuse(Reply)
    }

    /// At the head: the route's upload, or the refusal it gets at once; nil when no route
    /// takes `url`.
    func bodyRoute(_ url: String, method: String, header: (String) -> String?) -> BodyHead? {
        guard let route = bodyRoutes.first(where: { $0.takes(url) }) else { return nil }
        guard route.methods.contains(method) else {
            return .refuse(Reply(status: 405, body: .bytes(Array("method not allowed\n".utf8)),
                                 headers: [("Allow", route.methods.joined(separator: ", "))]))
        }
        if let length = header("Content-Length"), Int(length).map({ $0 > route.maximumBody }) ?? true {
            return .refuse(Reply(status: 413, body: .bytes(Array("a body of at most \(route.maximumBody) bytes\n".utf8)),
                                 headers: [("Content-Type", "text/plain")]))
        }
        return .take(Upload(route: route))
    }

    /// A piece of the body: kept while it fits the route's bound.
    func receive(_ upload: Upload, data: UnsafePointer<CChar>?, size: Int) {
        guard let data, size > 0, !upload.tooLarge else { return }
        guard upload.body.count + size <= upload.route.maximumBody else {
            upload.tooLarge = true
            upload.body = []
            return
        }
        data.withMemoryRebound(to: UInt8.self, capacity: size) { upload.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size)) }
    }

    /// The whole body is in: the route's answer.
    func finish(_ upload: Upload, url: String, method: String, connection: OpaquePointer) -> Reply {
        if upload.tooLarge {
            return Reply(status: 413, body: .bytes(Array("a body of at most \(upload.route.maximumBody) bytes\n".utf8)),
                         headers: [("Content-Type", "text/plain")])
        }
        let client = clientAddress(connection)
        let header = headerReader(connection)
        let request = BodyRequest(method: method, path: String(url.dropFirst(upload.route.prefix.count)),
                                  contentType: header("Content-Type"), body: upload.body, client: client, host: header("Host"), port: port)
        let answer = upload.route.handle(request)
        return Reply(status: answer.status, body: .bytes(answer.body), headers: answer.headers)
    }
}
