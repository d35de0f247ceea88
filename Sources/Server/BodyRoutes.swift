import CMicroHTTPD

/// Requests that carry a body to someone else's handler: WHEP's offers (`POST /whep`),
/// and the session resource's `DELETE`, `OPTIONS` and `PATCH`; ONVIF's SOAP; an update
/// bundle (`POST /api/update`). A small body is read into memory up to the route's bound
/// (an SDP offer is a few KB); a large one is handed on piece by piece as it comes (a
/// `BodyStream`: a bundle is a hundred MB, never held). A body longer than the bound is
/// refused with 413 before it is read, from its Content-Length, or once it passes it.
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
        /// The URL's arguments (`?reboot=1`).
        public var arguments: [String: String] = [:]
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

    /// A body taken piece by piece as it comes. `write` takes each piece (false: the
    /// rest is read and thrown away, and `finish` says why); `finish` answers once the
    /// whole body is in. Dropped without `finish` (the client went away, the body grew
    /// past the bound), it must leave nothing behind.
    public final class BodyStream: @unchecked Sendable {
        let write: (UnsafeRawBufferPointer) -> Bool
        let finish: () -> BodyReply
        public init(write: @escaping (UnsafeRawBufferPointer) -> Bool, finish: @escaping () -> BodyReply) {
            self.write = write
            self.finish = finish
        }
    }

    public enum StreamStart {
        case take(BodyStream)
        case refuse(BodyReply)
    }

    public struct BodyRoute: Sendable {
        /// `/whep`: the route takes it and every path below it.
        public var prefix: String
        public var maximumBody: Int
        public var methods: [String]
        /// Only with the operator's bearer token (`server.token`), checked at the head.
        public var operatorOnly = false
        public var taking: Taking

        /// How the route takes a body: whole, into memory, then answered; or handed on as
        /// it comes, to a taker the head's answer gives (the request's head: an empty body).
        public enum Taking: Sendable {
            case whole(@Sendable (BodyRequest) -> BodyReply)
            case streamed(@Sendable (BodyRequest) -> StreamStart)
        }

        public init(prefix: String, maximumBody: Int, methods: [String], operatorOnly: Bool = false,
                    handle: @escaping @Sendable (BodyRequest) -> BodyReply) {
            self.prefix = prefix
            self.maximumBody = maximumBody
            self.methods = methods
            self.operatorOnly = operatorOnly
            taking = .whole(handle)
        }

        public init(prefix: String, maximumBody: Int, methods: [String], operatorOnly: Bool,
                    stream: @escaping @Sendable (BodyRequest) -> StreamStart) {
            (self.prefix, self.maximumBody, self.methods) = (prefix, maximumBody, methods)
            self.operatorOnly = operatorOnly
            taking = .streamed(stream)
        }

        func takes(_ url: String) -> Bool { url == prefix || url.hasPrefix(prefix + "/") }
    }

    /// A body being read, in libmicrohttpd's per-request pointer between calls.
    final class Upload {
        let route: BodyRoute
        var body: [UInt8] = []
        var tooLarge = false
        /// A streamed body's taker (nil once the body grew too large: dropped, it cleans up).
        var stream: BodyStream?
        var received = 0
        var writing = true
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
    func bodyRoute(_ url: String, method: String, header: (String) -> String?, connection: OpaquePointer) -> BodyHead? {
        guard let route = bodyRoutes.first(where: { $0.takes(url) }) else { return nil }
        guard route.methods.contains(method) else {
            return .refuse(Reply(status: 405, body: .bytes(Array("method not allowed\n".utf8)),
                                 headers: [("Allow", route.methods.joined(separator: ", "))]))
        }
        if let length = header("Content-Length"), Int(length).map({ $0 > route.maximumBody }) ?? true {
            return .refuse(Reply(status: 413, body: .bytes(Array("a body of at most \(route.maximumBody) bytes\n".utf8)),
                                 headers: [("Content-Type", "text/plain")]))
        }
        if route.operatorOnly, let refusal = operatorRefusal(url, method: method, connection: connection) { return .refuse(refusal) }
        let upload = Upload(route: route)
        if case .streamed(let start) = route.taking {
            switch start(request(route, url: url, method: method, body: [], connection: connection)) {
            case .take(let stream): upload.stream = stream
            case .refuse(let answer): return .refuse(Reply(status: answer.status, body: .bytes(answer.body), headers: answer.headers))
            }
        }
        return .take(upload)
    }

    /// A piece of the body: kept while it fits the route's bound.
    func receive(_ upload: Upload, data: UnsafePointer<CChar>?, size: Int) {
        guard let data, size > 0, !upload.tooLarge else { return }
        guard upload.received <= upload.route.maximumBody - size else {
            upload.tooLarge = true
            upload.body = []
            upload.stream = nil
            return
        }
        upload.received += size
        if let stream = upload.stream {
            if upload.writing { upload.writing = stream.write(UnsafeRawBufferPointer(start: data, count: size)) }
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
        let answer: BodyReply
        switch upload.route.taking {
        case .whole(let handle): answer = handle(request(upload.route, url: url, method: method, body: upload.body, connection: connection))
        case .streamed:
            // The taker is dropped only with a body too large, answered above.
            answer = upload.stream?.finish() ?? BodyReply(status: 500, body: Array("the body's taker is gone\n".utf8))
        }
        return Reply(status: answer.status, body: .bytes(answer.body), headers: answer.headers)
    }

    private func request(_ route: BodyRoute, url: String, method: String, body: [UInt8], connection: OpaquePointer) -> BodyRequest {
        let header = headerReader(connection)
        return BodyRequest(method: method, path: String(url.dropFirst(route.prefix.count)), contentType: header("Content-Type"),
                           body: body, client: clientAddress(connection), host: header("Host"), port: port, arguments: arguments(connection))
    }
}
