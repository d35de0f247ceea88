import System

/// Where the web server listens: `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:8080` (every
/// interface, said as such). The address is numeric and never empty: `:8080` would bind
/// every interface while reading like loopback, so it is refused.
public struct ListenAddress: Sendable, CustomStringConvertible {
    public let host: String
    public let port: UInt16
    public let isIPv6: Bool
    /// The socket address to bind.
    let socketAddress: SocketAddress

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    public init(_ text: String) throws {
        let bad = Invalid(description: "listen address '\(text)': expected ADDR:PORT with a numeric address, e.g. 127.0.0.1:8080")
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { throw bad }
        var host = String(text[..<colon])
        let bracketed = host.hasPrefix("[") && host.hasSuffix("]")
        if bracketed { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, host.contains(":") == bracketed else { throw bad }
        guard let address = SocketAddress(numeric: host, port: port, ipv6: bracketed) else { throw bad }
        socketAddress = address
        self.host = host
        self.port = port
        isIPv6 = bracketed
    }

    /// Every interface rather than one address.
    public var isWildcard: Bool { host == "0.0.0.0" || host == "::" }
    /// Reachable from this machine only (127.0.0.0/8, ::1).
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    /// The URL a person opens for this address once bound to `port`: loopback for a
    /// wildcard bind.
    public func browserURL(port: UInt16) -> String {
        let shown = isWildcard ? (isIPv6 ? "[::1]" : "127.0.0.1") : (isIPv6 ? "[\(host)]" : host)
        return "http://\(shown):\(port)/"
    }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
