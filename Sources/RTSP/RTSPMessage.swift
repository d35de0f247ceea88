import Basics

/// RTSP 1.0 (RFC 2326) as a server reads it from a TCP connection: requests (a request
/// line, headers, an optional body of Content-Length bytes) and, between them, the
/// client's interleaved binary data (§10.12: `$`, a channel, a 16-bit length — RTCP
/// receiver reports over TCP). Everything is bounded, so a client that sends a huge head,
/// endless headers or a body it announces as gigabytes is refused rather than held.
public struct RTSPRequest: Sendable, Equatable {
    public var method: String
    public var uri: String
    /// Header fields in the order sent, names as sent.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    /// The first value of a header, by name in any case (RFC 2326 §4.2).
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    /// §12.17: every request carries CSeq, a non-negative integer the response repeats.
    public var cseq: Int? { header("CSeq").flatMap { value in Int(value.trimmingWhitespace()).flatMap { $0 >= 0 ? $0 : nil } } }

    public static func == (a: RTSPRequest, b: RTSPRequest) -> Bool {
        a.method == b.method && a.uri == b.uri && a.body == b.body
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

/// What a connection's bytes are, in order.
public enum RTSPMessage: Sendable, Equatable {
    case request(RTSPRequest)
    /// §10.12 interleaved data from the client.
    case interleaved(channel: UInt8, payload: [UInt8])
}

/// Why a connection's bytes are refused: the status to answer with (when there is a
/// request to answer) and one line.
public enum RTSPParseError: Error, Equatable, CustomStringConvertible {
    /// The request line and headers ran past `RTSPParser.headLimit` bytes.
    case headTooLarge
    case tooManyHeaders
    case requestLine(String)
    case version(String)
    case header(String)
    case contentLength(String)
    case bodyTooLarge(Int)

    /// RFC 2326 §7.1.1: 400, or 505 for a version, 413 for a body too large.
    public var status: Int {
        switch self {
        case .version: return 505
        case .bodyTooLarge, .headTooLarge: return 413
        default: return 400
        }
    }

    public var description: String {
        switch self {
        case .headTooLarge: return "a request head over \(RTSPParser.headLimit) bytes"
        case .tooManyHeaders: return "more than \(RTSPParser.headerLimit) header fields"
        case .requestLine(let line): return "not an RTSP request line: \(line.prefix(80))"
        case .version(let version): return "RTSP version \(version.prefix(20)) is not RTSP/1.0"
        case .header(let line): return "not a header field: \(line.prefix(80))"
        case .contentLength(let value): return "Content-Length \(value.prefix(20)) is not a byte count"
        case .bodyTooLarge(let length): return "a body of \(length) bytes; at most \(RTSPParser.bodyLimit)"
        }
    }
}

/// Reads a connection's bytes as they come: `feed` returns every whole message they
/// complete and keeps the rest. After an error the connection is to be answered (when
/// it can be) and closed: the parser does not resynchronise.
public struct RTSPParser: Sendable {
    /// A client's request head is a few hundred bytes; these bounds are far above any honest one.
    public static let headLimit = 8 << 10
    public static let headerLimit = 64
    public static let bodyLimit = 64 << 10

    private var buffer: [UInt8] = []

    public init() {}

    /// Bytes not yet a whole message.
    public var pending: Int { buffer.count }

    public mutating func feed(_ bytes: [UInt8]) throws -> [RTSPMessage] {
        buffer += bytes
        var messages: [RTSPMessage] = []
        var start = 0
        defer { buffer.removeFirst(start) }
        while start < buffer.count {
            if buffer[start] == UInt8(ascii: "$") {
                // §10.12: `$`, one byte of channel, two of length, then the data.
                guard buffer.count - start >= 4 else { break }
                let length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
                guard buffer.count - start >= 4 + length else { break }
                messages.append(.interleaved(channel: buffer[start + 1], payload: Array(buffer[(start + 4)..<(start + 4 + length)])))
                start += 4 + length
                continue
            }
            // Empty lines between requests are tolerated (a client's stray CRLF).
            if buffer[start] == 0x0D || buffer[start] == 0x0A {
                start += 1
                continue
            }
            guard let end = Self.headEnd(buffer, from: start) else {
                if buffer.count - start > Self.headLimit { throw RTSPParseError.headTooLarge }
                break
            }
            guard end.head - start <= Self.headLimit else { throw RTSPParseError.headTooLarge }
            var request = try Self.head(Array(buffer[start..<end.head]))
            let length = try request.header("Content-Length").map(Self.contentLength) ?? 0
            guard buffer.count - end.body >= length else { break }
            request.body = Array(buffer[end.body..<(end.body + length)])
            messages.append(.request(request))
            start = end.body + length
        }
        return messages
    }

    /// Where a head ends (its last header line) and its body begins: after CRLFCRLF, or
    /// LFLF from a lax client.
    static func headEnd(_ bytes: [UInt8], from start: Int) -> (head: Int, body: Int)? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == 0x0A {
                if bytes[index + 1] == 0x0A { return (index, index + 2) }
                if bytes[index + 1] == 0x0D, index + 2 < bytes.count, bytes[index + 2] == 0x0A { return (index, index + 3) }
            }
            index += 1
        }
        return nil
    }

