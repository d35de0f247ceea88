import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 client over a raw socket to 127.0.0.1. Tests use it instead of
/// URLSession because they must send paths exactly as written (`/../`, `%2e%2e`), which
/// URL types normalise away.
public struct HTTPResponse {
    public var status: Int
    public var headers: [String: String]   // lower-cased names
    public var body: [UInt8]
    public var text: String { String(decoding: body, as: UTF8.self) }
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

public enum HTTPClient {
    public struct Failure: Error, CustomStringConvertible { public var description: String }

    public static func request(port: UInt16, _ path: String, method: String = "GET",
                               headers: [String: String] = [:], body: [UInt8] = []) throws -> HTTPResponse {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect to port \(port): errno \(errno)") }
        // A Host of the caller's (a proxy passing on what S3 signed) replaces the default.
        let host = headers.contains { $0.key.lowercased() == "host" } ? "" : "Host: 127.0.0.1:\(port)\r\n"
        var request = "\(method) \(path) HTTP/1.1\r\n\(host)Connection: close\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "PUT" { request += "Content-Length: \(body.count)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8) + body
        guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw Failure(description: "send failed") }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            response += buffer[0..<n]
        }
        return try parse(response, method: method)
    }

    public static func parse(_ raw: [UInt8], method: String) throws -> HTTPResponse {
        guard let end = (0..<max(0, raw.count - 3)).first(where: { raw[$0] == 13 && raw[$0 + 1] == 10 && raw[$0 + 2] == 13 && raw[$0 + 3] == 10 }) else {
            throw Failure(description: "no header terminator in \(raw.count) bytes")
        }
        let head = String(decoding: raw[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(head[0])") }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        }
        var body = Array(raw[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunk(body) }
        return HTTPResponse(status: status, headers: headers, body: method == "HEAD" ? [] : body)
    }

    static func dechunk(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < data.count {
            guard let lineEnd = (i..<(data.count - 1)).first(where: { data[$0] == 13 && data[$0 + 1] == 10 }) else { break }
            let size = Int(String(decoding: data[i..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16) ?? 0
            if size == 0 { break }
            out += data[(lineEnd + 2)..<min(data.count, lineEnd + 2 + size)]
            i = lineEnd + 2 + size + 2
        }
        return out
    }
}
