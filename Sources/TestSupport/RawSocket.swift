import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection to 127.0.0.1 from a chosen loopback address (127.0.0.2, …, so a test
/// can be several clients), for sending bytes exactly as written: partial heads, NULs,
/// one byte at a time.
public final class RawSocket {
    public let fd: Int32

    /// `bufferBytes` sets the socket's send and receive buffers before it connects (a
    /// client that takes little at a time).
    public init?(port: UInt16, from source: String = "127.0.0.1", timeoutMilliseconds: Int = 10_000, bufferBytes: Int32? = nil) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        if var size = bufferBytes {
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &local) { l in
            l.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0 && withUnsafePointer(to: &remote) { r in
            r.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        if !ok { close(fd); return nil }
    }

    deinit { close(fd) }

    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads until one whole response (head and Content-Length body) is in, the peer
    /// closes, or the receive timeout passes.
    public func response() -> [UInt8] {
        var reply = [UInt8](), buffer = [UInt8](repeating: 0, count: 65536)
        while reply.count < 1 << 22 {
            if let end = reply.firstRange(of: [13, 10, 13, 10]), reply.count >= end.upperBound + Self.contentLength(reply[..<end.lowerBound]) { break }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            reply += buffer[..<n]
        }
        return reply
    }

    /// Whether the server has closed (or reset) the connection: a read returns 0 or fails
    /// with something other than a timeout.
    public var isClosedByPeer: Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    static func contentLength(_ head: ArraySlice<UInt8>) -> Int {
        let text = String(decoding: head, as: UTF8.self).lowercased()
        guard let line = text.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }) else { return 0 }
        return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
}
