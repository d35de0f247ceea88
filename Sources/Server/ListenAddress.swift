#if canImport(Glibc)
import Glibc
#endif

/// Where the web server listens: `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:8080` (every
/// interface, said as such). The address is numeric and never empty: `:8080` would bind
/// every interface while reading like loopback, so it is refused.
public struct ListenAddress: Sendable, CustomStringConvertible {
    public let host: String
    public let port: UInt16
    public let isIPv6: Bool

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
        var probe = in6_addr()
        guard inet_pton(bracketed ? AF_INET6 : AF_INET, host, &probe) == 1 else { throw bad }
        self.host = host
        self.port = port
        isIPv6 = bracketed
    }

    /// Every interface rather than one address.
    public var isWildcard: Bool { host == "0.0.0.0" || host == "::" }

    /// The URL a person opens for this address once bound to `port`: loopback for a
    /// wildcard bind.
    public func browserURL(port: UInt16) -> String {
        let shown = isWildcard ? (isIPv6 ? "[::1]" : "127.0.0.1") : (isIPv6 ? "[\(host)]" : host)
        return "http://\(shown):\(port)/"
    }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The socket address to bind.
    func fill(_ storage: inout sockaddr_storage) {
        withUnsafeMutablePointer(to: &storage) { pointer in
            if isIPv6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    a.pointee.sin6_family = sa_family_t(AF_INET6)
                    a.pointee.sin6_port = port.bigEndian
                    _ = inet_pton(AF_INET6, host, &a.pointee.sin6_addr)
                }
            } else {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                    a.pointee.sin_family = sa_family_t(AF_INET)
                    a.pointee.sin_port = port.bigEndian
                    _ = inet_pton(AF_INET, host, &a.pointee.sin_addr)
                }
            }
        }
    }
}