    static func contentLength(_ value: String) throws -> Int {
        let text = value.trimmingWhitespace()
        guard !text.isEmpty, text.utf8.count <= 12, text.allSatisfy(\.isASCIIDigit), let length = Int(text) else {
            throw RTSPParseError.contentLength(value)
        }
        guard length <= bodyLimit else { throw RTSPParseError.bodyTooLarge(length) }
        return length
    }

    /// The request line (§6.1: `Method SP Request-URI SP RTSP-Version`) and the headers.
    static func head(_ bytes: [UInt8]) throws -> RTSPRequest {
        // The head runs up to the LF of its last line: a CR before it is the line's end.
        let text = String(decoding: bytes.last == 0x0D ? Array(bytes.dropLast()) : bytes, as: UTF8.self)
        // "\r\n" is one Character in Swift: lines end at it or at a lone LF.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map(String.init)
        let parts = lines[0].split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[0].allSatisfy({ $0.isASCIIToken }), !parts[1].isEmpty else { throw RTSPParseError.requestLine(lines[0]) }
        guard parts[2] == "RTSP/1.0" else { throw RTSPParseError.version(String(parts[2])) }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard headers.count < headerLimit else { throw RTSPParseError.tooManyHeaders }
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  line[..<colon].allSatisfy({ $0.isASCIIToken }) else { throw RTSPParseError.header(line) }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingWhitespace()))
        }
        return RTSPRequest(method: String(parts[0]), uri: String(parts[1]), headers: headers, body: [])
    }
}

/// A response (§7): the status line, CSeq first, the other headers, and a body with its
/// Content-Length.
public struct RTSPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func == (a: RTSPResponse, b: RTSPResponse) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }

    /// §7.1.1's reason phrases for the codes onair answers with.
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 413: return "Request Entity Too Large"
        case 453: return "Not Enough Bandwidth"
        case 454: return "Session Not Found"
        case 455: return "Method Not Valid in This State"
        case 459: return "Aggregate Operation Not Allowed"
        case 461: return "Unsupported Transport"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        case 505: return "RTSP Version Not Supported"
        default: return "Status \(status)"
        }
    }

    /// The bytes to send, CSeq repeated from the request (none when it had no valid one).
    public func serialized(cseq: Int?) -> [UInt8] {
        var text = "RTSP/1.0 \(status) \(Self.reason(status))\r\n"
        if let cseq { text += "CSeq: \(cseq)\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || status >= 400 { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }
}

extension Character {
    /// RFC 2616 §2.2 token characters (RTSP's methods and header names).
    var isASCIIToken: Bool {
        guard let ascii = asciiValue, ascii > 32, ascii < 127 else { return false }
        return !"()<>@,;:\\\"/[]?={}".contains(self)
    }

    var isASCIIDigit: Bool { asciiValue.map { (48...57).contains($0) } ?? false }
}
